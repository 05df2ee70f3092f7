"""The variants of tests/e2e/test_version_and_help.py in-process: `--help` and `-h` at every
width, answered by the console script's fast path (cli/__main__.py) exactly as the app answers."""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path

import pytest

import convrisk.cli.__main__ as entry
from convrisk.cli.app import main as app_main


def no_terminal(fd: int = 1) -> os.terminal_size:
    """os.get_terminal_size as the e2e child has it: no terminal on any standard stream."""
    raise OSError(25, "Inappropriate ioctl for device")


@pytest.mark.parametrize("columns", [None, "80", "200", "79", "60", "x"])
@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_is_the_apps_help_at_any_width(
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    flag: str,
    columns: str | None,
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    if columns is not None:
        monkeypatch.setenv("COLUMNS", columns)
    monkeypatch.setattr(os, "get_terminal_size", no_terminal)
    monkeypatch.setattr(sys, "argv", ["convrisk", flag])
    try:
        code = entry.main()
    finally:
        gc.unfreeze()  # main() froze this process's objects, as it does before an exit
    script = capsys.readouterr()
    app_code = app_main([flag])
    app = capsys.readouterr()
    assert (code, script.out, script.err) == (0, app.out, "")
    assert app_code == 0 and app.out.startswith("Usage: convrisk ")
