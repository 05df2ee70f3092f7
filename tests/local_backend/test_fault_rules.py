"""The aimed fault rules on their own: which request each rule fires on, in what order, and every
body the route refuses, naming the field."""

from __future__ import annotations

import json
from typing import Any

import pytest

from convrisk.api_client.errors import InvalidRequestError
from convrisk.local_backend.sandbox.fault_rules import MAX_RULES, FaultRules

CONV = "/v1/conversations"


def body(**fields: Any) -> bytes:
    return json.dumps(fields).encode()


def add(rules: FaultRules, **fields: Any) -> dict[str, Any]:
    """Add a rule (method * and path /v1/* unless given); the rule as JSON."""
    fields = {"method": "*", "path": "/v1/*", **fields}
    added, new = rules.add(body(**fields))
    assert new
    return added


def fired(rules: FaultRules, requests: list[tuple[str, str]]) -> list[int | None]:
    """The id of the rule that fires on each request, in order (None: none did)."""
    out = []
    for method, path in requests:
        rule = rules.offer(method, path)
        out.append(None if rule is None else rule.id)
    return out


def by_id(rules: FaultRules) -> dict[int, dict[str, Any]]:
    return {rule["id"]: rule for rule in rules.listed()}


def test_a_rule_fires_once_by_default_then_lets_everything_through() -> None:
    rules = FaultRules()
    add(rules, method="POST", path=CONV, status=503)
    assert fired(rules, [("POST", CONV)] * 3) == [1, None, None]
    rule = by_id(rules)[1]
    assert (rule["seen"], rule["fired"]) == (1, 1)


def test_after_lets_that_many_through_then_times_fire() -> None:
    rules = FaultRules()
    add(rules, path=CONV, status=500, after=2, times=2)
    assert fired(rules, [("POST", CONV)] * 6) == [None, None, 1, 1, None, None]
    rule = by_id(rules)[1]
    # A spent rule counts no more requests.
    assert (rule["seen"], rule["fired"]) == (4, 2)


def test_the_method_is_any_case_or_any_method_and_the_glob_is_on_the_path() -> None:
    rules = FaultRules()
    add(rules, method="put", path="/v1/conversations/conv_*", status=409, times=10)
    add(rules, method="*", path="/v1/risk-profiles", drop=True, times=10)
    requests = [
        ("PUT", "/v1/conversations/conv_1"),
        ("put", "/v1/conversations/conv_2"),
        ("GET", "/v1/conversations/conv_1"),
        ("PUT", "/v1/conversations"),
        ("DELETE", "/v1/risk-profiles"),
        ("GET", "/v1/risk-profiles/rp_1"),  # the glob is whole-path: no prefix match
    ]
    assert fired(rules, requests) == [1, 1, None, None, 2, None]


def test_the_glob_matches_as_sandbox_requests_path_does() -> None:
    rules = FaultRules()
    add(rules, path="/v1/[cr]*/?*", status=500, times=100)
    hits = fired(
        rules,
        [
            ("GET", "/v1/conversations/conv_1"),
            ("GET", "/v1/risk-profiles/rp_1"),
            ("GET", "/v1/conversations/"),
            ("GET", "/V1/conversations/conv_1"),  # case-sensitive, as the journal's filter
        ],
    )
    assert hits == [1, 1, None, None]


def test_overlapping_rules_are_offered_in_order_and_the_first_that_fires_stops_the_offer() -> None:
    rules = FaultRules()
    add(rules, path=CONV, status=503, after=1)
    add(rules, path="/v1/*", status=500, times=2)
    add(rules, method="POST", path=CONV, drop=True)
    # 1st: rule 1 lets it through, rule 2 fires. 2nd: rule 1 fires (rule 2 does not see it).
    # 3rd: rule 2 fires its second time. 4th: rules 1 and 2 spent, rule 3 fires.
    assert fired(rules, [("POST", CONV)] * 5) == [2, 1, 2, 3, None]
    counts = {id: (rule["seen"], rule["fired"]) for id, rule in by_id(rules).items()}
    assert counts == {1: (2, 1), 2: (2, 2), 3: (1, 1)}


def test_a_rule_that_never_matches_is_listed_with_nothing_seen_or_fired() -> None:
    rules = FaultRules()
    add(rules, method="DELETE", path="/v1/nothing/*", status=500)
    assert fired(rules, [("DELETE", CONV), ("GET", "/v1/nothing/x")]) == [None, None]
    rule = by_id(rules)[1]
    assert (rule["seen"], rule["fired"]) == (0, 0)


def test_a_rule_is_listed_with_every_field_its_defaults_filled_in() -> None:
    rules = FaultRules()
    added = add(rules, method="post", path=CONV, delay_ms=20)
    assert added == {
        "id": 1,
        "method": "POST",
        "path": CONV,
        "status": None,
        "drop": False,
        "drop_after": False,
        "times": 1,
        "after": 0,
        "delay_ms": 20,
        "retry_after": None,
        "body_jq": None,
        "seen": 0,
        "fired": 0,
    }
    assert rules.listed() == [added]


def test_clear_keeps_counting_ids_and_reset_starts_them_over() -> None:
    rules = FaultRules()
    add(rules, status=500)
    add(rules, status=500)
    assert rules.clear() == 2
    assert rules.listed() == []
    assert add(rules, status=500)["id"] == 3  # the journal, kept, never names two rules by 1
    rules.reset()
    assert rules.listed() == []
    assert add(rules, status=500)["id"] == 1


def test_an_add_sent_again_with_its_idempotency_key_adds_nothing() -> None:
    rules = FaultRules()
    first, new = rules.add(body(method="*", path="/v1/*", status=503), "key-1")
    again, new_again = rules.add(body(method="*", path="/v1/*", status=503), "key-1")
    other, _ = rules.add(body(method="*", path="/v1/*", status=503), "key-2")
    assert (new, new_again) == (True, False)
    assert again == first and other["id"] == 2
    assert len(rules.listed()) == 2


def test_whole_numbers_sent_as_floats_are_taken() -> None:
    rules = FaultRules()
    added = add(rules, status=503.0, times=2.0)
    assert (added["status"], added["times"]) == (503, 2)
    assert isinstance(added["status"], int)


def test_a_jq_program_is_compiled_once_when_added() -> None:
    rules = FaultRules()
    add(rules, body_jq=".error.message")
    rule = rules.offer("GET", CONV)
    assert rule is not None and rule.program is not None
    assert rule.program.input_value({"error": {"message": "m"}}).first() == "m"


@pytest.mark.parametrize(
    ("fields", "param", "says"),
    [
        ({"status": 500, "colour": "red"}, "colour", "Unknown field"),
        ({"method": None}, "method", "required"),
        ({"path": None}, "path", "required"),
        ({"method": "PO ST", "status": 500}, "method", "HTTP method"),
        ({"method": "A" * 21, "status": 500}, "method", "HTTP method"),
        ({"method": 5, "status": 500}, "method", "HTTP method"),
        ({"path": 7, "status": 500}, "path", "glob"),
        ({"path": "/v1/[conv", "status": 500}, "path", "never closed"),
        ({"path": "/v1/a b", "status": 500}, "path", "space"),
        ({"path": "/v1/caf\u00e9", "status": 500}, "path", "ASCII"),
        ({"path": "/v1/[]]", "status": 500}, "path", "must not begin"),
        ({"path": "", "status": 500}, "path", "empty"),
        ({"path": "/" * 2049, "status": 500}, "path", "2048"),
        ({"status": "503"}, "status", "whole number"),
        ({"status": 199}, "status", "200 to 599"),
        ({"status": 600}, "status", "200 to 599"),
        ({"status": True}, "status", "whole number"),
        ({"status": 500.5}, "status", "whole number"),
        ({"status": 500, "times": 0}, "times", "1 to"),
        ({"status": 500, "times": -1}, "times", "1 to"),
        ({"status": 500, "times": True}, "times", "whole number"),
        ({"status": 500, "after": -1}, "after", "0 to"),
        ({"delay_ms": -1}, "delay_ms", "0 to"),
        ({"delay_ms": 60_001}, "delay_ms", "0 to 60000"),
        ({"status": 503, "retry_after": -1}, "retry_after", "0 to"),
        ({"retry_after": 1, "delay_ms": 5}, "retry_after", "needs a status"),
        ({"status": 503, "drop": True}, "drop", "not status and drop"),
        ({"drop": True, "drop_after": True}, "drop_after", "not drop and drop_after"),
        ({"drop": "yes"}, "drop", "true or false"),
        ({"drop": True, "body_jq": "."}, "body_jq", "dropped connection"),
        ({"body_jq": 5}, "body_jq", "jq program"),
        ({"body_jq": "x" * 4097}, "body_jq", "4096"),
        ({}, "status", "does nothing"),
        ({"delay_ms": 0, "times": 3}, "status", "does nothing"),
    ],
)
def test_a_bad_rule_is_a_400_naming_the_field(
    fields: dict[str, Any], param: str, says: str
) -> None:
    rules = FaultRules()
    full = {"method": "*", "path": "/v1/*", **fields}
    full = {name: value for name, value in full.items() if value is not None}
    with pytest.raises(InvalidRequestError) as caught:
        rules.add(body(**full))
    assert caught.value.status == 400
    assert caught.value.param == param
    assert says in caught.value.message
    assert rules.listed() == []


@pytest.mark.parametrize("text", [b"", b"[]", b'"rule"', b"{", b"\xff", b"null"])
def test_a_body_that_is_no_json_object_is_a_400(text: bytes) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        FaultRules().add(text)
    assert caught.value.status == 400 and "JSON" in caught.value.message


def test_a_jq_program_that_does_not_compile_is_a_409_naming_body_jq() -> None:
    rules = FaultRules()
    with pytest.raises(InvalidRequestError) as caught:
        rules.add(body(method="*", path="/v1/*", body_jq=".a >"))
    assert (caught.value.status, caught.value.param) == (409, "body_jq")
    assert "does not compile" in caught.value.message
    assert rules.listed() == []


def test_the_rules_are_bounded_and_the_one_past_the_bound_is_refused() -> None:
    rules = FaultRules()
    for _ in range(MAX_RULES):
        add(rules, status=500)
    with pytest.raises(InvalidRequestError) as caught:
        add(rules, status=500)
    assert caught.value.status == 409 and f"{MAX_RULES}" in caught.value.message
    assert len(rules.listed()) == MAX_RULES
