"""`Wire.handle`: the same HTTP layer as `serve`, called in-process without a socket."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from convrisk.local_backend.backend import LocalBackend
from convrisk.local_backend.sandbox.wire import Wire

from .conftest import TOKEN

JSON = [("content-type", "application/json")]


@pytest.fixture
def wire(tmp_path: Path) -> Iterator[Wire]:
    """The wire over a fresh database, without authentication (as an in-process caller)."""
    with LocalBackend(tmp_path / "in-process.db") as backend:
        yield Wire(backend, token=None)


def test_an_in_process_call_needs_no_token_and_answers_like_the_server(wire: Wire) -> None:
    created = wire.handle("POST", "/v1/conversations", "", JSON, b'{"contact_id": "ct_1"}')
    assert created.status == 200
    conv = created.json()
    listed = wire.handle("GET", "/v1/conversations", "limit=1", [])
    assert listed.json() == {"has_more": False, "data": [conv]}
    assert wire.handle("GET", f"/v1/conversations/{conv['id']}", "", []).json() == conv


def test_in_process_errors_have_the_wire_shape_and_status(wire: Wire) -> None:
    missing = wire.handle("GET", "/v1/conversations/conv_" + "0" * 26, "", [])
    assert (missing.status, missing.json()["error"]["type"]) == (404, "not_found_error")
    malformed = wire.handle("GET", "/v1/conversations/conv_nope", "", [])
    assert (malformed.status, malformed.json()["error"]["param"]) == (400, "id")
    bad = wire.handle("GET", "/v1/conversations", "limit=0", [])
    assert (bad.status, bad.json()["error"]["param"]) == (400, "limit")
    method = wire.handle("PATCH", "/v1/conversations", "", [])
    assert method.status == 405 and ("allow", "GET, POST") in method.headers
    assert wire.handle("POST", "/v1/conversations", "", JSON, b"[]").status == 400


def test_the_same_request_gets_the_same_answer_in_process_and_over_http(
    wire: Wire, http: httpx.Client
) -> None:
    body = {"customer_id": "c", "profile_type": "moderate", "score": "high", "details": {}}
    local = wire.handle("POST", "/v1/risk-profiles", "", JSON, json.dumps(body).encode())
    remote = http.post("/v1/risk-profiles", json=body)
    assert (local.status, local.json()) == (remote.status_code, remote.json())


def test_with_a_token_the_in_process_wire_checks_it(tmp_path: Path) -> None:
    with LocalBackend(tmp_path / "t.db") as backend:
        wire = Wire(backend, token=TOKEN)
        assert wire.handle("GET", "/v1/conversations", "", []).status == 401
        auth = [("authorization", f"Bearer {TOKEN}")]
        assert wire.handle("GET", "/v1/conversations", "", auth).status == 200
