"""Issue 9 hardening of settings and files, in-process: every variant of the behaviours
tests/e2e/test_settings_hardening.py runs once through the installed script (each command a
broken config file breaks, every numeric setting and bad value, every exposing mode, a symlink
of one hop or two), under the same test names."""

from __future__ import annotations

import os
import re
import stat
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import Invoke, Result

TOKEN = "tok_live_abcdefghijklmnop_1234"
COMMANDS = {
    "conv list": ("conv", "list"),
    "config show": ("config", "show"),
    "config set": ("config", "set", "timeout", "5"),
    "config get": ("config", "get", "timeout"),
    "config unset": ("config", "unset", "timeout"),
}
BOUNDS = {
    "timeout": ("0.1 to 3600", ["1e10", "0.05", "0", "-1", "nan", "inf", "3601"]),
    "max_retries": ("0 to 10", ["11", "-1", "1e10", "2.5"]),
    "page_size": ("1 to 100", ["0", "101", "1e10"]),
    "max_response_mb": ("1 to 4096", ["0", "4097", "1.5", "1e10"]),
}
GOOD = {
    "timeout": ["0.1", "3600", "2.5"],
    "max_retries": ["0", "10"],
    "page_size": ["1", "100"],
    "max_response_mb": ["1", "4096", "64"],
}


def write_config(path: Path, content: bytes, mode: int = 0o600) -> Path:
    """The config file at `path` with `content` and `mode`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    path.chmod(mode)
    return path


def mode_of(path: Path) -> int:
    """A file's permission bits."""
    return stat.S_IMODE(path.stat().st_mode)


def assert_one_line_error(result: Result, *named: str) -> None:
    """Exit 2 with one `Error:` line on stderr naming each of `named`, and nothing on stdout."""
    assert result.code == 2, (result.code, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Error: "), result.stderr
    for name in named:
        assert name in lines[0], (name, result.stderr)
    assert result.stdout == ""


@pytest.fixture
def umask_022() -> Iterator[None]:
    """A permissive umask for the test (this process's, as the installed script's would be)."""
    before = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(before)


@pytest.mark.parametrize("command", COMMANDS)
def test_a_config_file_that_is_not_utf8_is_one_line_naming_it(
    invoke: Invoke, config_file: Path, command: str
) -> None:
    path = write_config(config_file, b"[default]\ntimeout = 3\n\xff\n")
    assert_one_line_error(invoke(*COMMANDS[command]), str(path), "UTF-8", "line 3")
    assert path.read_bytes() == b"[default]\ntimeout = 3\n\xff\n"


@pytest.mark.parametrize("command", COMMANDS)
def test_a_config_file_nested_5000_deep_is_one_line_naming_it(
    invoke: Invoke, config_file: Path, command: str
) -> None:
    content = b"[default]\na = " + b"[" * 5000 + b"]" * 5000 + b"\n"
    path = write_config(config_file, content)
    assert_one_line_error(invoke(*COMMANDS[command]), str(path), "too deeply")
    assert path.read_bytes() == content


@pytest.mark.parametrize("command", ["conv list", "config show", "config set"])
def test_a_config_path_that_is_a_directory_is_one_line_naming_it(
    invoke: Invoke, config_file: Path, command: str
) -> None:
    config_file.mkdir(parents=True)
    assert_one_line_error(invoke(*COMMANDS[command]), str(config_file), "directory")


def test_a_config_symlink_loop_is_one_line_naming_it(invoke: Invoke, config_file: Path) -> None:
    config_file.parent.mkdir(parents=True)
    config_file.symlink_to(config_file)
    for command in ("conv list", "config show", "config set"):
        assert_one_line_error(invoke(*COMMANDS[command]), str(config_file))


@pytest.mark.parametrize("key", BOUNDS)
def test_an_out_of_range_value_from_the_environment_is_refused(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch, key: str
) -> None:
    span, bad_values = BOUNDS[key]
    for bad in bad_values:
        monkeypatch.setenv(f"CONVRISK_{key.upper()}", bad)
        assert_one_line_error(invoke("conv", "list"), f"CONVRISK_{key.upper()}", key, span)


@pytest.mark.parametrize("key", BOUNDS)
def test_an_out_of_range_value_from_config_set_is_refused(
    invoke: Invoke, config_file: Path, key: str
) -> None:
    span, bad_values = BOUNDS[key]
    for bad in bad_values:
        assert_one_line_error(invoke("config", "set", "--", key, bad), key, span)
    assert not config_file.exists()


@pytest.mark.parametrize("key", BOUNDS)
def test_an_out_of_range_value_in_the_config_file_is_refused(
    invoke: Invoke, config_file: Path, key: str
) -> None:
    span, bad_values = BOUNDS[key]
    for bad in bad_values:
        path = write_config(config_file, f"[default]\n{key} = {bad}\n".encode())
        assert_one_line_error(invoke("conv", "list"), str(path), "[default]", key, span)


@pytest.mark.parametrize("key", BOUNDS)
def test_a_value_of_the_wrong_toml_type_is_refused_naming_the_range(
    invoke: Invoke, config_file: Path, key: str
) -> None:
    span, _ = BOUNDS[key]
    for literal in ("[1, 2]", "{ a = 1 }", "true", "1979-05-27", "'soon'"):
        write_config(config_file, f"[default]\n{key} = {literal}\n".encode())
        assert_one_line_error(invoke("conv", "list"), key, span)


@pytest.mark.parametrize("key", BOUNDS)
def test_the_ends_of_each_range_are_accepted(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch, key: str
) -> None:
    for good in GOOD[key]:
        assert invoke("config", "set", key, good).code == 0
        from_file = invoke("config", "show").ok()
        assert re.search(
            rf"^{key}\s+{re.escape(good)}(\.0)?\s+\(profile default\)$", from_file.stdout, re.M
        ), from_file.stdout
        with monkeypatch.context() as env:
            env.setenv(f"CONVRISK_{key.upper()}", good)
            invoke("conv", "list").ok()


def warning_line(path: Path, mode: str) -> str:
    """The warning for a config file that holds a token and others can read."""
    return (
        f"Warning: config file {path} holds a token and is readable by others "
        f"(mode {mode}): run chmod 600 {path}"
    )


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604], ids=["0644", "0640", "0604"])
def test_a_config_file_with_a_token_readable_by_others_is_warned_about(
    invoke: Invoke, config_file: Path, mode: int
) -> None:
    path = write_config(config_file, f"[default]\ntoken = '{TOKEN}'\n".encode(), mode=mode)
    result = invoke("conv", "list").ok()
    assert result.stderr.splitlines() == [warning_line(path, f"0{mode:o}")]
    assert TOKEN not in result.stderr
    shown = invoke("config", "show").ok()
    assert shown.stderr.splitlines() == [warning_line(path, f"0{mode:o}")]


@pytest.mark.parametrize("hops", [1, 2])
def test_config_set_keeps_a_symlinked_config_file_a_symlink(
    invoke: Invoke, home: Path, config_file: Path, umask_022: None, hops: int
) -> None:
    dotfiles = home / "dotfiles"
    dotfiles.mkdir()
    target = dotfiles / "convrisk.toml"
    target.write_text("[default]\npage_size = 50\n")
    target.chmod(0o644)
    link = config_file
    link.parent.mkdir(parents=True)
    if hops == 2:
        middle = dotfiles / "current.toml"
        middle.symlink_to("convrisk.toml")  # relative, as dotfiles managers make them
        link.symlink_to(middle)
    else:
        link.symlink_to(os.path.relpath(target, link.parent))
    before = os.readlink(link)
    invoke("config", "set", "timeout", "5").ok()
    assert link.is_symlink() and os.readlink(link) == before
    assert tomllib.loads(target.read_text()) == {"default": {"page_size": 50, "timeout": 5}}
    assert mode_of(target) == 0o600
    assert sorted(p.name for p in link.parent.iterdir()) == ["config.toml"]
    assert sorted(p.name for p in dotfiles.iterdir()) == sorted(
        ["convrisk.toml"] + (["current.toml"] if hops == 2 else [])
    )
    invoke("config", "unset", "page_size").ok()
    assert link.is_symlink()
    assert tomllib.loads(target.read_text()) == {"default": {"timeout": 5}}
