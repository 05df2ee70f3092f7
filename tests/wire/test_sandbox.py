"""The sandbox's request journal and admin routes (`/__sandbox/`), over raw HTTP on loopback."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import jsonschema_rs
import pytest

from convrisk.api_client import sandbox as sandbox_api
from convrisk.local_backend.sandbox.openapi import document
from convrisk.local_backend.sandbox.request_journal import BODY_CUT
from convrisk.local_backend.serve.faults import FAULTS, Chaos

from .conftest import TLS, TOKEN, Served, ServeWith

# Slow (0.2 s each: a server of its own per test, for an empty journal): out of the quick loop.
pytestmark = pytest.mark.e2e

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
    # The body as bytes: httpx's own JSON encoding differs between versions (spaces before 0.28).
    created = http.post(
        CONV,
        content=b'{"contact_id":"ct_1"}',
        headers={"Idempotency-Key": "k-1", "Content-Type": "application/json"},
    )
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
    [
        "status=abc",
        "status=99",
        "status=600",
        "colour=red",
        "method=",
        "path=",
        "path=a&path=b",
        "path=/v1/%5B",
        "path=/v1/%5B%5D%5D",
        "path=/v1/a%20b",
        "path=/v1/%C3%A9",
    ],
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
    assert set(admin) == {
        REQUESTS,
        RESET,
        "/__sandbox/snapshot",
        "/__sandbox/restore",
        "/__sandbox/faults",
    }
    for item in admin.values():
        for operation in item.values():
            assert operation["tags"] == ["sandbox"]
            assert "401" in operation["responses"]


# -- snapshot and restore -------------------------------------------------------------------------

SNAPSHOT = "/__sandbox/snapshot"
RESTORE = "/__sandbox/restore"
NDJSON = {"content-type": "application/x-ndjson"}


def fill(http: httpx.Client) -> None:
    """Records of both kinds, with every kind of value: unicode, nulls, objects, floats."""
    first = http.post(CONV, json={"contact_id": "ct_é\u2028"}).json()
    http.put(f"{CONV}/{first['id']}", json={"is_muted": True, "archived_at": 1_700_000_000})
    http.post(CONV, json={"group_id": "g_1"})
    body = {"customer_id": "c", "profile_type": "moderate", "score": 0.1, "details": {"a": [1]}}
    http.post("/v1/risk-profiles", json=body)


def snapshot_of(http: httpx.Client) -> bytes:
    """The snapshot the server gives (200 expected)."""
    response = http.get(SNAPSHOT)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/x-ndjson"
    return response.content


def test_a_snapshot_is_each_record_as_jsonl_with_its_resource(http: httpx.Client) -> None:
    fill(http)
    # Split on newlines only: a record may hold U+2028, which splitlines() would split on.
    lines = snapshot_of(http).decode().removesuffix("\n").split("\n")
    records = [json.loads(line) for line in lines]
    assert [r["resource"] for r in records] == ["conversations"] * 2 + ["risk_profiles"]
    assert all(line.startswith('{"resource":') for line in lines)
    convs = http.get(CONV).json()["data"]
    assert [r["id"] for r in records[:2]] == [c["id"] for c in reversed(convs)]
    assert {k: v for k, v in records[0].items() if k != "resource"} == convs[-1]


def test_snapshot_reset_restore_gives_back_the_same_bytes(http: httpx.Client) -> None:
    fill(http)
    taken = snapshot_of(http)
    assert http.post(RESET).status_code == 200
    assert snapshot_of(http) == b""
    response = http.post(RESTORE, content=taken, headers=NDJSON)
    assert response.status_code == 200, response.text
    assert response.json() == {"restored": {"conversations": 2, "risk_profiles": 1}}
    assert conforms("SandboxRestored", response.json())
    assert snapshot_of(http) == taken
    # Ids go on above the restored ones.
    newest = http.post(CONV, json={"contact_id": "ct_2"}).json()["id"]
    assert newest > max(json.loads(line)["id"] for line in taken.decode().split("\n")[:2])


def bad_snapshots(good: bytes) -> dict[str, tuple[bytes, int, str]]:
    """Broken variants of `good`: the body, the status and what the error says."""
    lines = good.split(b"\n")
    record = json.loads(lines[0])
    wrong = dict(record, is_muted="yes")
    extra = dict(record, colour="red")
    other = dict(record, resource="risk_profiles")
    last = dict(record, id="conv_" + "Z" * 26)
    return {
        "not json": (lines[0] + b"\n{nope\n", 400, "line 2: not valid JSON"),
        "wrong type": (json.dumps(wrong).encode(), 400, "line 1: is_muted"),
        "unknown field": (json.dumps(extra).encode(), 400, "line 1: not a conversation"),
        "other resource": (json.dumps(other).encode(), 400, "line 1: not a risk profile"),
        "not utf-8": (lines[0] + b"\n" + lines[1][:-2] + b'\xff"}', 400, "line 2: not UTF-8"),
        "duplicate": (lines[0] + b"\n" + lines[0], 400, "line 2: id"),
        "not an object": (lines[0] + b"\n5", 400, "line 2: not a JSON object"),
        "array": (b"[1, 2]", 400, "line 1: not a JSON object"),
        # Not even hashable: once a 500.
        "id a list": (json.dumps(dict(record, id=[1])).encode(), 400, "line 1: id"),
        "no resource": (json.dumps({"id": record["id"]}).encode(), 400, 'line 1: "resource"'),
        # The largest id of its form: no id could be made after it.
        "id past the last time": (json.dumps(last).encode(), 400, "line 1: id conv_ZZZ"),
    }


@pytest.mark.parametrize(
    "case",
    [
        "not json",
        "wrong type",
        "unknown field",
        "other resource",
        "not utf-8",
        "duplicate",
        "not an object",
        "array",
        "id a list",
        "no resource",
        "id past the last time",
    ],
)
def test_a_bad_snapshot_is_refused_naming_the_line_and_nothing_changes(
    http: httpx.Client, case: str
) -> None:
    fill(http)
    before = snapshot_of(http)
    body, status, says = bad_snapshots(before)[case]
    response = http.post(RESTORE, content=body, headers=NDJSON)
    assert response.status_code == status
    assert says in response.json()["error"]["message"]
    assert snapshot_of(http) == before


def by_id(snapshot: bytes) -> dict[str, dict[str, Any]]:
    """The records of a JSON-lines snapshot in the JSON object form: each resource's by id."""
    out: dict[str, dict[str, Any]] = {}
    for line in snapshot.decode().split("\n"):
        if line:
            record = json.loads(line)
            resource, object_id = record.pop("resource"), record.pop("id")
            out.setdefault(resource, {})[object_id] = record
    return out


def test_a_snapshot_as_a_json_object_by_id_restores_the_same_records(http: httpx.Client) -> None:
    fill(http)
    taken = snapshot_of(http)
    assert http.post(RESET).status_code == 200
    # Risk profiles first, the conversations newest first: each record goes to its table.
    records = by_id(taken)
    body = {
        "risk_profiles": records["risk_profiles"],
        "conversations": dict(reversed(records["conversations"].items())),
    }
    assert conforms("Snapshot", body)
    response = http.post(RESTORE, json=body)
    assert response.status_code == 200, response.text
    assert response.json() == {"restored": {"conversations": 2, "risk_profiles": 1}}
    assert snapshot_of(http) == taken


def test_an_empty_json_object_or_no_body_restores_an_empty_store(http: httpx.Client) -> None:
    for body in (b"{}", b""):
        fill(http)
        response = http.post(RESTORE, content=body, headers={"content-type": "application/json"})
        assert response.status_code == 200, response.text
        assert response.json() == {"restored": {"conversations": 0, "risk_profiles": 0}}
        assert snapshot_of(http) == b""


def test_a_whole_time_written_with_a_fraction_restores_as_whole_seconds(
    http: httpx.Client,
) -> None:
    fill(http)
    records = by_id(snapshot_of(http))
    first = next(iter(records["conversations"].values()))
    first["created_at"] = 1_700_000_000.0
    assert conforms("Snapshot", records)
    response = http.post(RESTORE, json=records)
    assert response.status_code == 200, response.text
    assert json.loads(snapshot_of(http).split(b"\n")[0])["created_at"] == 1_700_000_000


def bad_objects(records: dict[str, dict[str, Any]]) -> dict[str, tuple[bytes, str]]:
    """Broken JSON-object snapshots made from good `records`: the body and what the error
    says (the record named by its id)."""
    (one, first), (two, second) = records["conversations"].items()
    convs = records["conversations"]

    def body(conversations: dict[str, Any]) -> bytes:
        return json.dumps({"conversations": conversations}).encode()

    # A key given twice can only be written as text (a dict holds it once).
    repeated = body({one: first}).replace(b"}}", b"}, " + json.dumps(one).encode() + b": {}}")
    return {
        "unknown field": (body({**convs, two: dict(second, colour="red")}), f"record {two}: "),
        "not an object": (body({**convs, two: "x"}), f"record {two}: not a JSON object"),
        "id inside": (body({one: dict(first, id=one)}), f"record {one}: not a conversation"),
        "id of the other kind": (body({"rp_" + one[5:]: first}), "is not a conversation id"),
        "id given twice": (repeated, f"the key {one} is in one object twice"),
        "fraction of a second": (body({one: dict(first, created_at=1.5)}), "created_at"),
        "both contact and group": (body({one: dict(first, group_id="g")}), f"record {one}: "),
        "not by id": (json.dumps({"conversations": [first]}).encode(), "by their id"),
        "blank": (b" \n\x1f", "blank"),
    }


@pytest.mark.parametrize(
    "case",
    [
        "unknown field",
        "not an object",
        "id inside",
        "id of the other kind",
        "id given twice",
        "fraction of a second",
        "both contact and group",
        "not by id",
        "blank",
    ],
)
def test_a_bad_json_object_snapshot_is_refused_naming_the_record_and_nothing_changes(
    http: httpx.Client, case: str
) -> None:
    fill(http)
    before = snapshot_of(http)
    body, says = bad_objects(by_id(before))[case]
    response = http.post(RESTORE, content=body, headers={"content-type": "application/json"})
    assert response.status_code == 400, response.text
    assert says in response.json()["error"]["message"]
    assert snapshot_of(http) == before


def test_lines_sent_as_json_are_still_a_snapshot_and_blank_lines_as_ndjson_an_empty_one(
    http: httpx.Client,
) -> None:
    # `convrisk sandbox restore` sends its file with Content-Type: application/json.
    fill(http)
    taken = snapshot_of(http)
    response = http.post(RESTORE, content=taken, headers={"content-type": "application/json"})
    assert response.status_code == 200, response.text
    assert snapshot_of(http) == taken
    response = http.post(RESTORE, content=b"\n \n", headers=NDJSON)
    assert response.status_code == 200, response.text
    assert snapshot_of(http) == b""


def test_a_snapshot_over_the_cap_is_413_and_nothing_changes(
    http: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sandbox_api, "MAX_SNAPSHOT_BYTES", 4096)
    fill(http)
    before = snapshot_of(http)
    response = http.post(RESTORE, content=before + b"\n" * 5000, headers=NDJSON)
    assert response.status_code == 413
    assert "too large" in response.json()["error"]["message"]
    assert snapshot_of(http) == before


def test_an_empty_snapshot_empties_the_store(http: httpx.Client) -> None:
    fill(http)
    response = http.post(RESTORE, content=b"", headers=NDJSON)
    assert response.json() == {"restored": {"conversations": 0, "risk_profiles": 0}}
    assert snapshot_of(http) == b""
