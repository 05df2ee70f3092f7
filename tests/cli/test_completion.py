"""The variants of tests/e2e/test_completion.py in-process: the completion script of each shell,
as typer's completion prints it when the program runs with _CONVRISK_COMPLETE set."""

from __future__ import annotations

from pathlib import Path

import pytest

from convrisk.cli.app import main


def completing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], **env: str
) -> tuple[int | str | None, str]:
    """Run convrisk with no arguments and `env` set, as a shell's completion does: its exit
    code (typer's completion exits the program) and stdout."""
    with monkeypatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        try:
            code: int | str | None = main([])
        except SystemExit as exited:
            code = exited.code
    return code, capsys.readouterr().out


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_each_shell_gets_a_completion_script(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], shell: str
) -> None:
    code, out = completing(monkeypatch, capsys, _CONVRISK_COMPLETE=f"source_{shell}")
    assert code == 0
    assert f"_CONVRISK_COMPLETE=complete_{shell}" in out
