"""`serve` under a read-only profile, in-process: each way of choosing the profile or the mark
refuses to start without --read-only, and --load is refused under it (issue 29, finding 5)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Invoke


@pytest.fixture
def audit(invoke: Invoke, tmp_path: Path) -> Path:
    """A read-only profile `audit` with a db of its own (not created): that db."""
    db = tmp_path / "audit.db"
    invoke("config", "set", "--profile", "audit", "db", str(db)).ok()
    invoke("config", "set", "--profile", "audit", "read_only", "true").ok()
    return db


@pytest.mark.parametrize(
    ("args", "env", "source"),
    [
        (["--profile", "audit"], {}, "read_only = true in the config file"),
        ([], {"CONVRISK_PROFILE": "audit"}, "read_only = true in the config file"),
        (["--profile", "audit"], {"CONVRISK_READ_ONLY": "0"}, "read_only = true in the config"),
        ([], {"CONVRISK_READ_ONLY": "1"}, "CONVRISK_READ_ONLY is set"),
        (["--profile", "audit", "--db", "{tmp}/other.db"], {}, "read_only = true in the config"),
    ],
)
def test_serve_without_read_only_is_exit_2_naming_the_profile_and_the_option(
    invoke: Invoke,
    audit: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    env: dict[str, str],
    source: str,
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    args = [arg.replace("{tmp}", str(tmp_path)) for arg in args]
    result = invoke(*args, "serve", "--port", "0")
    assert result.code == 2, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("Error: The profile "), line
    assert source in line and "Pass --read-only" in line, line
    assert line.endswith("nothing was started."), line
    assert not audit.exists() and not (tmp_path / "other.db").exists()


def test_the_profile_chosen_by_config_use_is_refused_too(invoke: Invoke, audit: Path) -> None:
    invoke("config", "use", "audit").ok()
    result = invoke("serve", "--port", "0")
    assert result.code == 2 and "The profile 'audit' is read-only" in result.stderr


@pytest.mark.parametrize("read_only", [[], ["--read-only"]])
def test_load_under_a_read_only_profile_is_exit_2_even_with_read_only(
    invoke: Invoke, audit: Path, tmp_path: Path, read_only: list[str]
) -> None:
    snapshot = tmp_path / "fixtures.jsonl"
    snapshot.write_text("")
    result = invoke(
        "--profile", "audit", "serve", "--port", "0", *read_only, "--load", str(snapshot)
    )
    assert result.code == 2, result.stderr
    (line,) = result.stderr.splitlines()
    wanted = "--load replaces the records served" if read_only else "Pass --read-only"
    assert wanted in line, line
    assert not audit.exists()


def test_read_only_load_into_a_named_database_is_exit_2(invoke: Invoke, tmp_path: Path) -> None:
    snapshot = tmp_path / "fixtures.jsonl"
    snapshot.write_text("")
    db = tmp_path / "named.db"
    result = invoke("serve", "--port", "0", "--read-only", "--load", str(snapshot), "--db", str(db))
    assert result.code == 2, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"Error: --load would replace the records of {db}"), line
    assert not db.exists()
