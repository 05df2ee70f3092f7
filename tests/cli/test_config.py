"""`convrisk config`: set, get, unset, show and path; a TOML file written atomically, mode 0600."""

from __future__ import annotations

import os
import stat
import tomllib
from pathlib import Path

import pytest

from tests.cli.conftest import Invoke

TOKEN = "tok_live_abcdefghijklmnop_1234"


def read(path: Path) -> dict[str, dict[str, object]]:
    return tomllib.loads(path.read_text(encoding="utf-8"))


def test_path_follows_xdg_and_convrisk_config(
    invoke: Invoke, config_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert invoke("config", "path").ok().stdout == f"{config_file}\n"
    monkeypatch.setenv("CONVRISK_CONFIG", str(tmp_path / "elsewhere.toml"))
    assert invoke("config", "path").ok().stdout == f"{tmp_path / 'elsewhere.toml'}\n"


def test_set_writes_typed_values_to_the_active_profile(invoke: Invoke, config_file: Path) -> None:
    invoke("config", "set", "base_url", "https://api.example.com/").ok()
    invoke("config", "set", "timeout", "2.5").ok()
    invoke("config", "set", "max_retries", "0").ok()
    invoke("config", "set", "--profile", "staging", "page_size", "50").ok()
    invoke("--profile", "ci", "config", "set", "output", "jsonl").ok()
    assert read(config_file) == {
        "default": {"base_url": "https://api.example.com", "timeout": 2.5, "max_retries": 0},
        "staging": {"page_size": 50},
        "ci": {"output": "jsonl"},
    }


def test_the_file_has_mode_0600_and_is_replaced_atomically(
    invoke: Invoke, config_file: Path
) -> None:
    invoke("config", "set", "timeout", "5").ok()
    assert stat.S_IMODE(config_file.stat().st_mode) == 0o600
    config_file.chmod(0o644)
    before = config_file.stat().st_ino
    invoke("config", "set", "timeout", "6").ok()
    # A new file was renamed over the old one (a reader never sees half a file), still 0600.
    assert config_file.stat().st_ino != before
    assert stat.S_IMODE(config_file.stat().st_mode) == 0o600
    assert sorted(p.name for p in config_file.parent.iterdir()) == ["config.toml"]


def test_a_failed_write_leaves_the_old_file_whole(
    invoke: Invoke, config_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    invoke("config", "set", "timeout", "5").ok()
    before = config_file.read_bytes()

    def disk_full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    result = invoke("config", "set", "timeout", "7")
    assert result.code == 2 and "No space left" in result.stderr
    assert config_file.read_bytes() == before
    assert sorted(p.name for p in config_file.parent.iterdir()) == ["config.toml"]


def test_set_refuses_unknown_keys_and_bad_values(invoke: Invoke, config_file: Path) -> None:
    cases = {
        ("colour", "red"): "Unknown setting",
        ("base_url", "ftp://x"): "http",
        ("base_url", "not a url"): "http",
        ("timeout", "soon"): "number",
        ("timeout", "0"): "0.1 to 3600",
        ("max_retries", "-1"): "0 to 10",
        ("max_retries", "1.5"): "whole number",
        ("page_size", "101"): "1 to 100",
        ("output", "yaml"): "table, json",
        ("token", "has space"): "spaces",
    }
    for (key, value), named in cases.items():
        result = invoke("config", "set", "--", key, value)
        assert result.code == 2, key
        assert named in result.stderr and result.stderr.count("\n") == 1, result.stderr
    assert invoke("config", "set", "--profile", "bad name", "timeout", "1").code == 2
    assert not config_file.exists()


def test_token_from_stdin_is_stored_but_never_shown(invoke: Invoke, config_file: Path) -> None:
    stored = invoke("config", "set", "token", "-", input=f"{TOKEN}\n").ok()
    assert TOKEN not in stored.stdout + stored.stderr
    assert read(config_file)["default"]["token"] == TOKEN
    got = invoke("config", "get", "token").ok()
    assert got.stdout == "****1234\n"
    shown = invoke("config", "show").ok()
    assert TOKEN not in shown.stdout and "****1234" in shown.stdout
    empty = invoke("config", "set", "token", "-", input="")
    assert empty.code == 2 and "stdin" in empty.stderr


def test_a_token_given_inline_gets_a_tip(invoke: Invoke) -> None:
    result = invoke("config", "set", "token", TOKEN).ok()
    assert "config set token` asks" in result.stderr and TOKEN not in result.stderr


def test_get_prints_only_the_value_or_nothing(invoke: Invoke) -> None:
    invoke("config", "set", "page_size", "25").ok()
    assert invoke("config", "get", "page_size").ok().stdout == "25\n"
    unset = invoke("config", "get", "base_url")
    assert unset.code == 1  # as `git config` does for a key that is not set
    assert unset.stdout == "" and "not set" in unset.stderr
    assert invoke("config", "get", "nope").code == 2


def test_unset_removes_the_key_and_empty_profiles(invoke: Invoke, config_file: Path) -> None:
    invoke("config", "set", "--profile", "p", "timeout", "3").ok()
    invoke("config", "set", "page_size", "9").ok()
    invoke("config", "unset", "--profile", "p", "timeout").ok()
    assert read(config_file) == {"default": {"page_size": 9}}
    again = invoke("config", "unset", "page_size").ok()
    again = invoke("config", "unset", "page_size").ok()
    assert "not set" in again.stderr
    assert invoke("config", "unset", "colour").code == 2


def test_show_lists_every_setting_with_its_source(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch, db_path: Path
) -> None:
    invoke("config", "set", "page_size", "40").ok()
    monkeypatch.setenv("CONVRISK_TIMEOUT", "9")
    lines = {line.split()[0]: line for line in invoke("config", "show").ok().lines()}
    assert "(profile default)" in lines["page_size"] and " 40 " in lines["page_size"]
    assert "(CONVRISK_TIMEOUT)" in lines["timeout"] and " 9" in lines["timeout"]
    assert "(default)" in lines["max_retries"]
    assert f"local {db_path}" in lines["backend"]
    assert set(lines) >= {"profile", "file", "backend", "base_url", "token", "db", "output"}


def test_an_unknown_profile_is_a_usage_error(invoke: Invoke) -> None:
    result = invoke("--profile", "nosuch", "conv", "list")
    assert result.code == 2 and "nosuch" in result.stderr
    env_chosen = invoke("config", "show", "--profile", "nosuch")
    assert env_chosen.code == 2


def test_a_broken_config_file_is_a_usage_error_naming_it(invoke: Invoke, config_file: Path) -> None:
    config_file.parent.mkdir(parents=True)
    config_file.write_text("[default\ntimeout = 3\n", encoding="utf-8")
    result = invoke("conv", "list")
    assert result.code == 2 and str(config_file) in result.stderr
    config_file.write_text("[default]\ntimeout = 'soon'\n", encoding="utf-8")
    result = invoke("conv", "list")
    assert result.code == 2 and "timeout" in result.stderr
    config_file.write_text("[default]\nbase-url = 'http://x'\n", encoding="utf-8")
    result = invoke("conv", "list")
    assert result.code == 2 and "base-url" in result.stderr
    # config set still works, to repair the file.
    config_file.write_text("[default]\ntimeout = 'soon'\n", encoding="utf-8")
    invoke("config", "set", "timeout", "3").ok()
    invoke("conv", "list").ok()


def test_a_config_write_gives_up_on_a_lock_held_too_long_and_writes_nothing(
    config_file: Path,
) -> None:
    import fcntl
    import time

    from convrisk.cli.errors import ConfigLocked
    from convrisk.cli.settings import locked_config, save_config

    config_file.parent.mkdir(parents=True, exist_ok=True)
    config_file.write_text("[default]\npage_size = 5\n")
    config_file.chmod(0o600)
    fd = os.open(config_file.with_name(".config.toml.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        started = time.monotonic()
        with (
            pytest.raises(ConfigLocked, match="another convrisk") as caught,
            locked_config(config_file, wait=0.3),
        ):
            save_config(config_file, {"default": {"page_size": 6}})
        assert 0.3 <= time.monotonic() - started < 5
    finally:
        os.close(fd)
    assert str(config_file) in caught.value.message
    assert config_file.read_text() == "[default]\npage_size = 5\n"


def test_a_config_write_locks_out_another_until_it_is_done(config_file: Path) -> None:
    from convrisk.cli.errors import ConfigLocked
    from convrisk.cli.settings import locked_config, save_config

    with locked_config(config_file) as current:
        assert current.profiles == {}
        with pytest.raises(ConfigLocked), locked_config(config_file, wait=0.05):
            pass
        save_config(config_file, {"default": {"page_size": 6}})
    with locked_config(config_file, wait=0.05) as current:
        assert current.profiles == {"default": {"page_size": 6}}
    assert sorted(p.name for p in config_file.parent.iterdir()) == ["config.toml"]


def test_a_config_that_is_a_device_is_never_written_or_locked_beside(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    from convrisk.cli.errors import UsageProblem
    from convrisk.cli.settings import locked_config

    with pytest.raises(UsageProblem, match="not a regular file"), locked_config(Path(os.devnull)):
        pytest.fail("the lock beside /dev/null was taken")
    monkeypatch.setenv("CONVRISK_CONFIG", os.devnull)
    result = invoke("config", "set", "timeout", "5")
    assert result.code == 2 and "not a regular file" in result.stderr
    assert Path(os.devnull).is_char_device()
