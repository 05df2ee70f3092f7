"""The contract checker: every answer the sandbox gives conforms, and each kind of break is
named by its rule and where it lies."""

from __future__ import annotations

import json
from typing import Any

import pytest

from convrisk.local_backend.backend import LocalBackend
from convrisk.local_backend.sandbox.contract import Contract, Violation
from convrisk.local_backend.sandbox.wire import Answer, Wire

TOKEN = "contract-test-token-9a1"
AUTH = ("authorization", f"Bearer {TOKEN}")
JSON_TYPE = ("content-type", "application/json")
CONV = {"contact_id": "c_1"}
RISK = {"customer_id": "cus_1", "profile_type": "moderate", "score": 55, "details": {"a": 1}}


@pytest.fixture
def contract() -> Contract:
    return Contract.load()


def _served(answer: Answer) -> dict[str, str]:
    """The answer's headers as serve sends them (the ASGI app adds the JSON content type)."""
    return {"content-type": "application/json", **dict(answer.headers)}


def _exchange(
    wire: Wire,
    contract: Contract,
    method: str,
    path: str,
    query: str = "",
    body: Any = None,
    headers: tuple[tuple[str, str], ...] = (AUTH,),
) -> tuple[Answer, list[Violation]]:
    data = b"" if body is None else json.dumps(body).encode()
    sent = headers + ((JSON_TYPE,) if body is not None else ())
    answer = wire.handle(method, path, query, sent, data)
    found = contract.check_answer(method, path, answer.status, _served(answer), answer.body)
    return answer, found


def test_every_answer_the_sandbox_gives_conforms(backend: LocalBackend, contract: Contract) -> None:
    wire = Wire(backend, TOKEN)
    statuses: set[tuple[str, int]] = set()

    def check(method: str, path: str, query: str = "", body: Any = None, **kw: Any) -> Answer:
        answer, found = _exchange(wire, contract, method, path, query, body, **kw)
        assert found == [], (method, path, answer.status, answer.body, found)
        statuses.add((contract.operation(method, path) or path, answer.status))
        return answer

    for path, body in (("/v1/conversations", CONV), ("/v1/risk-profiles", RISK)):
        ids = [check("POST", path, body=body).json()["id"] for _ in range(3)]
        check("GET", path, "limit=2")
        page = check("GET", path, "limit=1").json()
        check("GET", path, f"starting_after={page['data'][0]['id']}")
        check("GET", path, f"ending_before={ids[0]}")
        check("GET", f"{path}/{ids[0]}")
        check("PUT", f"{path}/{ids[0]}", body={})
        check("DELETE", f"{path}/{ids[1]}")
        # Errors: a bad limit, a bad body, a missing record, no token, a bad method.
        check("GET", path, "limit=0")
        check("POST", path, body={"nope": 1})
        check("GET", f"{path}/{ids[1]}")
        check("DELETE", f"{path}/{ids[1]}")
        check("GET", path, headers=())
        check("PUT", f"{path}/{ids[0]}", body=[1])
    check("PUT", "/v1/risk-profiles/rp_x", body={"score": "high"})
    check("GET", "/openapi.json")
    # Not an operation of the document: an error in the error shape is what it must get.
    check("PATCH", "/v1/conversations")
    check("GET", "/v2/nothing")
    assert {status for _, status in statuses} >= {200, 400, 401, 404, 405}


def test_a_field_of_the_wrong_type_in_a_record_is_a_body_violation_naming_it(
    contract: Contract, backend: LocalBackend
) -> None:
    wire = Wire(backend, TOKEN)
    created, _ = _exchange(wire, contract, "POST", "/v1/risk-profiles", body=RISK)
    page = {"data": [created.json() | {"score": "high"}], "has_more": False}
    found = contract.check_answer(
        "GET", "/v1/risk-profiles", 200, dict([JSON_TYPE]), json.dumps(page).encode()
    )
    assert [(v.rule, v.where) for v in found] == [("body", "/data/0/score")]
    assert found[0].message.startswith('"high" is not valid')
    assert found[0].line() == f"body /data/0/score: {found[0].message}"
    assert found[0].as_json() == {
        "rule": "body",
        "where": "/data/0/score",
        "message": found[0].message,
    }


def test_a_missing_field_in_a_record_is_named(contract: Contract) -> None:
    record = {"id": "conv_1", "contact_id": "c"}
    found = contract.check_answer(
        "GET", "/v1/conversations/conv_1", 200, dict([JSON_TYPE]), json.dumps(record).encode()
    )
    assert found[0].rule == "body"
    assert '"group_id" is a required property' in [v.message for v in found]


def test_a_page_without_has_more_is_a_page_violation(contract: Contract) -> None:
    found = contract.check_answer(
        "GET", "/v1/conversations", 200, dict([JSON_TYPE]), b'{"data": []}'
    )
    assert [v.line() for v in found] == ['page: "has_more" is a required property']


def test_a_status_the_operation_does_not_list_is_a_status_violation(contract: Contract) -> None:
    error = {"error": {"type": "api_error", "code": "x", "message": "m", "param": None}}
    found = contract.check_answer(
        "GET", "/v1/conversations", 404, dict([JSON_TYPE]), json.dumps(error).encode()
    )
    assert [v.rule for v in found] == ["status"]
    assert found[0].message.startswith("404 is not an answer of list_conversations")


def test_a_200_in_html_is_a_content_type_violation(contract: Contract) -> None:
    found = contract.check_answer(
        "GET", "/v1/conversations", 200, {"content-type": "text/html"}, b"<html></html>"
    )
    assert [v.line() for v in found] == [
        "content-type: text/html where the document says application/json"
    ]


def test_a_body_that_is_not_json_is_named(contract: Contract) -> None:
    found = contract.check_answer("GET", "/v1/conversations", 200, dict([JSON_TYPE]), b"{oops")
    assert [v.rule for v in found] == ["body"]
    assert found[0].message.startswith("not JSON: ")


def test_an_error_without_the_error_shape_is_an_error_shape_violation(
    contract: Contract,
) -> None:
    found = contract.check_answer(
        "GET", "/v1/conversations/conv_1", 404, dict([JSON_TYPE]), b'{"message": "gone"}'
    )
    assert {v.rule for v in found} == {"error-shape"}
    assert '"error" is a required property' in [v.message for v in found]


def test_a_redirect_is_named_with_its_location_made_printable(contract: Contract) -> None:
    found = contract.check_answer(
        "GET", "/v1/conversations", 302, {"location": "http://127.0.0.1:9/\x1b[2Jx"}, b""
    )
    assert [v.rule for v in found] == ["redirect"]
    assert "\x1b" not in found[0].message
    assert "127.0.0.1:9/" in found[0].message


def test_a_long_value_is_cut_in_the_message(contract: Contract) -> None:
    record = {"data": "x" * 10_000, "has_more": False}
    found = contract.check_answer(
        "GET", "/v1/conversations", 200, dict([JSON_TYPE]), json.dumps(record).encode()
    )
    assert found
    assert all(len(v.message) <= 300 for v in found)


def test_requests_that_break_the_document_are_named(contract: Contract) -> None:
    assert contract.check_request("GET", "/v1/conversations", "limit=5", {}, b"") == []
    lines = [
        v.line() for v in contract.check_request("GET", "/v1/conversations", "limit=0&x=1", {}, b"")
    ]
    assert lines == [
        "request /query/limit: 0 is less than the minimum of 1",
        "request /query/x: not a parameter in the document",
    ]
    body = json.dumps(RISK | {"score": "high"})
    found = contract.check_request(
        "POST", "/v1/risk-profiles", "", {"content-type": "application/json"}, body.encode()
    )
    assert [v.where for v in found] == ["/body/score"]
    found = contract.check_request("DELETE", "/v1/conversations", "", {}, b"")
    assert [v.line() for v in found] == [
        "request: DELETE /v1/conversations: the document has no such method"
    ]


def test_parameters_the_document_describes_in_text_are_checked_as_listed_ones(
    contract: Contract,
) -> None:
    cursor = "conv_" + "0" * 26
    assert (
        contract.check_request("GET", "/v1/conversations", f"ending_before={cursor}", {}, b"") == []
    )
    (bad,) = contract.check_request("GET", "/v1/conversations", "ending_before=rp_1", {}, b"")
    assert bad.where == "/query/ending_before"
    sent = {"content-type": "application/json", "idempotency-key": "k-1"}
    body = json.dumps({"contact_id": "ct_1"}).encode()
    assert contract.check_request("POST", "/v1/conversations", "", sent, body) == []
    found = contract.check_request(
        "POST", "/v1/conversations", "", {**sent, "idempotency-key": "\t"}, body
    )
    assert [v.where for v in found] == ["/header/Idempotency-Key"]


def test_operations_are_found_by_their_path_templates(contract: Contract) -> None:
    assert contract.operation("GET", "/v1/risk-profiles") == "list_risk_profiles"
    assert contract.operation("put", "/v1/risk-profiles/rp_01") == "update_risk_profiles"
    assert contract.operation("GET", "/v1/risk-profiles/rp_01/more") is None
    assert contract.operation("PATCH", "/v1/risk-profiles") is None
    assert Contract.load() is contract


@pytest.mark.parametrize("depth", [300, 900])
def test_a_body_nested_too_deep_to_check_is_a_violation_not_a_crash(
    contract: Contract, depth: int
) -> None:
    # Small and valid JSON, but deeper than the validator can walk (255 levels).
    value = json.loads("[" * depth + "]" * depth)
    body = json.dumps({"contact_id": value}).encode()
    sent = {"content-type": "application/json"}
    asked = contract.check_request("POST", "/v1/conversations", "", sent, body)
    assert [(v.rule, v.where) for v in asked] == [("request", "/body")]
    assert "too deep" in asked[0].message
    answered = contract.check_answer("POST", "/v1/conversations", 200, sent, body)
    assert [(v.rule, v.where) for v in answered] == [("body", "")]
    assert "too deep" in answered[0].message
