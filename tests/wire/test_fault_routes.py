"""The aimed fault rules of `/__sandbox/faults` on a real serve on loopback, over raw HTTP: each
thing a rule does to the request it fires on, the journal naming it, reset, and the document."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from typing import Any

import httpx
import jsonschema_rs
import pytest

from convrisk.api_client.params import MAX_BODY_BYTES
from convrisk.local_backend.sandbox.fault_rules import MAX_RULE_BYTES
from convrisk.local_backend.sandbox.openapi import document
from convrisk.local_backend.serve.faults import Chaos
from convrisk.local_backend.serve.proxy import Proxy

from .conftest import TLS, TOKEN, Served, ServeWith

CONV = "/v1/conversations"
FAULTS = "/__sandbox/faults"
REQUESTS = "/__sandbox/requests"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def client(served: Served) -> httpx.Client:
    return httpx.Client(base_url=served.url, headers=AUTH, timeout=10.0, verify=TLS)


def add(http: httpx.Client, **rule: Any) -> dict[str, Any]:
    """Add a rule (201 expected); the rule the route answered with."""
    response = http.post(FAULTS, json=rule)
    assert response.status_code == 201, response.text
    return dict(response.json())


def send(served: Served, method: str, path: str, **kwargs: Any) -> httpx.Response | None:
    """One request on a new connection; None when the server dropped it."""
    with client(served) as http:
        try:
            return http.request(method, path, **kwargs)
        except (httpx.RemoteProtocolError, httpx.ReadError):
            return None


def journal(http: httpx.Client) -> list[dict[str, Any]]:
    response = http.get(REQUESTS)
    assert response.status_code == 200
    return list(response.json()["data"])


def contacts(served: Served) -> list[str]:
    """The contact ids stored, oldest first."""
    with sqlite3.connect(served.db_path) as db:
        rows = db.execute("SELECT contact_id FROM conversations ORDER BY id").fetchall()
    return [row[0] for row in rows]


def conforms(name: str, instance: Any) -> bool:
    """Whether `instance` fits the OpenAPI document's schema `name`."""
    schema = {"$ref": f"#/components/schemas/{name}", "components": document()["components"]}
    return bool(jsonschema_rs.validator_for(schema).is_valid(instance))


@pytest.fixture
def http(served: Served) -> Iterator[httpx.Client]:
    with client(served) as http:
        yield http


def test_the_next_create_answers_503_once_with_retry_after_then_succeeds(
    served: Served, http: httpx.Client
) -> None:
    rule = add(http, method="POST", path=CONV, status=503, retry_after=2)
    refused = http.post(CONV, json={"contact_id": "c_1"})
    assert refused.status_code == 503
    assert refused.headers["retry-after"] == "2"
    error = refused.json()["error"]
    assert error["type"] == "api_error"
    assert error["message"].startswith(f"Injected fault (sandbox fault rule {rule['id']}): 503")
    assert contacts(served) == []
    created = http.post(CONV, json={"contact_id": "c_1"})
    assert created.status_code == 200 and "retry-after" not in created.headers
    assert contacts(served) == ["c_1"]
    entries = journal(http)
    assert [(e["status"], e["fault"], e["fault_rule"]) for e in entries] == [
        (503, "503", rule["id"]),
        (200, None, None),
    ]
    assert all(conforms("SandboxRequest", entry) for entry in entries)
    (listed,) = http.get(FAULTS).json()["data"]
    assert (listed["seen"], listed["fired"]) == (1, 1)


def test_the_journal_keeps_the_body_of_a_request_a_fault_answered(
    serve_with: ServeWith,
) -> None:
    served = serve_with(chaos=Chaos(fault_rate=1.0, seed=7))
    with client(served) as http:
        add(http, method="POST", path=CONV, drop=True)
        add(http, method="POST", path=CONV, status=503)
    for contact in ("c_dropped", "c_aimed", "c_random"):
        with client(served) as http:
            try:
                answered = http.post(CONV, json={"contact_id": contact})
            except (httpx.RemoteProtocolError, httpx.ReadError):
                continue  # the seeded fault was a dropped connection: no answer, no body
            assert answered.status_code >= 400, answered.text
    with client(served) as http:
        entries = journal(http)
    assert [entry["fault_rule"] for entry in entries[:2]] == [1, 2]
    assert json.loads(entries[0]["body"]) == {"contact_id": "c_dropped"}
    assert json.loads(entries[1]["body"]) == {"contact_id": "c_aimed"}
    (random,) = entries[2:]
    assert random["fault"] in ("500", "503", "429")  # what seed 7 draws for this request
    assert json.loads(random["body"]) == {"contact_id": "c_random"}
    assert contacts(served) == []


def test_after_2_lets_two_through_then_fires(served: Served, http: httpx.Client) -> None:
    add(http, method="post", path=CONV, status=500, after=2)
    statuses = [http.post(CONV, json={"contact_id": f"c_{n}"}).status_code for n in range(4)]
    assert statuses == [200, 200, 500, 200]
    assert contacts(served) == ["c_0", "c_1", "c_3"]


def test_drop_closes_before_the_operation_and_drop_after_after_it(
    served: Served, http: httpx.Client
) -> None:
    add(http, method="POST", path=CONV, drop=True)
    assert send(served, "POST", CONV, json={"contact_id": "lost"}) is None
    assert contacts(served) == []
    add(http, method="POST", path=CONV, drop_after=True)
    assert send(served, "POST", CONV, json={"contact_id": "kept"}) is None
    assert contacts(served) == ["kept"]
    entries = journal(http)
    assert [(e["status"], e["fault"], e["fault_rule"]) for e in entries] == [
        (None, "drop", 1),
        (200, "drop-after", 2),
    ]


def test_a_status_under_400_does_the_operation_and_sends_its_answer_with_that_status(
    served: Served, http: httpx.Client
) -> None:
    add(http, method="POST", path=CONV, status=202)
    accepted = http.post(CONV, json={"contact_id": "c_1"})
    assert accepted.status_code == 202
    assert accepted.json()["contact_id"] == "c_1"
    add(http, method="POST", path=CONV, status=204)
    empty = http.post(CONV, json={"contact_id": "c_2"})
    assert empty.status_code == 204 and empty.content == b""
    assert contacts(served) == ["c_1", "c_2"]


def test_body_jq_reshapes_the_answer_or_the_error(http: httpx.Client) -> None:
    http.post(CONV, json={"contact_id": "c_1"})
    add(http, method="GET", path=CONV, body_jq="{count: (.data | length)}")
    reshaped = http.get(CONV)
    assert (reshaped.status_code, reshaped.json()) == (200, {"count": 1})
    assert reshaped.headers["content-type"] == "application/json"
    add(http, method="GET", path=CONV, status=429, retry_after=1, body_jq='.error.code = "slow"')
    limited = http.get(CONV)
    assert limited.status_code == 429 and limited.headers["retry-after"] == "1"
    assert limited.json()["error"]["code"] == "slow"
    assert http.get(CONV).json()["data"][0]["contact_id"] == "c_1"


@pytest.mark.parametrize(("program", "says"), [('error("boom")', "boom"), ("empty", "no output")])
def test_a_jq_program_that_fails_as_it_runs_is_a_500_naming_the_rule(
    http: httpx.Client, program: str, says: str
) -> None:
    rule = add(http, method="GET", path=CONV, body_jq=program)
    failed = http.get(CONV)
    assert failed.status_code == 500
    message = failed.json()["error"]["message"]
    assert f"sandbox fault rule {rule['id']}" in message and says in message
    assert http.get(CONV).status_code == 200


def test_a_delay_only_rule_waits_then_answers_as_usual(http: httpx.Client) -> None:
    add(http, method="GET", path=CONV, delay_ms=150)
    started = time.monotonic()
    response = http.get(CONV)
    assert response.status_code == 200 and time.monotonic() - started >= 0.15
    (entry,) = journal(http)
    assert (entry["fault"], entry["fault_rule"], entry["duration_ms"] >= 150) == ("delay", 1, True)


def test_admin_routes_and_the_document_are_never_offered_to_the_rules(
    http: httpx.Client,
) -> None:
    add(http, method="*", path="*", status=500, times=100)
    assert http.get("/openapi.json").status_code == 200
    assert http.get(REQUESTS).status_code == 200
    assert http.get(FAULTS).json()["data"][0]["seen"] == 0
    assert http.get(CONV).status_code == 500
    assert http.get("/v1/nowhere").status_code == 500  # any API path, even one that is a 404
    assert http.get(FAULTS).json()["data"][0]["fired"] == 2


def test_the_glob_is_on_the_path_without_its_query(http: httpx.Client) -> None:
    add(http, method="GET", path=CONV, status=500, times=5)
    assert http.get(CONV, params={"limit": "1"}).status_code == 500
    assert http.get(f"{CONV}/conv_1").status_code == 400  # another path: not matched


def test_a_rule_that_never_matches_is_listed_with_0_fired(http: httpx.Client) -> None:
    add(http, method="DELETE", path="/v1/risk-profiles/*", status=500)
    http.get(CONV)
    listing = http.get(FAULTS)
    assert listing.status_code == 200 and conforms("SandboxFaultRules", listing.json())
    (rule,) = listing.json()["data"]
    assert (rule["seen"], rule["fired"]) == (0, 0)


def test_delete_clears_only_the_rules_and_ids_go_on(http: httpx.Client) -> None:
    add(http, method="*", path="/v1/*", status=500)
    add(http, method="*", path="/v1/*", status=503)
    http.get(CONV)
    cleared = http.delete(FAULTS)
    assert (cleared.status_code, cleared.json()) == (200, {"cleared": 2})
    assert http.get(FAULTS).json() == {"data": []}
    assert http.get(CONV).status_code == 200
    assert [e["fault_rule"] for e in journal(http)] == [1, None]  # the journal is kept
    assert add(http, method="*", path="/v1/*", status=500)["id"] == 3


def test_reset_clears_the_rules_and_rewinds_the_seeded_faults(serve_with: ServeWith) -> None:
    served = serve_with(chaos=Chaos(fault_rate=0.5, seed=7))

    def faults_of(count: int) -> list[str | None]:
        for _ in range(count):
            send(served, "GET", CONV)
        with client(served) as http:
            return [entry["fault"] for entry in journal(http)]

    with client(served) as http:
        add(http, method="GET", path="/v1/nothing", status=500)
    first = faults_of(16)
    assert any(first) and None in first  # the seed gives both, so the comparison means something
    with client(served) as http:
        assert http.post("/__sandbox/reset").status_code == 200
        assert http.get(FAULTS).json() == {"data": []}
        assert add(http, method="GET", path="/v1/nothing", status=500)["id"] == 1
    assert faults_of(16) == first


def test_a_rule_firing_does_not_shift_the_seeded_faults_of_the_requests_after(
    serve_with: ServeWith,
) -> None:
    plain, aimed = (
        serve_with(chaos=Chaos(fault_rate=0.5, seed=3)),
        serve_with(chaos=Chaos(fault_rate=0.5, seed=3)),
    )
    with client(aimed) as http:
        add(http, method="GET", path=CONV, status=418, after=4)
    runs = []
    for served in (plain, aimed):
        for _ in range(12):
            send(served, "GET", CONV)
        with client(served) as http:
            runs.append([entry["fault"] for entry in journal(http)])
    assert runs[1][4] == "418"
    assert runs[1][:4] + runs[1][5:] == runs[0][:4] + runs[0][5:]


@pytest.mark.parametrize(
    ("rule", "status", "param"),
    [
        ({"method": "POST", "path": CONV, "status": 503, "drop": True}, 400, "drop"),
        ({"method": "POST", "path": "/v1/[conv", "status": 503}, 400, "path"),
        ({"method": "POST", "path": CONV, "status": 503, "times": 0}, 400, "times"),
        ({"method": "POST", "path": CONV, "retry_after": 1, "delay_ms": 1}, 400, "retry_after"),
        ({"method": "POST", "path": CONV}, 400, "status"),
        ({"method": "POST", "path": CONV, "status": 503, "when": "now"}, 400, "when"),
        ({"method": "POST", "path": CONV, "body_jq": ".a >"}, 409, "body_jq"),
    ],
)
def test_a_bad_rule_is_refused_naming_the_field_and_nothing_is_added(
    http: httpx.Client, rule: dict[str, Any], status: int, param: str
) -> None:
    response = http.post(FAULTS, json=rule)
    assert response.status_code == status
    assert response.json()["error"]["param"] == param
    assert http.get(FAULTS).json() == {"data": []}


def test_a_rule_body_over_the_bound_is_a_413_and_the_route_wants_the_token(
    served: Served, http: httpx.Client
) -> None:
    big = {"method": "*", "path": "/v1/*", "body_jq": "." + " " * MAX_RULE_BYTES}
    assert http.post(FAULTS, json=big).status_code == 413
    with httpx.Client(base_url=served.url, timeout=10.0, verify=TLS) as anon:
        for method in ("GET", "POST", "DELETE"):
            assert anon.request(method, FAULTS).status_code == 401
    assert http.put(FAULTS).headers["allow"] == "GET, POST, DELETE"
    assert http.get(FAULTS, params={"method": "GET"}).status_code == 400
    assert MAX_RULE_BYTES < MAX_BODY_BYTES


def test_an_add_sent_again_with_its_idempotency_key_answers_200_and_adds_nothing(
    http: httpx.Client,
) -> None:
    rule = {"method": "*", "path": "/v1/*", "status": 500}
    first = http.post(FAULTS, json=rule, headers={"Idempotency-Key": "k-1"})
    again = http.post(FAULTS, json=rule, headers={"Idempotency-Key": "k-1"})
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json() == first.json()
    assert len(http.get(FAULTS).json()["data"]) == 1
    for other in (json.dumps({**rule, "status": 503}), "garbage"):
        reused = http.post(FAULTS, content=other, headers={"Idempotency-Key": "k-1"})
        assert reused.status_code == 400, reused.text
        assert reused.json()["error"]["param"] == "idempotency_key"
    assert len(http.get(FAULTS).json()["data"]) == 1


# Bodies on both sides of every rule the document states; the route must agree with it.
_BODIES: list[dict[str, Any]] = [
    {"method": "*", "path": "/v1/*", "status": 503},
    {"method": "get", "path": "/v1/[cr]*", "drop": True, "times": 3, "after": 1},
    {"method": "POST", "path": CONV, "drop_after": True, "delay_ms": 5},
    {"method": "POST", "path": CONV, "delay_ms": 1},
    {"method": "POST", "path": CONV, "body_jq": "."},
    {"method": "POST", "path": CONV, "status": 200, "retry_after": 0, "body_jq": ".x"},
    {"method": "POST", "path": CONV, "status": None, "drop": False, "delay_ms": 7},
    {"method": "POST", "path": CONV, "status": 503.0},
    {"method": "POST", "path": CONV, "status": 503, "drop": True},
    {"method": "POST", "path": CONV, "drop": True, "drop_after": True},
    {"method": "POST", "path": CONV, "retry_after": 1, "delay_ms": 5},
    {"method": "POST", "path": CONV, "body_jq": ".", "drop_after": True},
    {"method": "POST", "path": CONV, "delay_ms": 0},
    {"method": "POST", "path": CONV, "status": None},
    {"method": "POST", "path": CONV, "status": 100},
    {"method": "POST", "path": CONV, "status": 503, "times": 0},
    {"method": "POST", "path": CONV, "status": 503, "after": -1},
    {"method": "POST", "path": CONV, "status": 503, "times": True},
    {"method": "POST", "path": "/v1/[]]", "status": 503},
    {"method": "POST", "path": "/v1/[!]", "status": 503},
    {"method": "POST", "path": "/v1/a b", "status": 503},
    {"method": "POST", "path": "", "status": 503},
    {"method": "P*", "path": CONV, "status": 503},
    {"method": "POST", "status": 503},
    {"path": CONV, "status": 503},
    {"method": "POST", "path": CONV, "status": 503, "extra": 1},
]


def test_the_route_takes_exactly_the_rules_the_document_describes(http: httpx.Client) -> None:
    doc = document()
    schema = {"$ref": "#/components/schemas/SandboxFaultRuleNew", "components": doc["components"]}
    valid = jsonschema_rs.validator_for(schema).is_valid
    for rule in _BODIES:
        response = http.post(FAULTS, content=json.dumps(rule), headers=AUTH)
        assert response.status_code == (201 if valid(rule) else 400), (rule, response.text)
        if response.status_code == 201:
            assert conforms("SandboxFaultRule", response.json())
    assert conforms("SandboxCleared", http.delete(FAULTS).json())


def test_in_proxy_mode_rules_apply_before_forwarding(served: Served, serve_with: ServeWith) -> None:
    upstream = served
    proxy = serve_with(proxy=Proxy(upstream.url, "report", 30.0, MAX_BODY_BYTES))
    with client(proxy) as http:
        add(http, method="POST", path=CONV, status=503)
        assert http.post(CONV, json={"contact_id": "c_1"}).status_code == 503
        assert contacts(upstream) == []  # nothing went upstream
        add(http, method="POST", path=CONV, drop_after=True)
        assert send(proxy, "POST", CONV, json={"contact_id": "c_2"}) is None
        assert contacts(upstream) == ["c_2"]  # forwarded, then the answer lost
        add(http, method="GET", path=CONV, body_jq=".data | length")
        assert http.get(CONV).json() == 1
        assert [e["fault_rule"] for e in journal(http)] == [1, 2, 3]
