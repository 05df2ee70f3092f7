"""The guards of a write (cli/guard.py) as every write command and `undo` call them: in-process,
over a config file with an ordinary, a protected and a read-only profile."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from convrisk.cli.context import AppContext
from convrisk.cli.errors import NotConfirmed, UsageProblem
from convrisk.cli.guard import check_write

from .conftest import Invoke


@pytest.fixture
def profiles(invoke: Invoke, home: Path) -> None:
    """Profiles `prod` (protected) and `ro` (read-only) beside `default`."""
    invoke("config", "set", "--profile", "prod", "protected", "true").ok()
    invoke("config", "set", "--profile", "ro", "read_only", "on").ok()


def run_of(profile: str, **env: str) -> AppContext:
    import os

    run = AppContext({**os.environ, **env})
    run.flags.profile = profile
    return run


def test_a_protected_create_on_a_terminal_writes_when_1_is_typed_back(
    invoke: Invoke, profiles: None, terminal: Callable[..., None]
) -> None:
    terminal("stdin", "stderr")
    made = invoke(
        "--profile", "prod", "conv", "create", "--contact-id", "c", "-o", "id", input="1\n"
    )
    made.ok()
    assert "Type the number of records (1) to create a conversation" in made.stderr
    refused = invoke("--profile", "prod", "conv", "create", "--contact-id", "c", input="one\n")
    assert refused.code == 1
    assert refused.stderr.endswith("Aborted (the answer was not 1): nothing was sent.\n")
    listed = invoke("conv", "list", "-o", "id").ok()
    assert listed.lines() == [made.stdout.strip()]


def test_a_typed_back_count_may_group_its_digits(
    profiles: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from convrisk.cli.output.printer import Printer

    monkeypatch.setattr(Printer, "can_ask", lambda self, stdin_free=True: True)
    monkeypatch.setattr(Printer, "type_back", lambda self, q, stdin_free=True: " 1,200\n")
    check_write(
        run_of("prod"), count=1200, what="undo journal entries", max_affected=None, yes=False
    )
    monkeypatch.setattr(Printer, "type_back", lambda self, q, stdin_free=True: "120\n")
    with pytest.raises(NotConfirmed):
        check_write(
            run_of("prod"), count=1200, what="undo journal entries", max_affected=None, yes=False
        )


def test_undo_s_count_over_max_affected_is_refused_naming_both(profiles: None) -> None:
    with pytest.raises(UsageProblem) as caught:
        check_write(
            run_of("default"), count=5, what="undo journal entries", max_affected=4, yes=True
        )
    assert caught.value.message == (
        "This would undo journal entries: 5 records, more than --max-affected 4; nothing was sent."
    )
    assert caught.value.param == "--max-affected"


def test_an_unknown_count_under_max_affected_is_refused(profiles: None) -> None:
    with pytest.raises(UsageProblem, match="not known before it runs"):
        check_write(run_of("default"), count=None, what="send POST /v1/x", max_affected=3, yes=True)


def test_a_count_that_costs_is_not_taken_for_an_ordinary_profile(profiles: None) -> None:
    """Ids from stdin stay a stream: they are read ahead only for a question or a cap."""

    def count() -> int:
        raise AssertionError("counted")

    check_write(
        run_of("default"), count=count, what="delete conversations", max_affected=None, yes=False
    )
    check_write(
        run_of("prod"), count=count, what="delete conversations", max_affected=None, yes=True
    )


def test_printing_requests_as_curl_passes_every_guard(profiles: None) -> None:
    for profile in ("ro", "prod"):
        run = run_of(profile)
        run.as_curl = True
        check_write(run, count=10, what="delete conversations", max_affected=None, yes=False)


def test_the_environment_can_set_a_mark_but_not_lift_the_profile_s(profiles: None) -> None:
    assert run_of("default", CONVRISK_PROTECTED="yes").settings().protected is True
    assert run_of("prod", CONVRISK_PROTECTED="false").settings().protected is True
    assert run_of("ro", CONVRISK_READ_ONLY="0").settings().read_only is True
    assert run_of("ro").settings().sources["read_only"] == "profile ro"


def test_config_show_lists_both_marks_and_where_they_come_from(
    invoke: Invoke, profiles: None
) -> None:
    shown = invoke("--profile", "ro", "config", "show").ok().lines()
    assert "read_only            true  (profile ro)" in shown
    assert "protected            false  (default)" in shown


def test_a_protected_import_of_an_empty_file_asks_nothing(
    invoke: Invoke, profiles: None, terminal: Callable[..., None], tmp_path: Path
) -> None:
    terminal("stdin", "stderr")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    result = invoke("--profile", "prod", "conv", "import", str(empty), input="")
    result.ok()
    assert "Type the number" not in result.stderr and "Protected profile" not in result.stderr
