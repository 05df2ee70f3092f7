"""`convrisk check`'s comparison (local_backend.conformance): a service played by one in-process
sandbox, the reference by another; the service's answers altered where a test needs it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from convrisk.api_client.raw import RawAnswer
from convrisk.local_backend import conformance
from convrisk.local_backend.sandbox.contract import Contract

Alter = Callable[[str, str, RawAnswer], RawAnswer]


@pytest.fixture
def sandboxes(tmp_path: Path) -> Iterator[tuple[conformance.Sandbox, conformance.Sandbox]]:
    """The service's sandbox and the reference's."""
    service = conformance.Sandbox(tmp_path / "service.db")
    reference = conformance.Sandbox(tmp_path / "reference.db")
    try:
        yield service, reference
    finally:
        service.close()
        reference.close()


def check(
    sandboxes: tuple[conformance.Sandbox, conformance.Sandbox], alter: Alter | None = None
) -> tuple[conformance.Check, list[conformance.StepResult]]:
    """The whole scenario run, the service's answers passed through `alter`."""
    service, reference = sandboxes
    side = service.side()
    if alter is not None:
        send, bad = side.send, side.send_bad_token
        side = conformance.Side(
            lambda m, t, b: alter(m, t, send(m, t, b)), lambda m, t, b: alter(m, t, bad(m, t, b))
        )
    run = conformance.Check(side, reference.side(), Contract.load(), conformance.new_run_id())
    return run, list(run.run())


def found(results: list[conformance.StepResult]) -> list[str]:
    return [f"{r.name}: {d}" for r in results for d in r.differences]


def with_body(answer: RawAnswer, change: Callable[[dict[str, object]], object]) -> RawAnswer:
    body = json.loads(answer.body)
    change(body)
    return RawAnswer(answer.status, json.dumps(body).encode(), content_type=answer.content_type)


def test_the_same_service_shows_no_difference_and_cleanup_removes_what_is_left(
    sandboxes: tuple[conformance.Sandbox, conformance.Sandbox],
) -> None:
    run, results = check(sandboxes)
    assert found(results) == []
    assert len(run.service.live) == conformance.records_created() - 2  # two deleted by steps
    deleted, left = run.clean_up()
    assert left == [] and len(deleted) == conformance.records_created() - 2
    assert run.service.live == {}


def test_a_changed_value_is_named_by_its_json_pointer_and_step(
    sandboxes: tuple[conformance.Sandbox, conformance.Sandbox],
) -> None:
    altered: list[str] = []

    def alter(method: str, target: str, answer: RawAnswer) -> RawAnswer:
        # Only the answer to the update that mutes conversation #1.
        if method == "PUT" and b'"is_muted":true' in answer.body and not altered:
            altered.append(target)
            return with_body(answer, lambda body: body.update(is_muted=False))
        return answer

    _, results = check(sandboxes, alter)
    assert found(results) == [
        "update conversation #1 is_muted: body /is_muted: service sent false, the sandbox true"
    ]


def test_a_missing_field_a_wrong_status_and_times_in_milliseconds_are_differences(
    sandboxes: tuple[conformance.Sandbox, conformance.Sandbox],
) -> None:
    def alter(method: str, target: str, answer: RawAnswer) -> RawAnswer:
        if method == "GET" and target.startswith("/v1/conversations/conv_0000"):
            return RawAnswer(200, b'{"id":"x"}', content_type="application/json")
        if method == "GET" and target.startswith("/v1/risk-profiles/rp_") and answer.ok:
            return with_body(answer, lambda b: b.update(created_at=int(b["created_at"]) * 1000))  # type: ignore[call-overload]
        if method == "DELETE" and target.startswith("/v1/conversations/") and answer.ok:
            return with_body(answer, lambda body: body.pop("deleted"))
        return answer

    _, results = check(sandboxes, alter)
    lines = found(results)
    assert "get a conversation that does not exist: status: service sent 200, the sandbox 404" in (
        lines
    )
    assert "delete conversation #6: body /deleted: service sent nothing, the sandbox true" in lines
    assert any(
        line.startswith("get risk profile #1: body /created_at: service sent 1")
        and line.endswith("not a time in Unix seconds (0 to the end of year 9999)")
        for line in lines
    ), lines


def test_extra_fields_and_equal_numbers_written_otherwise_are_no_difference(
    sandboxes: tuple[conformance.Sandbox, conformance.Sandbox],
) -> None:
    def alter(method: str, target: str, answer: RawAnswer) -> RawAnswer:
        if method == "GET" and target.startswith("/v1/risk-profiles/rp_") and answer.ok:

            def change(body: dict[str, object]) -> None:
                body["region"] = "eu"
                body["score"] = float(body["score"])  # type: ignore[arg-type]

            return with_body(answer, change)
        return answer

    _, results = check(sandboxes, alter)
    assert found(results) == []


def test_records_of_others_in_a_shared_list_are_left_out_of_the_comparison(
    sandboxes: tuple[conformance.Sandbox, conformance.Sandbox],
) -> None:
    service, _ = sandboxes
    for n in range(3):
        made = service.side().send("POST", "/v1/conversations", b'{"contact_id":"other"}')
        other = json.loads(made.body)["id"]
        service.side().send("PUT", f"/v1/conversations/{other}", b'{"is_muted":true}')
        assert made.status == 200, n
    _, results = check(sandboxes)
    assert found(results) == []


def test_a_create_the_service_should_have_refused_is_cleaned_up_too(
    sandboxes: tuple[conformance.Sandbox, conformance.Sandbox],
) -> None:
    service, _ = sandboxes
    honest = service.side()

    def alter(method: str, target: str, answer: RawAnswer) -> RawAnswer:
        if method == "POST" and answer.status == 400 and target == "/v1/risk-profiles":
            body = b'{"customer_id":"c","profile_type":"t","score":1,"details":{}}'
            return honest.send("POST", target, body)
        return answer

    run, results = check(sandboxes, alter)
    assert "create a risk profile with a text score: status: service sent 200, the sandbox 400" in (
        found(results)
    )
    unexpected = [symbol for symbol in run.service.live if symbol.startswith("x")]
    assert len(unexpected) == 2
    run.clean_up()
    page = json.loads(honest.send("GET", "/v1/risk-profiles?customer_id=c", None).body)
    assert page["data"] == []


def test_the_sweep_for_the_marker_deletes_only_records_that_carry_it(
    sandboxes: tuple[conformance.Sandbox, conformance.Sandbox],
) -> None:
    service, _ = sandboxes
    honest = service.side()
    other = json.loads(honest.send("POST", "/v1/conversations", b'{"group_id":"team"}').body)
    run = conformance.Check(honest, sandboxes[1].side(), Contract.load(), conformance.new_run_id())
    steps = run.run()
    for _ in range(3):  # three conversations created
        next(steps)
    # A create whose answer was lost: made on the service, unknown to the check.
    lost = honest.send(
        "POST", "/v1/conversations", json.dumps({"group_id": run_marker(run)}).encode()
    )
    assert lost.status == 200
    ignoring = conformance.Side(
        lambda m, t, b: honest.send(m, t.split("?")[0] + "?limit=100" if m == "GET" else t, b),
        honest.send_bad_token,
        ids=run.service.ids,
        live=run.service.live,
        collections=run.service.collections,
    )
    run.service = ignoring  # a service that ignores the marker filter
    deleted, left = run.clean_up()
    assert left == [] and len(deleted) == 4
    assert json.loads(lost.body)["id"] in deleted
    remaining = json.loads(honest.send("GET", "/v1/conversations?limit=100", None).body)["data"]
    assert [record["id"] for record in remaining] == [other["id"]]


def run_marker(run: conformance.Check) -> str:
    return conformance.marker(run.run_id)


@pytest.mark.parametrize("depth", [300, 700])
def test_an_answer_nested_too_deep_is_a_difference_not_a_crash(
    sandboxes: tuple[conformance.Sandbox, conformance.Sandbox], depth: int
) -> None:
    deep = ("[" * depth + "]" * depth).encode()

    def alter(method: str, target: str, answer: RawAnswer) -> RawAnswer:
        if method == "GET" and answer.status == 200:
            body = answer.body.replace(b'"contact_id":null', b'"contact_id":' + deep, 1)
            return RawAnswer(answer.status, body, content_type=answer.content_type)
        return answer

    _, results = check(sandboxes, alter)
    lines = found(results)
    # Every step ran; the deep answer is a difference of the contract and of the comparison.
    assert len(results) == len(conformance.scenario("x"))
    step = "get conversation #1: "
    assert step + "contract: body: objects and arrays nest too deep to check" in lines
    assert any(line.startswith(step + "body: service sent JSON nested") for line in lines)
