"""A broken config file is read once per run: the error path reports the failure it remembers
instead of reading the file again (which crashed a second time before)."""

from __future__ import annotations

from pathlib import Path

import pytest

from convrisk.cli import context
from convrisk.cli.settings import ConfigFile, read_config
from tests.cli.conftest import Invoke

BROKEN = {
    "not UTF-8": b"[default]\n\xff\n",
    "nested 5000 deep": b"a = " + b"[" * 5000 + b"]" * 5000 + b"\n",
    "invalid TOML": b"[default\n",
}
COMMANDS = {
    "conv list": ("conv", "list"),
    "conv list -o json": ("conv", "list", "-o", "json"),
    "config show": ("config", "show"),
    "config set": ("config", "set", "timeout", "5"),
    "config get": ("config", "get", "timeout"),
    "serve": ("serve", "--port", "0"),
    "a usage error first": ("conv", "frob"),
}


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The paths the run read as its config file, in order."""
    seen: list[Path] = []

    def counted(path: Path) -> ConfigFile:
        seen.append(path)
        return read_config(path)

    monkeypatch.setattr(context, "read_config", counted)
    return seen


@pytest.mark.parametrize("broken", BROKEN)
@pytest.mark.parametrize("command", COMMANDS)
def test_a_broken_config_file_is_read_once_and_reported_once(
    invoke: Invoke, config_file: Path, reads: list[Path], broken: str, command: str
) -> None:
    config_file.parent.mkdir(parents=True)
    config_file.write_bytes(BROKEN[broken])
    result = invoke(*COMMANDS[command])
    assert result.code == 2 and result.stdout == ""
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert reads == [config_file]
    if command != "a usage error first":
        assert str(config_file) in result.stderr
    if command == "conv list -o json":
        assert result.stderr.startswith('{"error": {"type": "usage_error"')


def test_a_good_config_file_is_read_once_per_run(
    invoke: Invoke, config_file: Path, reads: list[Path]
) -> None:
    invoke("config", "set", "page_size", "20").ok()
    assert reads == [config_file]
    reads.clear()
    invoke("config", "show").ok()
    invoke("conv", "list").ok()
    assert reads == [config_file, config_file]
