"""`config profiles`, `config use` and `status`: the installed convrisk, on the local database
and against a `convrisk serve` subprocess (status on both backends in-process, in
tests/cli/test_profiles_and_status.py)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from .both_backends import TOKEN, Cli, local_cli
from .both_backends import over_serve as over_serve  # a fixture: convrisk against its own serve


def config_of(local: Cli) -> Path:
    return Path(local.env["XDG_CONFIG_HOME"]) / "convrisk" / "config.toml"


def test_profiles_lists_default_and_the_file_s_profiles_marking_the_active_one(
    tmp_path: Path,
) -> None:
    local = local_cli(tmp_path)
    fresh = local.run("config", "profiles", "-o", "json")
    assert fresh.returncode == 0, fresh.stderr
    assert json.loads(fresh.stdout) == [
        {
            "name": "default",
            "active": True,
            "base_url": None,
            "db": None,
            "token": False,
            "protected": False,
            "read_only": False,
        }
    ]
    assert (
        local.run("config", "set", "--profile", "ops", "base_url", "https://x.example").returncode
        == 0
    )
    local.run("config", "set", "--profile", "ops", "token", "-", input="s3cret-token-value\n")
    listed = local.run("config", "profiles", "-o", "json")
    assert json.loads(listed.stdout)[1] == {
        "name": "ops",
        "active": False,
        "base_url": "https://x.example",
        "db": None,
        "token": True,
        "protected": False,
        "read_only": False,
    }
    assert "s3cret" not in listed.stdout + listed.stderr
    tsv = local.run("config", "profiles", CONVRISK_PROFILE="ops")
    assert tsv.stdout.splitlines() == [
        "name\tactive\tbase_url\tdb\ttoken\tprotected\tread_only",
        "default\tfalse\t\t\tfalse\tfalse\tfalse",
        "ops\ttrue\thttps://x.example\t\ttrue\tfalse\tfalse",
    ]
    names = local.run("config", "profiles", "-o", "id")
    assert names.stdout == "default\nops\n"


def test_use_makes_a_profile_the_default_and_flags_and_env_still_win(tmp_path: Path) -> None:
    local = local_cli(tmp_path)
    env = {k: v for k, v in local.env.items() if k != "CONVRISK_DB"}
    local.env = env
    other_db = tmp_path / "other.db"
    assert local.run("config", "set", "--profile", "other", "db", str(other_db)).returncode == 0
    used = local.run("config", "use", "other")
    assert used.returncode == 0 and "'other' is now the default" in used.stderr
    assert tomllib.loads(config_of(local).read_text())["default_profile"] == "other"
    made = local.run("conv", "create", "--contact-id", "c_other", "-o", "id")
    assert made.returncode == 0, made.stderr
    assert other_db.is_file()  # the default profile's database was used
    active = json.loads(local.run("config", "profiles", "-o", "json").stdout)
    assert [p["name"] for p in active if p["active"]] == ["other"]
    status = json.loads(local.run("status", "-o", "json").stdout)
    assert status["profile"] == "other" and "default_profile" in status["profile_source"]
    assert status["db"] == str(other_db)
    # --profile and CONVRISK_PROFILE still win over the file's default.
    flagged = json.loads(local.run("--profile", "default", "status", "-o", "json").stdout)
    assert flagged["profile"] == "default" and flagged["db"] != str(other_db)
    env_chosen = json.loads(local.run("status", "-o", "json", CONVRISK_PROFILE="default").stdout)
    assert env_chosen["profile"] == "default"
    # `config set` keeps the default; `use default` removes it.
    assert local.run("config", "set", "timeout", "5").returncode == 0
    saved = tomllib.loads(config_of(local).read_text())
    assert saved["default_profile"] == "other" and saved["other"]["timeout"] == 5
    assert local.run("config", "use", "default").returncode == 0
    assert "default_profile" not in tomllib.loads(config_of(local).read_text())


def test_use_of_a_missing_profile_is_exit_2_and_changes_nothing(tmp_path: Path) -> None:
    local = local_cli(tmp_path)
    local.run("config", "set", "--profile", "ops", "timeout", "3")
    before = config_of(local).read_bytes()
    missing = local.run("config", "use", "nope")
    assert missing.returncode == 2
    assert "No profile 'nope'" in missing.stderr and "ops" in missing.stderr
    reserved = local.run("config", "use", "default_profile")
    assert reserved.returncode == 2 and "cannot be a profile name" in reserved.stderr
    assert config_of(local).read_bytes() == before


def test_a_default_profile_the_file_lacks_is_exit_2_naming_it(tmp_path: Path) -> None:
    local = local_cli(tmp_path)
    config_of(local).parent.mkdir(parents=True)
    config_of(local).write_text('default_profile = "gone"\n[ops]\ntimeout = 3\n')
    result = local.run("conv", "list")
    assert result.returncode == 2
    assert "No profile 'gone'" in result.stderr and "default_profile" in result.stderr
    bad = config_of(local)
    bad.write_text("default_profile = 3\n")
    assert local.run("config", "profiles").returncode == 2


def test_status_shows_the_backend_and_one_good_round_trip(over_serve: Cli) -> None:
    result = over_serve.run("status", "-o", "json")
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)
    assert shown["ok"] is True and shown["exit_code"] == 0 and shown["ms"] >= 0
    assert TOKEN not in result.stdout + result.stderr
    if over_serve.remote:
        assert over_serve.serve is not None
        assert (shown["backend"], shown["base_url"]) == ("remote", over_serve.serve.url)
        assert shown["token_source"] == "CONVRISK_TOKEN"
    else:
        assert (shown["backend"], shown["db"], shown["token_source"]) == (
            "local",
            str(over_serve.db_path),
            None,
        )
    table = over_serve.run("status")
    assert table.returncode == 0
    lines = table.stdout.splitlines()
    assert [line.split()[0] for line in lines] == [
        "profile",
        "backend",
        "token",
        "writes",
        "service",
    ]
    assert lines[3] == "writes   allowed"
    assert lines[4].startswith("service  ok (")


def test_status_with_a_refused_token_exits_4_and_never_shows_it(over_serve: Cli) -> None:
    if not over_serve.remote:
        broken = over_serve.run(
            "status", "-o", "json", CONVRISK_DB=str(over_serve.home / "no" / "x.db")
        )
        assert broken.returncode == 2  # a database folder that does not exist
        return
    result = over_serve.run("status", "-o", "json", CONVRISK_TOKEN="wrong-token-1234567890")
    assert result.returncode == 4
    shown = json.loads(result.stdout)
    assert (shown["ok"], shown["exit_code"]) == (False, 4)
    assert shown["error"]["status"] == 401
    assert "wrong-token" not in result.stdout + result.stderr
    table = over_serve.run("status", CONVRISK_TOKEN="wrong-token-1234567890")
    assert table.returncode == 4 and "failed, exit code 4" in table.stdout


def test_status_of_a_service_that_is_gone_exits_5(tmp_path: Path) -> None:
    local = local_cli(tmp_path)
    result = local.run(
        "--base-url", "http://127.0.0.1:9", "status",
        CONVRISK_DB="", CONVRISK_MAX_RETRIES="0", CONVRISK_TOKEN="t" * 20,
    )  # fmt: skip
    assert result.returncode == 5
    assert "failed, exit code 5: Could not reach 127.0.0.1:9" in result.stdout
    assert "token    from CONVRISK_TOKEN" in result.stdout
