"""`convrisk --version` and `convrisk --help` are answered by cli/__main__.py without loading the
app (typer, click, pydantic): the answers must be byte for byte the app's own. `--help` and `-h`
at every width run in-process in tests/cli/test_version_and_help.py."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import pytest

from convrisk.api_client import __version__
from convrisk.cli.__main__ import root_help

from .console import CONVRISK, SAFETY_TIMEOUT, assert_loads_none_of, run

ROOT_HELP = Path(__file__).resolve().parents[2] / "cli" / "root_help.txt"


def app_output(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """What cli.app.main (the whole app, no fast path) prints for these arguments."""
    return subprocess.run(
        [
            sys.executable,
            "-c",
            f"from convrisk.cli.app import main; raise SystemExit(main({list(args)!r}))",
        ],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=SAFETY_TIMEOUT,
    )


def test_the_stored_root_help_is_what_the_app_prints(env: dict[str, str]) -> None:
    """cli/root_help.txt is regenerated with CONVRISK_UPDATE_SNAPSHOTS=1 when the help changes."""
    app = app_output({**env, "COLUMNS": "80"}, "--help")
    assert app.returncode == 0, app.stderr
    if os.environ.get("CONVRISK_UPDATE_SNAPSHOTS") == "1":
        ROOT_HELP.write_text(app.stdout, encoding="utf-8")
    assert root_help() == app.stdout, (
        "cli/root_help.txt is out of date: run "
        "CONVRISK_UPDATE_SNAPSHOTS=1 .venv/bin/pytest tests/e2e/test_version_and_help.py"
    )


def test_help_is_the_apps_help_at_any_width(env: dict[str, str]) -> None:
    # No COLUMNS, on a pipe: the stored help. -h, and COLUMNS of every kind, in-process.
    flag = "--help"
    script = run(env, flag)
    app = app_output(env, flag)
    assert (script.returncode, script.stdout, script.stderr) == (0, app.stdout, "")
    assert app.returncode == 0 and app.stdout.startswith("Usage: convrisk ")


def test_version_is_the_apps_version(env: dict[str, str]) -> None:
    script = run(env, "--version")
    assert (script.returncode, script.stdout, script.stderr) == (0, f"convrisk {__version__}\n", "")
    assert app_output(env, "--version").stdout == script.stdout
    assert run(env, "--debug", "--version").stdout == script.stdout  # through the app


def test_version_and_help_load_neither_typer_nor_click(env: dict[str, str]) -> None:
    # What a fresh interpreter loads can only be seen in one: each answer of the fast path (a
    # branch of its own each) in a child of its own.
    heavy = {
        "typer",
        "click",
        "pydantic",
        "rich",
        "httpx",
        "convrisk.cli.app",
        "convrisk.local_backend",
    }
    for args in (["--version"], ["--help"], ["-h"]):
        call = (
            f"sys.argv = ['convrisk', *{args!r}]\n"
            "from convrisk.cli.__main__ import main\ncode = main()\n"
        )
        assert_loads_none_of(env, call, heavy)


def test_a_closed_pipe_ends_version_and_help_quietly(env: dict[str, str]) -> None:
    # A pipe whose reader is gone exists only between processes: both answers, each in a child.
    for args in (["--version"], ["--help"]):
        read_end, write_end = os.pipe()
        os.close(read_end)  # the reader is gone before anything is written
        try:
            result = subprocess.run(
                [str(CONVRISK), *args],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=write_end,
                stderr=subprocess.PIPE,
                timeout=SAFETY_TIMEOUT,
            )
        finally:
            os.close(write_end)
        assert (result.returncode, result.stderr) == (0, b""), args


def test_shell_completion_still_reaches_the_app(env: dict[str, str]) -> None:
    """typer's completion runs the program with _CONVRISK_COMPLETE set: the app answers it."""
    env = {**env, "_CONVRISK_COMPLETE": "complete_bash", "COMP_WORDS": "convrisk --he"}
    env["COMP_CWORD"] = "1"
    result = run(env, "--help")
    assert result.returncode == 0, result.stderr
    assert not result.stdout.startswith("Usage:")
    assert "--help" in result.stdout


def test_help_without_the_stored_file_is_rendered_by_the_app(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import convrisk.cli.__main__ as entry

    def missing() -> str:
        raise FileNotFoundError("root_help.txt")

    monkeypatch.setattr(entry, "root_help", missing)
    monkeypatch.setattr(sys, "argv", ["convrisk", "--help"])
    monkeypatch.setenv("COLUMNS", "80")
    try:
        assert entry.main() == 0
    finally:
        gc.unfreeze()  # main() froze this process's objects, as it does before an exit
    assert capsys.readouterr().out == ROOT_HELP.read_text(encoding="utf-8")
