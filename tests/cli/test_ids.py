"""Several ids and `-` (ids from stdin): go on past failures, report each, exit with the first."""

from __future__ import annotations

import json
from collections.abc import Callable

from tests.cli.conftest import Invoke

Make = Callable[[int], list[str]]


def test_ids_from_stdin_skip_blank_lines(invoke: Invoke, conversations: Make) -> None:
    a, b = conversations(2)
    result = invoke("conv", "get", "-", "-o", "jsonl", input=f"{a}\n\n  \n{b}\n").ok()
    assert [c["id"] for c in result.jsonl()] == [a, b]


def test_stdin_ids_are_always_a_json_array(invoke: Invoke, conversations: Make) -> None:
    (a,) = conversations(1)
    result = invoke("conv", "get", "-", "-o", "json", input=f"{a}\n").ok()
    assert [c["id"] for c in result.json()] == [a]


def test_an_empty_list_is_success(invoke: Invoke) -> None:
    assert invoke("conv", "get", "-", "-o", "json", input="").ok().json() == []
    assert invoke("conv", "update", "-", "--mute", "-o", "jsonl", input="\n\n").ok().stdout == ""
    assert invoke("risk", "delete", "-", "--yes", "-o", "id", input="").ok().stdout == ""


def test_failures_are_reported_with_their_id_and_the_rest_goes_on(
    invoke: Invoke, conversations: Make
) -> None:
    a, b = conversations(2)
    result = invoke(
        "conv",
        "update",
        a,
        "conv_01ARZ3NDEKTSV4RRFFQ69G5FA1",
        b,
        "conv_01ARZ3NDEKTSV4RRFFQ69G5FA2",
        "--mute",
        "-o",
        "id",
    )
    assert result.code == 3
    assert result.lines() == [a, b]
    errors = result.stderr.splitlines()
    assert len(errors) == 2
    assert (
        "conv_01ARZ3NDEKTSV4RRFFQ69G5FA1" in errors[0]
        and "conv_01ARZ3NDEKTSV4RRFFQ69G5FA2" in errors[1]
    )
    muted = invoke("conv", "list", "--muted", "-o", "id").ok().lines()
    assert set(muted) == {a, b}


def test_json_errors_per_id_are_json_lines(invoke: Invoke) -> None:
    result = invoke(
        "risk",
        "get",
        "rp_01ARZ3NDEKTSV4RRFFQ69G5FA1",
        "rp_01ARZ3NDEKTSV4RRFFQ69G5FA2",
        "-o",
        "json",
    )
    assert result.code == 3
    assert result.json() == []
    ids = [json.loads(line)["error"]["id"] for line in result.stderr.splitlines()]
    assert ids == ["rp_01ARZ3NDEKTSV4RRFFQ69G5FA1", "rp_01ARZ3NDEKTSV4RRFFQ69G5FA2"]


def test_dash_must_stand_alone(invoke: Invoke, conversations: Make) -> None:
    (a,) = conversations(1)
    result = invoke("conv", "get", a, "-", input=f"{a}\n")
    assert result.code == 2 and "'-'" in result.stderr
    assert result.stdout == ""


def test_list_ids_pipe_into_update(invoke: Invoke, conversations: Make) -> None:
    ids = conversations(4)
    listed = invoke("conv", "list", "-o", "id").ok().stdout
    invoke("conv", "update", "-", "--pin", "-o", "id", input=listed).ok()
    assert invoke("conv", "list", "--pinned", "-o", "id").ok().lines() == ids
