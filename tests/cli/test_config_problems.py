"""Problems with the config file or a profile: each is reported once, naming the key or where
the profile came from, and the file is read once per run; `config show/get/unset` with none."""

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


def test_config_show_works_with_no_config_file(invoke: Invoke) -> None:
    result = invoke("config", "show").ok()
    assert "timeout" in result.stdout and "(default)" in result.stdout


def test_config_show_takes_env_settings_and_masks_the_token(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "tok_from_env_0123456789abcdef"
    monkeypatch.setenv("CONVRISK_BASE_URL", "https://api.example.com")
    monkeypatch.setenv("CONVRISK_TOKEN", token)
    result = invoke("config", "show").ok()
    assert "remote https://api.example.com" in result.stdout
    assert token not in result.stdout + result.stderr and "****cdef" in result.stdout


def test_config_show_works_when_the_file_has_no_default_table(
    invoke: Invoke, config_file: Path
) -> None:
    invoke("config", "set", "--profile", "staging", "timeout", "5").ok()
    assert "default" not in config_file.read_text()
    assert invoke("config", "show").ok()
    assert invoke("--profile", "default", "config", "show").ok()


def test_config_show_names_where_a_missing_profile_came_from(invoke: Invoke) -> None:
    result = invoke("config", "show", "--profile", "nope")
    assert result.code == 2 and "config show --profile" in result.stderr
    assert "(from --profile)" not in result.stderr


@pytest.mark.parametrize("command", ["get", "unset"])
def test_config_get_and_unset_of_an_unknown_profile_are_exit_2(
    invoke: Invoke, command: str
) -> None:
    result = invoke("config", command, "--profile", "nope", "base_url")
    assert result.code == 2 and "nope" in result.stderr
    assert invoke("config", command, "--profile", "default", "base_url").code in (0, 1)


def test_config_get_of_an_unset_key_is_exit_1_with_nothing_on_stdout(invoke: Invoke) -> None:
    result = invoke("config", "get", "timeout")
    assert result.code == 1 and result.stdout == ""


def test_a_config_error_names_the_key_once(invoke: Invoke) -> None:
    result = invoke("config", "set", "timeout", "0")
    assert result.code == 2
    assert result.stderr.count("timeout") == 1, result.stderr


def test_a_bad_value_in_the_config_file_names_the_key_once(
    invoke: Invoke, config_file: Path
) -> None:
    config_file.parent.mkdir(parents=True)
    config_file.write_text("[default]\ntimeout = 0\n")
    result = invoke("conv", "list")
    assert result.code == 2 and "[default]" in result.stderr
    assert result.stderr.count("timeout") == 1, result.stderr
