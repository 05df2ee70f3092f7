"""The admin calls of api_client.sandbox over a scripted `send`: what reaches the sandbox and
what a target that is no sandbox gives."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from convrisk.api_client import sandbox
from convrisk.api_client.errors import AuthenticationError, InvalidRequestError
from convrisk.api_client.raw import RawAnswer


class Script:
    """A `send` that answers `answer` and keeps each request it was given."""

    def __init__(self, status: int, body: bytes) -> None:
        self.answer = RawAnswer(status, body)
        self.sent: list[tuple[str, str, bytes | None]] = []

    def __call__(self, method: str, target: str, body: bytes | None) -> RawAnswer:
        self.sent.append((method, target, body))
        return self.answer


def journal(*entries: dict[str, object]) -> bytes:
    return json.dumps({"data": list(entries), "dropped": 0, "total": len(entries)}).encode()


def test_requests_sends_the_filters_with_the_glob_readable() -> None:
    send = Script(200, journal({"seq": 1}))
    found = sandbox.requests(send, method="POST", path="/v1/conv*/[a-z]?", status=201)
    assert found.requests == [{"seq": 1}]
    assert send.sent == [
        ("GET", "/__sandbox/requests?method=POST&path=/v1/conv*/[a-z]?&status=201", None)
    ]


def test_a_glob_with_query_characters_is_percent_encoded() -> None:
    send = Script(200, journal())
    sandbox.requests(send, path="/v1/a&b=c #d")
    assert send.sent[0][1] == "/__sandbox/requests?path=/v1/a%26b%3Dc%20%23d"


@pytest.mark.parametrize(
    ("status", "body", "why"),
    [
        (404, b'{"error": {"message": "Unknown route"}}', "it answered 404 Not Found"),
        (200, b"<html>a web app</html>", "it did not answer with a JSON object"),
        (200, b'{"data": "no"}', "its answer is not a request journal"),
    ],
)
def test_a_target_that_is_no_sandbox_says_so(status: int, body: bytes, why: str) -> None:
    with pytest.raises(sandbox.NotASandbox) as caught:
        sandbox.requests(Script(status, body))
    assert why in caught.value.message
    assert not caught.value.answered  # exit 2: the target, not a refusal of the request


def test_a_refused_token_is_the_authentication_error() -> None:
    body = b'{"error": {"type": "authentication_error", "message": "Invalid token."}}'
    with pytest.raises(AuthenticationError):
        sandbox.reset(Script(401, body))


def test_restore_sends_the_snapshot_as_it_is_and_reads_the_counts() -> None:
    send = Script(200, b'{"restored": {"conversations": 2, "risk_profiles": 0}}')
    data = b'{"resource": "conversations", "id": "conv_1"}\n'
    assert sandbox.restore(send, data) == {"conversations": 2, "risk_profiles": 0}
    assert send.sent == [("POST", "/__sandbox/restore", data)]


def test_add_fault_sends_the_rule_as_json_and_gives_back_the_rule_kept() -> None:
    kept = {"id": 1, "method": "POST", "path": "/v1/conversations", "status": 503}
    send = Script(201, json.dumps(kept).encode())
    rule = {"method": "POST", "path": "/v1/conversations", "status": 503}
    assert sandbox.add_fault(send, rule) == kept
    ((method, target, body),) = send.sent
    assert (method, target) == ("POST", "/__sandbox/faults")
    assert body is not None and json.loads(body) == rule


def test_faults_and_clear_faults_read_the_list_and_the_count() -> None:
    listing = Script(200, b'{"data": [{"id": 1, "fired": 0}, {"id": 2, "fired": 3}]}')
    assert [rule["id"] for rule in sandbox.faults(listing)] == [1, 2]
    assert listing.sent == [("GET", "/__sandbox/faults", None)]
    cleared = Script(200, b'{"cleared": 2}')
    assert sandbox.clear_faults(cleared) == 2
    assert cleared.sent == [("DELETE", "/__sandbox/faults", None)]


@pytest.mark.parametrize(
    ("call", "body"),
    [
        (lambda send: sandbox.add_fault(send, {"method": "*"}), b'{"rule": 1}'),
        (sandbox.faults, b'{"data": [{"no_id": 1}]}'),
        (sandbox.clear_faults, b'{"cleared": true}'),
    ],
)
def test_a_faults_answer_of_another_shape_is_no_sandbox(
    call: Callable[[Script], object], body: bytes
) -> None:
    with pytest.raises(sandbox.NotASandbox):
        call(Script(200, body))


def test_a_refused_rule_is_the_sandboxs_error_naming_the_field() -> None:
    body = b'{"error": {"type": "invalid_request_error", "message": "times", "param": "times"}}'
    with pytest.raises(InvalidRequestError) as caught:
        sandbox.add_fault(Script(400, body), {"times": 0})
    assert caught.value.param == "times" and caught.value.answered


class Journaled:
    """A `send` answering the journal `entries` filtered as the sandbox filters them (method,
    and a glob on the path), keeping each target it was sent."""

    def __init__(self, *entries: dict[str, object]) -> None:
        self.entries = entries
        self.targets: list[str] = []

    def __call__(self, method: str, target: str, body: bytes | None) -> RawAnswer:
        from fnmatch import fnmatchcase
        from urllib.parse import parse_qs, urlsplit

        self.targets.append(target)
        query = {name: values[0] for name, values in parse_qs(urlsplit(target).query).items()}
        kept = [
            entry
            for entry in self.entries
            if query.get("method", entry["method"]) == entry["method"]
            and fnmatchcase(str(entry["path"]), query.get("path", "*"))
        ]
        return RawAnswer(200, journal(*kept))


def entry(seq: int, method: str, path: str, status: int = 200) -> dict[str, object]:
    return {"seq": seq, "method": method, "path": path, "query": "", "status": status}


def test_a_verify_that_holds_reads_only_the_matching_requests() -> None:
    send = Journaled(entry(1, "POST", "/v1/conversations"), entry(2, "GET", "/v1/conversations"))
    verdict = sandbox.verify(send, "POST", "/v1/conversations", count=1)
    assert verdict.held and verdict.explanation == []
    assert verdict.verified == "Verified: 1 request POST /v1/conversations (expected exactly 1)."
    assert send.targets == ["/__sandbox/requests?method=POST&path=/v1/conversations"]


def test_near_misses_come_closest_first_and_at_most_ten() -> None:
    others = [entry(n, "POST", f"/v1/risk-profiles/{n}") for n in range(3, 15)]
    send = Journaled(
        entry(1, "GET", "/v1/conversations", 401), *others, entry(2, "POST", "/v1/conversation")
    )
    verdict = sandbox.verify(send, "POST", "/v1/conversations")
    assert not verdict.held
    assert verdict.failure == "Expected at least 1 POST /v1/conversations; the sandbox received 0."
    assert verdict.explanation[:3] == [
        "Near misses, the closest first:",
        "  #1 GET /v1/conversations -> 401: another method",
        "  #2 POST /v1/conversation -> 200: another path",  # the most alike path first
    ]
    assert len(verdict.explanation) == 1 + sandbox.MAX_NEAR_MISSES + 1
    assert verdict.explanation[-1] == "  ... and 4 more"


def test_a_count_exceeded_names_the_matches() -> None:
    send = Journaled(*(entry(n, "GET", "/v1/conversations") for n in range(1, 13)))
    verdict = sandbox.verify(send, "GET", "/v1/*", count=2)
    assert verdict.explanation == ["Matched: #1, #2, #3, #4, #5, #6, #7, #8, #9, #10, ..."]
    assert verdict.failure == "Expected exactly 2 GET /v1/*; the sandbox received 12."


def test_a_failed_verify_says_when_the_journal_dropped_older_requests() -> None:
    entry = {"seq": 10_001, "method": "GET", "path": "/v1/conversations", "status": 200}
    answer = json.dumps({"data": [entry], "dropped": 50, "total": 1}).encode()
    verdict = sandbox.verify(Script(200, answer), "GET", "/v1/conversations", count=51)
    assert not verdict.held
    assert verdict.explanation[-1].startswith(
        "The journal had no room for the 50 oldest requests (it keeps the latest ones)"
    )
    whole = json.dumps({"data": [entry], "dropped": 0, "total": 1}).encode()
    assert "no room" not in " ".join(
        sandbox.verify(Script(200, whole), "GET", "/v1/conversations", count=2).explanation
    )
