"""Issue 9 hardening of settings and files, through the installed console script: a broken config
file is one line and exit 2, every numeric setting has a range, customer data is private under a
permissive umask, a token in an exposed config file is warned about, and `config set` keeps a
symlinked config file a symlink. Each behaviour runs once here; its variants (every command,
setting, value and mode) run in-process in tests/cli/test_settings_hardening.py, under the same
test names."""

from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from .console import CONVRISK, SAFETY_TIMEOUT, db_of, run

TOKEN = "tok_live_abcdefghijklmnop_1234"
COMMANDS = {
    "conv list": ("conv", "list"),
    "config show": ("config", "show"),
    "config set": ("config", "set", "timeout", "5"),
    "config get": ("config", "get", "timeout"),
    "config unset": ("config", "unset", "timeout"),
}


def config_of(env: dict[str, str]) -> Path:
    return Path(env["XDG_CONFIG_HOME"]) / "convrisk" / "config.toml"


def write_config(env: dict[str, str], content: bytes, mode: int = 0o600) -> Path:
    path = config_of(env)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    path.chmod(mode)
    return path


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def run_with_umask(
    env: dict[str, str], *args: str, umask: int = 0o022
) -> subprocess.CompletedProcess[str]:
    """Run convrisk with this umask (a permissive one by default), stdin /dev/null."""
    return subprocess.run(
        [str(CONVRISK), *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=SAFETY_TIMEOUT,
        preexec_fn=lambda: os.umask(umask),
    )


def assert_one_line_error(result: subprocess.CompletedProcess[str], *named: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Error: "), result.stderr
    for name in named:
        assert name in lines[0], (name, result.stderr)
    assert result.stdout == ""


# -- 5. a broken config file: one line naming the file, exit 2 ---------------------------------


def test_a_config_file_that_is_not_utf8_is_one_line_naming_it(env: dict[str, str]) -> None:
    path = write_config(env, b"[default]\ntimeout = 3\n\xff\n")
    result = run(env, *COMMANDS["conv list"])
    assert_one_line_error(result, str(path), "UTF-8", "line 3")
    assert path.read_bytes() == b"[default]\ntimeout = 3\n\xff\n"


def test_a_config_file_nested_5000_deep_is_one_line_naming_it(env: dict[str, str]) -> None:
    content = b"[default]\na = " + b"[" * 5000 + b"]" * 5000 + b"\n"
    path = write_config(env, content)
    result = run(env, *COMMANDS["conv list"])
    assert_one_line_error(result, str(path), "too deeply")
    assert path.read_bytes() == content


def test_a_config_path_that_is_a_directory_is_one_line_naming_it(env: dict[str, str]) -> None:
    config_of(env).mkdir(parents=True)
    result = run(env, *COMMANDS["conv list"])
    assert_one_line_error(result, str(config_of(env)), "directory")


def test_a_config_symlink_loop_is_one_line_naming_it(env: dict[str, str]) -> None:
    path = config_of(env)
    path.parent.mkdir(parents=True)
    path.symlink_to(path)
    assert_one_line_error(run(env, *COMMANDS["conv list"]), str(path))


def test_a_config_path_under_a_file_is_one_line_naming_it(env: dict[str, str]) -> None:
    plain = Path(env["HOME"]) / "plain"
    plain.write_text("x")
    result = run({**env, "CONVRISK_CONFIG": str(plain / "config.toml")}, "conv", "list")
    assert_one_line_error(result, str(plain / "config.toml"), "Not a directory")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file of mode 0000")
def test_an_unreadable_config_file_is_one_line_naming_it(env: dict[str, str]) -> None:
    path = write_config(env, b"[default]\ntimeout = 3\n", mode=0o000)
    assert_one_line_error(run(env, "conv", "list"), str(path), "Permission denied")


def test_a_config_fifo_is_refused_without_waiting_for_a_writer(env: dict[str, str]) -> None:
    fifo = Path(env["HOME"]) / "fifo.toml"
    os.mkfifo(fifo)
    result = run({**env, "CONVRISK_CONFIG": str(fifo)}, "conv", "list")
    assert_one_line_error(result, str(fifo), "not a regular file")


def test_a_config_file_over_one_mib_is_refused(env: dict[str, str]) -> None:
    path = write_config(env, b"[default]\n" + b"# padding\n" * 110_000)
    assert_one_line_error(run(env, "conv", "list"), str(path), "1 MiB")


def test_dev_null_as_the_config_file_means_no_settings(env: dict[str, str]) -> None:
    result = run({**env, "CONVRISK_CONFIG": os.devnull}, "config", "show")
    assert result.returncode == 0, result.stderr
    assert re.search(r"^timeout\s+30.*\(default\)$", result.stdout, re.M), result.stdout


def test_a_control_character_in_the_config_path_stays_on_one_line(env: dict[str, str]) -> None:
    folder = Path(env["HOME"]) / "a\nb"
    folder.mkdir()
    (folder / "c.toml").write_bytes(b"\xff")
    result = run({**env, "CONVRISK_CONFIG": str(folder / "c.toml")}, "conv", "list")
    assert_one_line_error(result, "a\\nb")


# -- 6. every numeric setting has a range, whatever its source ---------------------------------

# The variants of every numeric setting (each bad value, each end of its range): in-process.


def test_timeout_of_1e10_in_the_environment_is_refused_naming_the_range(
    env: dict[str, str],
) -> None:
    result = run({**env, "CONVRISK_TIMEOUT": "1e10"}, "conv", "list")
    assert_one_line_error(result, "CONVRISK_TIMEOUT", "timeout", "0.1 to 3600")


def test_config_set_timeout_1e10_is_refused_and_writes_nothing(env: dict[str, str]) -> None:
    assert_one_line_error(run(env, "config", "set", "timeout", "1e10"), "timeout", "0.1 to 3600")
    assert not config_of(env).exists()


def test_an_out_of_range_value_from_the_environment_is_refused(env: dict[str, str]) -> None:
    result = run({**env, "CONVRISK_MAX_RETRIES": "11"}, "conv", "list")
    assert_one_line_error(result, "CONVRISK_MAX_RETRIES", "max_retries", "0 to 10")


def test_an_out_of_range_value_from_config_set_is_refused(env: dict[str, str]) -> None:
    assert_one_line_error(
        run(env, "config", "set", "--", "page_size", "0"), "page_size", "1 to 100"
    )
    assert not config_of(env).exists()


def test_an_out_of_range_value_in_the_config_file_is_refused(env: dict[str, str]) -> None:
    path = write_config(env, b"[default]\nmax_response_mb = 4097\n")
    result = run(env, "conv", "list")
    assert_one_line_error(result, str(path), "[default]", "max_response_mb", "1 to 4096")


def test_a_value_of_the_wrong_toml_type_is_refused_naming_the_range(env: dict[str, str]) -> None:
    write_config(env, b"[default]\ntimeout = 'soon'\n")
    assert_one_line_error(run(env, "conv", "list"), "timeout", "0.1 to 3600")


def test_the_ends_of_each_range_are_accepted(env: dict[str, str]) -> None:
    assert run(env, "config", "set", "timeout", "3600").returncode == 0
    from_file = run(env, "config", "show")
    assert from_file.returncode == 0, from_file.stderr
    assert re.search(r"^timeout\s+3600(\.0)?\s+\(profile default\)$", from_file.stdout, re.M), (
        from_file.stdout
    )
    from_env = run({**env, "CONVRISK_TIMEOUT": "3600"}, "conv", "list")
    assert from_env.returncode == 0, from_env.stderr


def test_max_response_mb_defaults_to_256_and_comes_from_each_layer(env: dict[str, str]) -> None:
    shown = run(env, "config", "show")
    assert re.search(r"^max_response_mb\s+256\s+\(default\)$", shown.stdout, re.M), shown.stdout
    assert run(env, "config", "set", "max_response_mb", "512").returncode == 0
    assert tomllib.loads(config_of(env).read_text())["default"]["max_response_mb"] == 512
    assert run(env, "config", "get", "max_response_mb").stdout == "512\n"
    from_env = run({**env, "CONVRISK_MAX_RESPONSE_MB": "64"}, "config", "show")
    assert re.search(
        r"^max_response_mb\s+64\s+\(CONVRISK_MAX_RESPONSE_MB\)$", from_env.stdout, re.M
    ), from_env.stdout


# -- 7. private files under a permissive umask, and a warning for an exposed token -------------


def test_the_database_and_its_folder_are_private_under_umask_022(env: dict[str, str]) -> None:
    created = run_with_umask(env, "conv", "create", "--contact-id", "c_1", "-o", "id")
    assert created.returncode == 0, created.stderr
    assert mode_of(db_of(env)) == 0o600
    assert mode_of(db_of(env).parent) == 0o700
    # XDG: a missing base folder is created 0700 as well.
    assert mode_of(Path(env["XDG_DATA_HOME"])) == 0o700


def test_an_explicit_db_file_is_created_0600_under_umask_000(env: dict[str, str]) -> None:
    db = Path(env["HOME"]) / "mine.db"
    created = run_with_umask(env, "--db", str(db), "conv", "create", "--contact-id", "c", umask=0)
    assert created.returncode == 0, created.stderr
    assert mode_of(db) == 0o600


def test_an_existing_database_keeps_the_mode_its_owner_chose(env: dict[str, str]) -> None:
    db = Path(env["HOME"]) / "team.db"
    assert run(env, "--db", str(db), "conv", "list").returncode == 0
    db.chmod(0o640)
    created = run_with_umask(env, "--db", str(db), "conv", "create", "--contact-id", "c")
    assert created.returncode == 0, created.stderr
    assert mode_of(db) == 0o640


@pytest.fixture
def served(env: dict[str, str]) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """`convrisk serve` on the default database, started under umask 022; (process, URL)."""
    proc = subprocess.Popen(
        [str(CONVRISK), "serve", "--port", "0", "--token", TOKEN],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: os.umask(0o022),
    )
    assert proc.stderr is not None
    try:
        url = None
        for _, line in zip(range(20), proc.stderr, strict=False):
            match = re.match(r"^convrisk serve: listening on (http://\S+)$", line.rstrip("\n"))
            if match:
                url = match.group(1)
                break
        assert url is not None and url.startswith("http://127.0.0.1:"), "serve did not start"
        yield proc, url
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)


def test_wal_and_shm_files_are_private_while_the_database_is_open(
    env: dict[str, str], served: tuple[subprocess.Popen[str], str]
) -> None:
    proc, url = served
    remote = {**env, "CONVRISK_BASE_URL": url, "CONVRISK_TOKEN": TOKEN}
    created = run(remote, "conv", "create", "--contact-id", "c_1", "-o", "id")
    assert created.returncode == 0, created.stderr
    assert proc.poll() is None  # serve still holds its connection: -wal and -shm exist
    db = db_of(env)
    wal, shm = db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")
    assert wal.exists() and shm.exists()
    assert {p.name: mode_of(p) for p in (db, wal, shm)} == {
        db.name: 0o600,
        wal.name: 0o600,
        shm.name: 0o600,
    }
    assert mode_of(db.parent) == 0o700


def warning_line(path: Path, mode: str) -> str:
    return (
        f"Warning: config file {path} holds a token and is readable by others "
        f"(mode {mode}): run chmod 600 {path}"
    )


def test_a_config_file_with_a_token_readable_by_others_is_warned_about(
    env: dict[str, str],
) -> None:
    mode = 0o644  # 0640 and 0604 as well, in-process
    path = write_config(env, f"[default]\ntoken = '{TOKEN}'\n".encode(), mode=mode)
    result = run(env, "conv", "list")
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [warning_line(path, f"0{mode:o}")]
    assert TOKEN not in result.stderr
    shown = run(env, "config", "show")
    assert shown.returncode == 0 and shown.stderr.splitlines() == [warning_line(path, f"0{mode:o}")]


def test_a_token_in_another_profile_is_warned_about_too(env: dict[str, str]) -> None:
    path = write_config(env, f"[default]\n\n[ci]\ntoken = '{TOKEN}'\n".encode(), mode=0o644)
    result = run(env, "conv", "list")
    assert result.returncode == 0 and result.stderr.splitlines() == [warning_line(path, "0644")]


def test_no_warning_for_a_private_config_file_or_one_without_a_token(env: dict[str, str]) -> None:
    write_config(env, f"[default]\ntoken = '{TOKEN}'\n".encode(), mode=0o600)
    private = run(env, "conv", "list")
    assert private.returncode == 0 and private.stderr == ""
    write_config(env, b"[default]\ntimeout = 5\n", mode=0o644)
    tokenless = run(env, "conv", "list")
    assert tokenless.returncode == 0 and tokenless.stderr == ""


def test_config_set_makes_an_exposed_file_private_without_warning(env: dict[str, str]) -> None:
    path = write_config(env, f"[default]\ntoken = '{TOKEN}'\n".encode(), mode=0o644)
    result = run(env, "config", "set", "timeout", "5")
    assert result.returncode == 0 and "Warning" not in result.stderr, result.stderr
    assert mode_of(path) == 0o600


def test_an_error_after_the_warning_is_still_one_error_line(env: dict[str, str]) -> None:
    path = write_config(env, f"[default]\ntoken = '{TOKEN}'\ntimeout = 0\n".encode(), mode=0o644)
    result = run(env, "conv", "list")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.splitlines()[0] == warning_line(path, "0644")
    assert len(result.stderr.splitlines()) == 2 and "0.1 to 3600" in result.stderr


# -- 8. config set follows a symlinked config file ---------------------------------------------


def test_config_set_keeps_a_symlinked_config_file_a_symlink(env: dict[str, str]) -> None:
    # A link to a link (relative, as dotfiles managers make them); one hop, in-process.
    dotfiles = Path(env["HOME"]) / "dotfiles"
    dotfiles.mkdir()
    target = dotfiles / "convrisk.toml"
    target.write_text("[default]\npage_size = 50\n")
    target.chmod(0o644)
    link = config_of(env)
    link.parent.mkdir(parents=True)
    middle = dotfiles / "current.toml"
    middle.symlink_to("convrisk.toml")
    link.symlink_to(middle)
    before = os.readlink(link)
    result = run_with_umask(env, "config", "set", "timeout", "5")
    assert result.returncode == 0, result.stderr
    assert link.is_symlink() and os.readlink(link) == before
    assert tomllib.loads(target.read_text()) == {"default": {"page_size": 50, "timeout": 5}}
    assert mode_of(target) == 0o600
    assert sorted(p.name for p in link.parent.iterdir()) == ["config.toml"]
    assert sorted(p.name for p in dotfiles.iterdir()) == ["convrisk.toml", "current.toml"]
    unset = run(env, "config", "unset", "page_size")
    assert unset.returncode == 0 and link.is_symlink()
    assert tomllib.loads(target.read_text()) == {"default": {"timeout": 5}}


def test_config_set_through_a_dangling_symlink_creates_its_target(env: dict[str, str]) -> None:
    target = Path(env["HOME"]) / "dotfiles" / "convrisk.toml"
    target.parent.mkdir()
    link = config_of(env)
    link.parent.mkdir(parents=True)
    link.symlink_to(target)
    assert run(env, "config", "set", "page_size", "20").returncode == 0
    assert link.is_symlink() and tomllib.loads(target.read_text()) == {"default": {"page_size": 20}}
    assert mode_of(target) == 0o600


def test_a_number_too_long_for_python_in_the_config_file_is_one_line(env: dict[str, str]) -> None:
    path = write_config(env, b"[default]\ntimeout = " + b"9" * 5000 + b"\n")
    assert_one_line_error(run(env, "conv", "list"), str(path), "too long")
    # Hexadecimal escapes tomllib's digit limit, but not str(): `config get` must still answer.
    write_config(env, b"[default]\ntimeout = 0x" + b"f" * 5000 + b"\n")
    got = run(env, "config", "get", "timeout")
    assert got.returncode == 0 and got.stdout == "(a number too long to show)\n", got.stderr
    assert_one_line_error(run(env, "conv", "list"), "timeout", "0.1 to 3600")
