"""The sandbox's request journal and admin routes (`/__sandbox/`), over raw HTTP on loopback."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any

import httpx
import jsonschema_rs
import pytest

from convrisk.local_backend.faults import FAULTS, Chaos
from convrisk.local_backend.openapi import document
from convrisk.local_backend.request_journal import BODY_CUT

from .conftest import TLS, TOKEN, Served, ServeWith

CONV = "/v1/conversations"
REQUESTS = "/__sandbox/requests"
RESET = "/__sandbox/reset"
ISO_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


@pytest.fixture
def own(serve_with: ServeWith) -> Served:
    """A server of this test's own (its journal starts empty), over a fresh database."""
    return serve_with()


@pytest.fixture
def http(own: Served) -> Iterator[httpx.Client]:
    """A client with the right token."""
    with httpx.Client(
        base_url=own.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10.0, verify=TLS
    ) as client:
        yield client


def journal(http: httpx.Client, **filters: str) -> dict[str, Any]:
    """The journal as the admin route lists it (200 expected)."""
    response = http.get(REQUESTS, params=filters)
    assert response.status_code == 200, response.text
    return dict(response.json())


def conforms(name: str, instance: Any) -> bool:
    """Whether `instance` fits the OpenAPI document's schema `name`."""
    doc = document()
    schema = {"$ref": f"#/components/schemas/{name}", "components": doc["components"]}
    return bool(jsonschema_rs.validator_for(schema).is_valid(instance))


def test_every_admin_route_wants_the_token(own: Served) -> None:
    with httpx.Client(base_url=own.url, timeout=10.0, verify=TLS) as anon:
        for method, path in (("GET", REQUESTS), ("DELETE", REQUESTS), ("POST", RESET)):
            for headers in ({}, {"Authorization": "Bearer wrong"}):
                response = anon.request(method, path, headers=headers)
                assert response.status_code == 401, (method, path)
                assert response.json()["error"]["type"] == "authentication_error"
                assert response.headers["www-authenticate"].startswith("Bearer")


def test_each_api_request_is_recorded_with_what_it_sent_and_got(http: httpx.Client) -> None:
    created = http.post(CONV, json={"contact_id": "ct_1"}, headers={"Idempotency-Key": "k-1"})
    http.get(CONV, params={"limit": "5", "muted": "true"})
    malformed = http.get(f"{CONV}/conv_nope")
    got = journal(http)
    assert got["total"] == 3
    assert got["dropped"] == 0
    assert conforms("SandboxRequests", got)
    post, listing, missing = got["data"]
    assert [e["seq"] for e in got["data"]] == sorted(e["seq"] for e in got["data"])
    assert post["method"] == "POST"
    assert post["path"] == CONV
    assert post["status"] == created.status_code == 200
    assert post["idempotency_key"] == "k-1"
    assert post["body"] == '{"contact_id":"ct_1"}'
    assert post["body_truncated"] is False
    assert post["fault"] is None
    assert ISO_MS.match(post["time"])
    assert post["duration_ms"] >= 0
    assert listing["query"] == "limit=5&muted=true"
    assert listing["body"] is None
    assert missing["status"] == malformed.status_code == 400


def test_admin_requests_are_not_recorded(http: httpx.Client) -> None:
    http.get(CONV)
    journal(http)
    http.get(REQUESTS, params={"colour": "red"})
    assert journal(http)["total"] == 1


def test_filters_pick_by_method_path_glob_and_status(http: httpx.Client) -> None:
    conv = http.post(CONV, json={"contact_id": "ct_1"}).json()
    http.get(f"{CONV}/{conv['id']}")
    http.get(f"{CONV}/conv_nope")
    http.get("/v1/risk-profiles")
    assert [e["path"] for e in journal(http, method="post")["data"]] == [CONV]
    gets = journal(http, path="/v1/conversations/*")["data"]
    assert [e["path"] for e in gets] == [f"{CONV}/{conv['id']}", f"{CONV}/conv_nope"]
    assert [e["status"] for e in journal(http, path="/v1/*", status="400")["data"]] == [400]
    assert journal(http, method="GET", path="/v1/risk-*")["total"] == 1
    assert journal(http, path="/nowhere")["total"] == 0


@pytest.mark.parametrize(
    "query",
    ["status=abc", "status=99", "status=600", "colour=red", "method=", "path=", "path=a&path=b"],
)
def test_a_filter_that_does_not_parse_is_a_400_naming_it(http: httpx.Client, query: str) -> None:
    response = http.get(f"{REQUESTS}?{query}")
    assert response.status_code == 400
    assert response.json()["error"]["param"] == query.split("=")[0]


def test_the_token_never_appears_in_the_journal(http: httpx.Client) -> None:
    http.post(CONV, json={"contact_id": TOKEN}, headers={"Idempotency-Key": TOKEN})
    http.post(CONV, json={"contact_id": "x" * (BODY_CUT - 20) + TOKEN})
    http.get(CONV, params={"starting_after": TOKEN})
    http.get(f"/v1/{TOKEN}")
    http.post(
        CONV,
        content=b'{"contact_id": "\\u'
        + f"{ord(TOKEN[0]):04x}".encode()
        + TOKEN[1:].encode()
        + b'"}',
        headers={"content-type": "application/json"},
    )
    response = http.get(REQUESTS)
    assert response.json()["total"] == 5
    assert TOKEN not in response.text
    assert TOKEN[1:] not in response.text
    assert "***" in response.json()["data"][0]["body"]


def test_a_long_body_is_cut_and_bad_utf8_is_replaced(http: httpx.Client) -> None:
    long = ('{"contact_id": "' + "é" * BODY_CUT + '"}').encode()
    http.post(CONV, content=long, headers={"content-type": "application/json"})
    http.post(
        CONV, content=b'{"contact_id": "\xff\xfe"}', headers={"content-type": "application/json"}
    )
    first, second = journal(http)["data"]
    assert first["body_truncated"] is True
    assert len(first["body"].encode()) <= BODY_CUT
    assert first["body"].startswith('{"contact_id": "éé')
    assert second["body"] == '{"contact_id": "\ufffd\ufffd"}'
    assert second["body_truncated"] is False


def test_clearing_forgets_the_requests_and_says_how_many(http: httpx.Client) -> None:
    http.get(CONV)
    http.get(CONV)
    response = http.delete(REQUESTS)
    assert response.status_code == 200
    assert response.json() == {"cleared": 2}
    assert conforms("SandboxCleared", response.json())
    assert journal(http) == {"data": [], "dropped": 0, "total": 0}


def test_reset_empties_the_store_the_keys_and_the_journal(http: httpx.Client) -> None:
    http.post(CONV, json={"contact_id": "ct_1"}, headers={"Idempotency-Key": "same"})
    http.post("/v1/risk-profiles", json={"customer_id": "c", "profile_type": "t", "score": 1})
    response = http.post(RESET)
    assert response.status_code == 200
    assert response.json() == {"reset": True}
    assert journal(http)["total"] == 0
    assert http.get(CONV).json()["data"] == []
    assert http.get("/v1/risk-profiles").json()["data"] == []
    # The key is forgotten too: another body under it is a new create, not a 400.
    again = http.post(CONV, json={"group_id": "g_1"}, headers={"Idempotency-Key": "same"})
    assert again.status_code == 200
    assert again.json()["group_id"] == "g_1"


def test_a_method_an_admin_route_lacks_is_405_with_allow(http: httpx.Client) -> None:
    response = http.put(RESET)
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    assert http.get("/__sandbox/nothing").status_code == 404


def test_injected_faults_are_recorded_and_a_drop_has_no_status(serve_with: ServeWith) -> None:
    served = serve_with(chaos=Chaos(fault_rate=1.0, seed=5))
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=served.url, headers=headers, timeout=10.0, verify=TLS) as http:
        for _ in range(20):
            with contextlib.suppress(httpx.TransportError):
                http.post(CONV, json={"contact_id": "ct_1"})
        entries = journal(http)["data"]
    assert len(entries) == 20
    assert {e["fault"] for e in entries} <= set(FAULTS)
    assert all(e["fault"] for e in entries)
    for entry in entries:
        assert (entry["status"] is None) == (entry["fault"] == "drop"), entry
    assert any(e["fault"] == "drop" for e in entries)


def test_the_admin_routes_are_in_the_document_under_their_own_tag() -> None:
    paths = document()["paths"]
    admin = {path: item for path, item in paths.items() if path.startswith("/__sandbox/")}
    assert set(admin) == {REQUESTS, RESET}
    for item in admin.values():
        for operation in item.values():
            assert operation["tags"] == ["sandbox"]
            assert "401" in operation["responses"]
