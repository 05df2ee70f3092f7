"""`serve --read-only` over raw HTTP: every method but a read is a 403 permission_error on any
path, after the token; reads answer as usual; the OpenAPI document says so (issue 29, finding 5)."""

from __future__ import annotations

from typing import Any

import httpx
import jsonschema_rs
import pytest

from convrisk.local_backend.backend import LocalBackend
from convrisk.local_backend.sandbox.openapi import document

from .conftest import TLS, TOKEN, Served, ServeWith

WRITES = ("POST", "PUT", "PATCH", "DELETE", "PROPFIND")
PATHS = (
    "/v1/conversations",
    "/v1/conversations/conv_01J0000000000000000000000",
    "/v1/risk-profiles",
    "/v1/risk-profiles/rp_01J0000000000000000000000",
    "/v1",
    "/v1/nowhere",
    "/__sandbox/reset",
    "/__sandbox/restore",
    "/__sandbox/requests",
    "/__sandbox/faults",
    "/__sandbox/nowhere",
    "/openapi.json",
    "/V1/conversations",
)


@pytest.fixture
def read_only(serve_with: ServeWith) -> Served:
    """A read-only server over a database holding one conversation."""
    served = serve_with(read_only=True)
    with LocalBackend(served.db_path) as backend:
        backend.conversations.create({"contact_id": "ct_kept"})
    return served


def snapshot(served: Served) -> list[str]:
    """Every record of the server's database, as snapshot lines."""
    with LocalBackend(served.db_path) as backend:
        return backend.snapshot()


def client(served: Served, token: str | None = TOKEN) -> httpx.Client:
    """Raw HTTP to the server with this bearer token (None: no Authorization)."""
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    return httpx.Client(base_url=served.url, headers=headers, timeout=10.0, verify=TLS)


def test_every_write_to_any_path_is_a_403_permission_error_and_nothing_changes(
    read_only: Served,
) -> None:
    before = snapshot(read_only)
    schema = jsonschema_rs.validator_for(
        {**document()["components"]["schemas"]["Error"], "components": document()["components"]}
    )
    with client(read_only) as http:
        for method in WRITES:
            for path in PATHS:
                answer = http.request(method, path, json={"contact_id": "ct_new"})
                assert answer.status_code == 403, (method, path, answer.text)
                body: dict[str, Any] = answer.json()
                schema.validate(body)
                assert body["error"]["type"] == "permission_error"
                assert body["error"]["code"] == "forbidden"
                assert f"{method} {path} is refused" in body["error"]["message"]
    assert snapshot(read_only) == before


@pytest.mark.parametrize("token", [None, "wrong-token"])
def test_a_write_without_the_right_token_is_told_about_the_token_first(
    read_only: Served, token: str | None
) -> None:
    with client(read_only, token) as http:
        assert http.post("/v1/conversations", json={"contact_id": "c"}).status_code == 401
        assert http.post("/__sandbox/reset").status_code == 401


def test_reads_answer_as_usual(read_only: Served) -> None:
    with client(read_only) as http:
        listed = http.get("/v1/conversations")
        assert listed.status_code == 200
        assert [row["contact_id"] for row in listed.json()["data"]] == ["ct_kept"]
        (kept,) = listed.json()["data"]
        assert http.get(f"/v1/conversations/{kept['id']}").status_code == 200
        assert http.get("/__sandbox/snapshot").status_code == 200
        assert http.get("/__sandbox/requests").status_code == 200
        assert http.get("/__sandbox/faults").json() == {"data": []}
        assert http.get("/openapi.json").status_code == 200


def test_without_read_only_the_same_writes_go_through(serve_with: ServeWith) -> None:
    with client(serve_with()) as http:
        assert http.post("/v1/conversations", json={"contact_id": "c"}).status_code == 200
        assert http.post("/__sandbox/reset").status_code == 200


def test_the_document_lists_permission_error_and_a_403_on_every_write() -> None:
    doc = document()
    types = doc["components"]["schemas"]["Error"]["properties"]["error"]["properties"]["type"]
    assert "permission_error" in types["enum"]
    for path, item in doc["paths"].items():
        for method, operation in item.items():
            if method in ("post", "put", "patch", "delete"):
                assert "403" in operation["responses"], (method, path)
            elif method == "get":
                assert "403" not in operation["responses"], (method, path)
