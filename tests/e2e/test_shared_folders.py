"""Issue 18 items 11 and 12, through the installed console script: files in folders other users
can reach (the README's `/tmp/demo.db`) are refused or read as ssh would, a database the user may
only read is still read, and parallel `config set` runs lose nothing.

Another user is uid 65534 (nobody): as root the tests chown files to it, or run convrisk as it;
without root those tests skip, and the ones that need only modes run as the current user.
Each behaviour once: every mode of a config file or a token file open to others is refused
in-process too, in tests/cli/test_shared_folders.py.
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import tempfile
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from .console import CONVRISK, SAFETY_TIMEOUT, db_of, run

OTHER = 65534
IS_ROOT = os.geteuid() == 0
root_only = pytest.mark.skipif(not IS_ROOT, reason="a file of another user needs root (chown)")
TOKEN = "tok_live_abcdefghijklmnop_1234"


def assert_one_line_error(result: subprocess.CompletedProcess[str], code: int, *named: str) -> None:
    assert result.returncode == code, (result.returncode, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    for name in named:
        assert name in lines[0], (name, result.stderr)
    assert result.stdout == ""


@pytest.fixture
def shared() -> Iterator[Path]:
    """A folder like /tmp (sticky, anyone may write) that other users can reach."""
    folder = Path(tempfile.mkdtemp(prefix="convrisk-shared-"))
    try:
        folder.chmod(0o1777)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def user_env(shared: Path) -> dict[str, str]:
    """The environment of the user the mode tests run as: nobody under root, else oneself."""
    reason = cannot_run_as_user()
    if reason is not None:
        pytest.skip(reason)
    home = shared / "home"
    home.mkdir()
    if IS_ROOT:
        os.chown(home, OTHER, OTHER)
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
    }


def as_user(args: list[str]) -> list[str]:
    """The command line that runs `args` as the test's user: nobody under root, else oneself."""
    if not IS_ROOT:
        return args
    ids = [f"--reuid={OTHER}", f"--regid={OTHER}", "--clear-groups"]
    return ["setpriv", *ids, *args]


@functools.cache
def cannot_run_as_user() -> str | None:
    """Why convrisk cannot run as the test's user here, or None."""
    if IS_ROOT and shutil.which("setpriv") is None:
        return "setpriv (util-linux) is needed to run convrisk as another user"
    probe = subprocess.run(
        as_user([str(CONVRISK), "--version"]),
        capture_output=True,
        text=True,
        timeout=SAFETY_TIMEOUT,
        cwd="/",
    )
    if probe.returncode != 0:
        return f"convrisk cannot run as uid {OTHER} here: {probe.stderr.strip()[:200]}"
    return None


def run_as_user(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """convrisk run as nobody when the tests run as root (root may write anything), else as
    oneself."""
    return subprocess.run(
        as_user([str(CONVRISK), *args]),
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=SAFETY_TIMEOUT,
        start_new_session=True,
        cwd="/",
    )


def created_id(env: dict[str, str], db: Path) -> str:
    result = run(env, "--db", str(db), "conv", "create", "--contact-id", "c_1", "-o", "id")
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


# -- 11. the database ---------------------------------------------------------------------------


@root_only
def test_a_database_another_user_made_is_refused_and_left_as_it_was(
    env: dict[str, str], shared: Path
) -> None:
    db = shared / "demo.db"
    db.touch()
    os.chown(db, OTHER, OTHER)
    db.chmod(0o666)
    for args in (("conv", "create", "--contact-id", "c_1"), ("conv", "list"), ("risk", "list")):
        result = run(env, "--db", str(db), *args)
        assert_one_line_error(result, 2, str(db), "another user (uid 65534)", "--db")
    assert db.stat().st_size == 0
    assert sorted(p.name for p in shared.iterdir()) == ["demo.db"]


@root_only
def test_a_file_another_user_planted_beside_the_database_is_refused(
    env: dict[str, str], shared: Path
) -> None:
    db = shared / "demo.db"
    created_id(env, db)
    wal = shared / "demo.db-wal"
    wal.touch()
    os.chown(wal, OTHER, OTHER)
    result = run(env, "--db", str(db), "conv", "create", "--contact-id", "c_2")
    assert_one_line_error(result, 2, str(wal), "another user (uid 65534)")
    assert wal.stat().st_size == 0


def test_a_symlink_beside_the_database_is_refused(env: dict[str, str], tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    created_id(env, db)
    elsewhere = tmp_path / "elsewhere"
    (tmp_path / "demo.db-wal").symlink_to(elsewhere)
    result = run(env, "--db", str(db), "conv", "create", "--contact-id", "c_2")
    assert_one_line_error(result, 2, "demo.db-wal", "symlink")
    assert not elsewhere.exists()


def test_a_dangling_symlink_as_the_database_is_refused_and_creates_nothing(
    env: dict[str, str], tmp_path: Path
) -> None:
    target = tmp_path / "victim" / "planted.db"
    target.parent.mkdir()
    link = tmp_path / "demo.db"
    link.symlink_to(target)
    for args in (("conv", "create", "--contact-id", "c_1"), ("conv", "list")):
        result = run(env, "--db", str(link), *args)
        assert_one_line_error(result, 2, str(link), "symlink", "does not exist")
    assert list(target.parent.iterdir()) == []
    assert link.is_symlink()


def test_a_symlink_to_an_own_database_is_used(env: dict[str, str], tmp_path: Path) -> None:
    real = tmp_path / "real.db"
    conv_id = created_id(env, real)
    link = tmp_path / "link.db"
    link.symlink_to(real)
    listed = run(env, "--db", str(link), "conv", "list", "-o", "id")
    assert listed.returncode == 0 and listed.stdout.split() == [conv_id], listed.stderr


def test_a_new_database_in_a_shared_folder_is_created_0600(
    env: dict[str, str], shared: Path
) -> None:
    db = shared / "demo.db"
    created_id(env, db)
    assert (db.stat().st_mode & 0o777) == 0o600 and db.stat().st_uid == os.geteuid()


def test_db_naming_a_directory_says_it_is_a_directory(env: dict[str, str], tmp_path: Path) -> None:
    result = run(env, "--db", str(tmp_path), "conv", "list")
    assert_one_line_error(result, 2, str(tmp_path), "is a directory")


def test_a_nul_in_db_is_a_usage_error_of_one_line(env: dict[str, str]) -> None:
    config = Path(env["XDG_CONFIG_HOME"]) / "convrisk" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[default]\ndb = "/tmp/a\\u0000b.db"\n')
    config.chmod(0o600)
    assert_one_line_error(run(env, "conv", "list"), 2, "db", "NUL")


# -- 11. a database the user may only read ------------------------------------------------------


def seeded_for_user(user_env: dict[str, str]) -> tuple[Path, str, str]:
    """A database of the test's user with one conversation and one risk profile: (db, ids)."""
    db = Path(user_env["HOME"]) / "data" / "shared.db"
    folder = db.parent
    folder.mkdir()
    if IS_ROOT:
        os.chown(folder, OTHER, OTHER)
    conv = run_as_user(user_env, "--db", str(db), "conv", "create", "--contact-id", "c", "-o", "id")
    assert conv.returncode == 0, conv.stderr
    risk = run_as_user(
        user_env, "--db", str(db), "risk", "create", "--customer-id", "cu", "--profile-type",
        "t", "--score", "1", "-o", "id",
    )  # fmt: skip
    assert risk.returncode == 0, risk.stderr
    return db, conv.stdout.strip(), risk.stdout.strip()


def assert_read_only(user_env: dict[str, str], db: Path, conv_id: str, risk_id: str) -> None:
    listed = run_as_user(user_env, "--db", str(db), "risk", "list", "-o", "id")
    assert listed.returncode == 0 and listed.stdout.split() == [risk_id], listed.stderr
    got = run_as_user(user_env, "--db", str(db), "conv", "get", conv_id, "-o", "id")
    assert got.returncode == 0 and got.stdout.split() == [conv_id], got.stderr
    write = run_as_user(user_env, "--db", str(db), "conv", "create", "--contact-id", "c2")
    assert_one_line_error(write, 1, str(db), "read-only")


def test_a_read_only_database_file_can_still_be_read(user_env: dict[str, str]) -> None:
    db, conv_id, risk_id = seeded_for_user(user_env)
    db.chmod(0o444)
    assert_read_only(user_env, db, conv_id, risk_id)


def test_a_database_in_a_read_only_folder_can_still_be_read(user_env: dict[str, str]) -> None:
    db, conv_id, risk_id = seeded_for_user(user_env)
    db.parent.chmod(0o555)
    try:
        assert sorted(p.name for p in db.parent.iterdir()) == ["shared.db"]
        assert_read_only(user_env, db, conv_id, risk_id)
    finally:
        db.parent.chmod(0o755)


@root_only
def test_a_database_root_made_can_be_read_by_another_user(
    env: dict[str, str], user_env: dict[str, str], shared: Path
) -> None:
    folder = shared / "root-data"
    folder.mkdir(mode=0o755)
    db = folder / "team.db"
    conv_id = created_id(env, db)
    db.chmod(0o644)
    listed = run_as_user(user_env, "--db", str(db), "conv", "list", "-o", "id")
    assert listed.returncode == 0 and listed.stdout.split() == [conv_id], listed.stderr


# -- 11. the config file ------------------------------------------------------------------------


def config_with_token(env: dict[str, str], mode: int) -> Path:
    path = Path(env["XDG_CONFIG_HOME"]) / "convrisk" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"[default]\nbase_url = 'http://127.0.0.1:9'\ntoken = '{TOKEN}'\n")
    path.chmod(mode)
    return path


@root_only
def test_a_config_file_of_another_user_is_refused(env: dict[str, str]) -> None:
    path = config_with_token(env, 0o600)
    os.chown(path, OTHER, OTHER)
    before = path.read_bytes()
    for args in (("conv", "list"), ("config", "show"), ("config", "set", "timeout", "5")):
        assert_one_line_error(run(env, *args), 2, str(path), "another user (uid 65534)")
    assert path.read_bytes() == before and path.stat().st_uid == OTHER


def test_a_config_file_others_may_write_is_refused(env: dict[str, str]) -> None:
    mode = 0o666  # 0620 and 0602 too, in-process
    path = config_with_token(env, mode)
    before = path.read_bytes()
    for args in (("conv", "list"), ("config", "show"), ("config", "set", "timeout", "5")):
        result = run(env, *args)
        assert_one_line_error(result, 2, str(path), f"writable by other users (mode 0{mode:o})")
        assert f"chmod 600 {path}" in result.stderr and TOKEN not in result.stderr
    assert path.read_bytes() == before


@root_only
def test_a_config_file_of_root_is_trusted(user_env: dict[str, str], shared: Path) -> None:
    path = shared / "team.toml"
    path.write_text("[default]\npage_size = 7\n")
    path.chmod(0o644)
    got = run_as_user({**user_env, "CONVRISK_CONFIG": str(path)}, "config", "get", "page_size")
    assert got.returncode == 0 and got.stdout == "7\n", got.stderr


@root_only
def test_config_set_does_not_follow_a_symlink_another_user_made(
    env: dict[str, str], tmp_path: Path
) -> None:
    link = Path(env["XDG_CONFIG_HOME"]) / "convrisk" / "config.toml"
    link.parent.mkdir(parents=True)
    target = tmp_path / "elsewhere.toml"
    link.symlink_to(target)
    os.chown(link, OTHER, OTHER, follow_symlinks=False)
    result = run(env, "config", "set", "timeout", "5")
    assert_one_line_error(result, 2, str(link), "symlink made by another user")
    assert not target.exists()


# -- 11. serve's token file ---------------------------------------------------------------------


def serve_refuses(env: dict[str, str], *named: str) -> None:
    """serve exits at once, 2, with one line naming the token file; it never listens."""
    result = run(env, "serve", "--port", "0")
    assert_one_line_error(result, 2, "token file", *named)
    assert "listening" not in result.stderr


def token_file(env: dict[str, str]) -> Path:
    db = db_of(env)
    db.parent.mkdir(parents=True, exist_ok=True)
    return db.with_name(db.name + ".token")


@root_only
def test_serve_refuses_a_token_file_of_another_user(env: dict[str, str]) -> None:
    path = token_file(env)
    path.write_text(TOKEN + "\n")
    path.chmod(0o600)
    os.chown(path, OTHER, OTHER)
    serve_refuses(env, str(path), "another user (uid 65534)")


def test_serve_refuses_a_token_file_that_is_a_symlink(env: dict[str, str], tmp_path: Path) -> None:
    real = tmp_path / "real.token"
    real.write_text(TOKEN + "\n")
    real.chmod(0o600)
    token_file(env).symlink_to(real)
    serve_refuses(env, str(token_file(env)), "symlink")
    dangling = tmp_path / "nothing.token"
    token_file(env).unlink()
    token_file(env).symlink_to(dangling)
    serve_refuses(env, str(token_file(env)), "symlink")
    assert not dangling.exists()


def test_serve_refuses_a_token_file_open_to_others(env: dict[str, str]) -> None:
    mode = 0o644  # 0640, 0660 and 0602 too, in-process
    path = token_file(env)
    path.write_text(TOKEN + "\n")
    path.chmod(mode)
    serve_refuses(env, str(path), f"mode 0{mode:o}", f"chmod 600 {path}")
    assert path.read_text() == TOKEN + "\n"


def test_serve_uses_a_private_token_file_of_its_own(env: dict[str, str]) -> None:
    path = token_file(env)
    path.write_text(TOKEN + "\n")
    path.chmod(0o600)
    proc = subprocess.Popen(
        [str(CONVRISK), "serve", "--port", "0"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    try:
        lines = []
        for _, line in zip(range(10), proc.stderr, strict=False):
            lines.append(line)
            if "CONVRISK_TOKEN=" in line:  # the last line serve prints on start
                break
        joined = "".join(lines)
        assert "kept from an earlier start" in joined and TOKEN in joined, joined
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)


# -- 12. parallel config writes -----------------------------------------------------------------


def test_a_hundred_parallel_config_sets_lose_nothing(env: dict[str, str]) -> None:
    writers = 100
    started = time.monotonic()
    procs = [
        subprocess.Popen(
            [str(CONVRISK), "config", "set", "--profile", f"p{i}", "page_size", str(i % 100 + 1)],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(writers)
    ]
    codes = []
    for proc in procs:
        left = max(1.0, SAFETY_TIMEOUT - (time.monotonic() - started))
        _, err = proc.communicate(timeout=left)
        codes.append((proc.returncode, err))
    assert [code for code, _ in codes] == [0] * writers, [e for c, e in codes if c]
    path = Path(env["XDG_CONFIG_HOME"]) / "convrisk" / "config.toml"
    profiles = tomllib.loads(path.read_text())
    assert {name: table["page_size"] for name, table in profiles.items()} == {
        f"p{i}": i % 100 + 1 for i in range(writers)
    }
    assert sorted(p.name for p in path.parent.iterdir()) == ["config.toml"]


def test_a_read_only_database_of_the_previous_schema_is_read_without_its_new_index(
    user_env: dict[str, str],
) -> None:
    import re
    import sqlite3

    from convrisk.api_client.resources import RESOURCES
    from convrisk.local_backend.store.database import MIGRATIONS, READABLE_FROM, SCHEMA_VERSION

    if READABLE_FROM == SCHEMA_VERSION:
        pytest.skip("the last migration step adds a field: no older schema is read as it is")
    db, conv_id, risk_id = seeded_for_user(user_env)
    # As an older convrisk left it: the steps after READABLE_FROM (indexes only) not applied.
    with sqlite3.connect(db) as conn:
        for step in MIGRATIONS[READABLE_FROM:]:
            for statement in step.sql(RESOURCES):
                index = re.match(r"\s*CREATE INDEX (\w+)", statement)
                assert index, statement
                conn.execute(f"DROP INDEX {index.group(1)}")
        conn.execute(f"PRAGMA user_version = {READABLE_FROM}")
    conn.close()
    db.chmod(0o444)
    assert_read_only(user_env, db, conv_id, risk_id)
    mine = run_as_user(user_env, "--db", str(db), "conv", "list", "--contact-id", "c", "-o", "id")
    assert mine.returncode == 0 and mine.stdout.split() == [conv_id], mine.stderr
