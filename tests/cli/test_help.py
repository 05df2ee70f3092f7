"""Every command has help text with an example; the command tree is the one of DESIGN 3."""

from __future__ import annotations

from convrisk.cli.app import command
from tests.cli.conftest import Invoke, walk


def test_the_command_tree_is_the_designed_one() -> None:
    paths = {" ".join(path) for path, _ in walk(command())}
    verbs = ("list", "create", "get", "update", "delete", "import")
    expected = {"", "conv", "risk", "config", "serve", "status", "api", "history", "undo"}
    expected |= {f"{group} {verb}" for group in ("conv", "risk") for verb in verbs}
    config_verbs = ("set", "get", "unset", "show", "path", "profiles", "use")
    expected |= {f"config {verb}" for verb in config_verbs}
    sandbox_verbs = ("requests", "verify", "reset", "snapshot", "restore")
    expected |= {"sandbox", *(f"sandbox {verb}" for verb in sandbox_verbs), "check", "ui"}
    expected |= {"sandbox fault", *(f"sandbox fault {verb}" for verb in ("add", "list", "clear"))}
    assert paths == expected


def test_every_command_has_help_with_an_example(invoke: Invoke) -> None:
    for path, _ in walk(command()):
        result = invoke(*path, "--help").ok()
        assert result.stdout.startswith(f"Usage: convrisk {' '.join(path)}".rstrip()), path
        assert "Example:" in result.stdout, path
        assert "\n    convrisk " in result.stdout, path  # the example is a command line


def test_completion_stays_available(invoke: Invoke) -> None:
    shown = invoke("--help").ok().stdout
    assert "--install-completion" in shown and "--show-completion" in shown
