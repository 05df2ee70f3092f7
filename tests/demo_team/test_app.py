"""The demo team's tests of its application, against convrisk's sandbox: the fixture
`convrisk_sandbox` (run with `pytest -p convrisk.testing`) and httpx, nothing else of convrisk."""

from __future__ import annotations

import time

import httpx

from convrisk.testing import Sandbox

from .app import open_conversation


def listed(sandbox: Sandbox) -> list[str]:
    """The contact ids of the conversations the sandbox holds."""
    answer = httpx.get(
        f"{sandbox.base_url}/v1/conversations",
        headers={"Authorization": f"Bearer {sandbox.token}"},
        timeout=10,
    )
    answer.raise_for_status()
    return [record["contact_id"] for record in answer.json()["data"]]


def test_opening_a_conversation_creates_one_with_one_request(convrisk_sandbox: Sandbox) -> None:
    conversation = open_conversation(convrisk_sandbox.base_url, convrisk_sandbox.token, "c_1")
    assert conversation["contact_id"] == "c_1"
    assert listed(convrisk_sandbox) == ["c_1"]
    convrisk_sandbox.verify("POST", "/v1/conversations", count=1)


def test_each_test_starts_from_an_empty_sandbox(convrisk_sandbox: Sandbox) -> None:
    # The test above created c_1 in this same sandbox (one per session): the reset removed it.
    assert convrisk_sandbox.requests() == []
    assert listed(convrisk_sandbox) == []


def test_a_503_is_tried_again_after_the_retry_after(convrisk_sandbox: Sandbox) -> None:
    rule = convrisk_sandbox.fault("POST", "/v1/conversations", status=503, retry_after=1)
    started = time.monotonic()
    conversation = open_conversation(convrisk_sandbox.base_url, convrisk_sandbox.token, "c_2")
    assert time.monotonic() - started >= 0.9  # it waited as Retry-After said
    assert conversation["contact_id"] == "c_2"
    convrisk_sandbox.verify("POST", "/v1/conversations", count=2)
    sent = convrisk_sandbox.requests("POST", "/v1/conversations")
    assert [entry["status"] for entry in sent] == [503, 200]
    assert sent[0]["fault_rule"] == rule["id"] and sent[1]["fault_rule"] is None
    # The same Idempotency-Key both times: the retry could never make a second conversation.
    assert sent[0]["idempotency_key"] == sent[1]["idempotency_key"]
    assert listed(convrisk_sandbox) == ["c_2"]


def test_the_next_test_has_no_fault_left(convrisk_sandbox: Sandbox) -> None:
    open_conversation(convrisk_sandbox.base_url, convrisk_sandbox.token, "c_3", attempts=1)
    convrisk_sandbox.verify("POST", "/v1/conversations", count=1)
