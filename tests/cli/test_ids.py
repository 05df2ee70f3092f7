"""Several ids and `-` (ids from stdin): go on past failures, report each, exit with the first."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

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


def test_an_id_no_tool_mints_is_a_usage_error_and_the_rest_goes_on(
    invoke: Invoke, conversations: Make
) -> None:
    a, b = conversations(2)
    result = invoke("conv", "get", a, "conv_01M8", b, "rp_" + "0" * 26, "-o", "id")
    assert result.code == 2
    assert result.lines() == [a, b]
    errors = result.stderr.splitlines()
    assert len(errors) == 2
    assert errors[0] == (
        "Error: 'conv_01M8' is not a conversation id: conversation ids are conv_ and 26 "
        "characters of 0-9 and A-Z without I, L, O or U."
    )
    assert "it is a risk profile id" in errors[1]


def test_a_line_on_stdin_too_long_for_an_id_is_refused_by_its_start(
    invoke: Invoke, conversations: Make
) -> None:
    a, b = conversations(2)
    giant = "conv_" + "\x1b[2J" * 100_000
    result = invoke("conv", "get", "-", "-o", "id", input=f"{a}\n{giant}\n{b}\n")
    assert result.code == 2
    assert result.lines() == [a, b]
    (line,) = result.stderr.splitlines()
    assert "longer than 255 characters" in line and len(line) < 300
    assert "\x1b" not in line


def test_ids_are_read_from_stdin_a_bounded_line_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import io
    import sys

    from convrisk.cli.options.values import id_list

    lines = b"conv_1\r\n\n" + b"x" * 5_000_000 + b"\n" + b" \xff \n" + b"conv_2"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(lines)))
    read = list(id_list(["-"]))
    assert read[0] == "conv_1" and read[2:] == ["\udcff", "conv_2"]
    # Of the 5 MB line only the start was kept: still too long for any id.
    assert 255 < len(read[1]) <= 4 * 255 + 2
