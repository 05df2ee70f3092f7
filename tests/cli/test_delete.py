"""Delete: asks on a terminal, --yes skips the question, and without either it refuses (exit 2)."""

from __future__ import annotations

from collections.abc import Callable

from tests.cli.conftest import Invoke

Make = Callable[[int], list[str]]
Terminal = Callable[..., None]


def test_without_a_terminal_and_without_yes_it_refuses(invoke: Invoke, conversations: Make) -> None:
    (a,) = conversations(1)
    result = invoke("conv", "delete", a)
    assert result.code == 2
    assert "--yes" in result.stderr and result.stderr.count("\n") == 1
    assert invoke("conv", "get", a).code == 0


def test_ids_from_stdin_need_yes(invoke: Invoke, conversations: Make, terminal: Terminal) -> None:
    (a,) = conversations(1)
    terminal("stdout", "stderr")  # stdin is the pipe of ids: nobody can answer
    result = invoke("conv", "delete", "-", input=f"{a}\n")
    assert result.code == 2 and "--yes" in result.stderr
    assert invoke("conv", "get", a).code == 0
    invoke("conv", "delete", "-", "--yes", "-o", "id", input=f"{a}\n").ok()
    assert invoke("conv", "get", a).code == 3


def test_on_a_terminal_yes_deletes(invoke: Invoke, conversations: Make, terminal: Terminal) -> None:
    a, b = conversations(2)
    terminal("stdin", "stderr")
    result = invoke("conv", "delete", a, b, "-o", "id", input="y\n")
    assert result.code == 0
    assert "Delete 2 conversations" in result.stderr
    assert invoke("conv", "get", a).code == 3 and invoke("conv", "get", b).code == 3


def test_on_a_terminal_no_keeps_everything_and_is_no_error(
    invoke: Invoke, conversations: Make, terminal: Terminal
) -> None:
    (a,) = conversations(1)
    terminal("stdin", "stderr")
    for answer in ("n\n", "\n"):  # the default is no
        result = invoke("conv", "delete", a, input=answer)
        assert result.code == 1
        assert result.stderr.endswith("Aborted: nothing was deleted.\n")
        assert "Error" not in result.stderr
    assert invoke("conv", "get", a).code == 0


def test_risk_delete_asks_too(invoke: Invoke, terminal: Terminal) -> None:
    args = ("risk", "create", "--customer-id", "c", "--profile-type", "t", "--score", "1")
    rid = invoke(*args, "-o", "id").ok().stdout.strip()
    assert invoke("risk", "delete", rid).code == 2
    terminal("stdin", "stderr")
    result = invoke("risk", "delete", rid, "-o", "json", input="yes\n")
    assert result.code == 0 and "Delete risk profile" in result.stderr
    assert invoke("risk", "get", rid).code == 3


def test_delete_of_a_missing_id_is_exit_3(invoke: Invoke, conversations: Make) -> None:
    (a,) = conversations(1)
    result = invoke("conv", "delete", "conv_01ARZ3NDEKTSV4RRFFQ69G5FAV", a, "--yes", "-o", "jsonl")
    assert result.code == 3
    assert result.jsonl() == [{"id": a, "deleted": True}]
    assert "conv_01ARZ3NDEKTSV4RRFFQ69G5FAV" in result.stderr
