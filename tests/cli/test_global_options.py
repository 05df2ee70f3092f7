"""Global options (--debug, --db, --profile, --base-url) mean the same before or after the
command, the last one given wins, and every command's help lists those it takes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from convrisk.cli.app import command
from tests.cli.conftest import Invoke, walk

Make = Callable[[int], list[str]]


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (["--debug", "conv", "list"], ["conv", "list", "--debug"]),
        (["conv", "--debug", "list"], ["conv", "list", "--debug"]),
        (["--debug", "config", "path"], ["config", "path", "--debug"]),
    ],
)
def test_debug_after_the_command_is_debug_before_it(
    invoke: Invoke, before: list[str], after: list[str]
) -> None:
    first, second = invoke(*before).ok(), invoke(*after).ok()
    assert first.stdout == second.stdout
    assert ("debug: " in first.stderr) == ("debug: " in second.stderr)
    if before[1] == "conv":
        assert "debug: convrisk.cli: profile default" in second.stderr


def test_db_and_profile_after_the_command_mean_what_they_mean_before_it(
    invoke: Invoke, tmp_path: Path, conversations: Make
) -> None:
    conversations(2)  # in the default database
    other = str(tmp_path / "other.db")
    made = invoke("conv", "create", "--contact-id", "c_x", "-o", "id", "--db", other).ok()
    assert invoke("conv", "list", "-o", "id", "--db", other).ok().lines() == [made.stdout.strip()]
    assert invoke("--db", other, "conv", "list", "-o", "id").ok().lines() == [made.stdout.strip()]
    assert len(invoke("conv", "list", "-o", "id").ok().lines()) == 2
    missing = invoke("conv", "list", "--profile", "nope")
    assert missing.code == 2 and "No profile 'nope'" in missing.stderr
    assert invoke("risk", "get", "rp_x", "--base-url", "ftp://x").code == 2


def test_the_last_global_option_given_wins(invoke: Invoke, tmp_path: Path) -> None:
    a, b = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    made = invoke("--db", a, "conv", "create", "--contact-id", "c", "-o", "id", "--db", b).ok()
    assert invoke("conv", "get", made.stdout.strip(), "--db", b).code == 0
    assert invoke("conv", "get", made.stdout.strip(), "--db", a).code == 3


def test_every_command_lists_the_global_options_it_takes(invoke: Invoke) -> None:
    for path, cmd in walk(command()):
        if not path:
            continue
        shown = invoke(*path, "--help").ok().stdout
        section = shown.split("Global options (before or after the command):\n", 1)[1]
        section = section.split("\n\n", 1)[0]
        own = {opt for param in cmd.params for opt in param.opts}
        for option in ("--profile P", "--base-url URL", "--db PATH", "--debug"):
            # Only `config ... --profile` and `serve --db` have an option of that name.
            assert (option in section) == (option.split()[0] not in own), (path, option)
