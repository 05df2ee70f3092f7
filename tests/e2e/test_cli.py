"""The installed `convrisk` console script in a subprocess: isolated HOME and XDG folders, no
stdin, output parsed as a script would."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
from pathlib import Path
from typing import Any

from convrisk.api_client.resources import RISK_PROFILES

from .console import (
    CONVRISK,
    SAFETY_TIMEOUT,
    assert_loads_none_of,
    db_of,
    on_a_terminal,
    piped,
    read_until,
    run,
)


def test_the_console_script_is_installed() -> None:
    assert CONVRISK.is_file() and os.access(CONVRISK, os.X_OK)


def test_create_get_list_round_trip_as_json(env: dict[str, str]) -> None:
    created = run(env, "conv", "create", "--contact-id", "c_1", "-o", "json")
    assert created.returncode == 0, created.stderr
    conv = json.loads(created.stdout)
    assert db_of(env).is_file()
    got = run(env, "conv", "get", conv["id"], "-o", "json")
    assert json.loads(got.stdout) == conv
    listed = run(env, "conv", "list", "-o", "jsonl")
    assert [json.loads(line) for line in listed.stdout.splitlines()] == [conv]
    risk = run(
        env,
        "risk",
        "create",
        "--customer-id",
        "cus",
        "--profile-type",
        "moderate",
        "--score",
        "72",
        "--details",
        '{"a": 1}',
        "-o",
        "json",
    )
    assert json.loads(risk.stdout)["details"] == {"a": 1}


def test_exit_codes(env: dict[str, str]) -> None:
    assert run(env, "conv", "list").returncode == 0
    assert run(env, "conv", "list", "--limit", "0").returncode == 2
    assert run(env, "conv", "frob").returncode == 2
    missing = run(env, "conv", "get", "conv_" + "0" * 26, "-o", "json")
    assert missing.returncode == 3
    assert json.loads(missing.stderr)["error"]["type"] == "not_found_error"
    created = run(env, "conv", "create", "--contact-id", "c", "-o", "id").stdout.strip()
    refused = run(env, "conv", "delete", created)  # stdin is /dev/null: no terminal
    assert refused.returncode == 2 and "--yes" in refused.stderr
    assert run(env, "conv", "delete", created, "--yes").returncode == 0
    unreachable = run(
        {**env, "CONVRISK_MAX_RETRIES": "0", "CONVRISK_TOKEN": "t" * 20},
        "--base-url",
        "http://127.0.0.1:9",
        "conv",
        "list",
    )
    assert unreachable.returncode == 5
    for result in (missing, refused, unreachable):
        assert "Traceback" not in result.stderr


def test_a_piped_table_is_tsv(env: dict[str, str]) -> None:
    run(
        env,
        "risk",
        "create",
        "--customer-id",
        "cus_1",
        "--profile-type",
        "moderate",
        "--score",
        "5",
    )
    header, row = run(env, "risk", "list").stdout.splitlines()
    assert header == "\t".join(RISK_PROFILES.names())
    cells = row.split("\t")
    assert cells[1:5] == ["cus_1", "moderate", "5", "{}"]


def test_jsonl_streams_thousands_of_rows_in_order(env: dict[str, str], store: Any) -> None:
    made = [store.conversations.create({"contact_id": f"c_{i}"})["id"] for i in range(2500)]
    result = run(env, "conv", "list", "--all", "-o", "jsonl")
    assert result.returncode == 0 and result.stderr == ""
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["id"] for r in rows] == made[::-1]


def test_jsonl_prints_pages_as_they_arrive(env: dict[str, str], store: Any) -> None:
    """The output is written page by page: while the reader holds the pipe full, the child has
    fetched only the first pages, so rows deleted meanwhile at the far end never appear. A
    command that fetched everything before printing would still print them."""
    made = [store.conversations.create({"contact_id": f"c_{i}"})["id"] for i in range(3000)]
    oldest = made[:1000]  # listed last (newest first)
    child = piped(env, "conv", "list", "--all", "-o", "jsonl")
    assert child.stdout is not None and child.stderr is not None
    line = child.stdout.readline()
    assert line, child.stderr.read()
    first = json.loads(line)
    assert first["id"] == made[-1]
    # The pipe (64 KiB) holds a few hundred rows; the child cannot be past row ~600 now.
    for conv_id in oldest:
        store.conversations.delete(conv_id)
    rest = child.stdout.read()  # the buffered reader may already hold part of it
    err = child.stderr.read()
    assert child.wait(timeout=SAFETY_TIMEOUT) == 0, err
    ids = [first["id"]] + [json.loads(line)["id"] for line in rest.splitlines()]
    assert ids == made[1000:][::-1]


def test_a_closed_pipe_ends_quietly(env: dict[str, str], store: Any) -> None:
    for i in range(1500):
        store.conversations.create({"contact_id": f"c_{i}"})
    child = piped(env, "conv", "list", "--all", "-o", "jsonl")
    assert child.stdout is not None and child.stderr is not None
    child.stdout.readline()
    child.stdout.close()  # like `| head -1`
    err = child.stderr.read()
    assert child.wait(timeout=SAFETY_TIMEOUT) == 0
    assert err == b""


def test_ctrl_c_is_exit_130_without_traceback(env: dict[str, str], store: Any) -> None:
    conv_id = store.conversations.create({"contact_id": "c"})["id"]
    child = subprocess.Popen(
        [str(CONVRISK), "conv", "get", "-", "-o", "id"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(conv_id + "\n")
    child.stdin.flush()
    assert child.stdout.readline().strip() == conv_id  # running, now waiting for more ids
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=SAFETY_TIMEOUT)
    assert child.returncode == 130
    assert "Traceback" not in err


def test_delete_asks_on_a_real_terminal(env: dict[str, str], store: Any) -> None:
    keep = store.conversations.create({"contact_id": "keep"})["id"]
    drop = store.conversations.create({"contact_id": "drop"})["id"]
    child, fd = on_a_terminal(env, "conv", "delete", keep)
    assert b"[y/N]" in read_until(fd, b"[y/N]")
    os.write(fd, b"n\n")
    read_until(fd, b"\x00never")
    assert child.wait(timeout=SAFETY_TIMEOUT) == 1
    child, fd = on_a_terminal(env, "conv", "delete", drop)
    read_until(fd, b"[y/N]")
    os.write(fd, b"y\n")
    read_until(fd, b"\x00never")
    assert child.wait(timeout=SAFETY_TIMEOUT) == 0
    os.close(fd)
    assert [c["id"] for c in store.conversations.list()["data"]] == [keep]


def test_a_terminal_gets_a_table(env: dict[str, str], store: Any) -> None:
    conv_id = store.conversations.create({"group_id": "g_42"})["id"]
    child, fd = on_a_terminal(env, "conv", "list")
    shown = read_until(fd, b"\x00never").decode()
    os.close(fd)
    assert child.wait(timeout=SAFETY_TIMEOUT) == 0
    assert conv_id in shown and "group g_42" in shown and "WITH" in shown
    assert "\t" not in shown and "\x1b[" in shown  # colour on a terminal


def test_serve_prints_a_ready_to_paste_export_line_once_and_stops_on_sigterm(
    env: dict[str, str], tmp_path: Path
) -> None:
    child = subprocess.Popen(
        [str(CONVRISK), "serve", "--port", "0", "--db", str(tmp_path / "served.db")],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stderr is not None
    banner = [child.stderr.readline()]
    while not banner[-1].startswith("export ") and banner[-1] and len(banner) < 10:
        banner.append(child.stderr.readline())
    assert banner[0].startswith("convrisk serve: listening on http://127.0.0.1:")
    words = shlex.split(banner[-1])
    assert words[0] == "export"
    exported = dict(word.split("=", 1) for word in words[1:])
    assert set(exported) == {"CONVRISK_BASE_URL", "CONVRISK_TOKEN"}
    token = exported["CONVRISK_TOKEN"]
    assert exported["CONVRISK_BASE_URL"] == banner[0].rsplit(" ", 1)[1].strip()
    assert sum(token in line for line in banner) == 1
    try:
        client_env = {**env, **exported}
        created = run(client_env, "conv", "create", "--contact-id", "c_remote", "-o", "json")
        assert created.returncode == 0, created.stderr
        listed = run(client_env, "conv", "list", "-o", "json")
        assert [c["id"] for c in json.loads(listed.stdout)] == [json.loads(created.stdout)["id"]]
        wrong = run({**client_env, "CONVRISK_TOKEN": "x" * 30}, "conv", "list")
        assert wrong.returncode == 4
    finally:
        child.send_signal(signal.SIGTERM)
        out, err = child.communicate(timeout=SAFETY_TIMEOUT)
    assert child.returncode == 0
    assert token not in out + err  # printed once, in the banner
    assert (tmp_path / "served.db").is_file()


_BACKEND = {"convrisk.local_backend", "convrisk.api_client", "httpx", "rich", "jq"}
_OTHER_COMMANDS = {
    "convrisk.cli.commands.risk",
    "convrisk.cli.commands.config",
    "convrisk.cli.commands.serve",
    "convrisk.cli.commands.sandbox",
}
# What only an idempotency key (fingerprint) or a busy retry (jitter) needs.
_READ_ONLY_ABSENT = {"hashlib", "random", "secrets"}
# What only `serve` needs: never loaded by another command.
_SERVE_STACK = {"uvicorn", "starlette", "h11", "httptools", "uvloop"}
# What only `ui` needs: no other command loads it (none of the commands below is `ui`).
_UI = {"textual", "convrisk.cli.ui.browser", "convrisk.cli.ui.rows"}
# Every module of api_client but the resources' description (api_client.resources), which the
# root help reads as it builds each command's --fields option (its help names the fields).
_CLIENT = {
    f"convrisk.api_client.{path.stem}"
    for path in (Path(__file__).resolve().parents[2] / "api_client").glob("*.py")
    if path.stem not in ("__init__", "resources")
}


# What each command loads, and must not: each in a fresh interpreter of its own (a process
# that has loaded a module cannot unload it), so these stay here, one child per command.
IMPORTS: list[tuple[list[str], set[str]]] = [
    (
        ["--version"],  # api_client.__version__ without the models, hence without pydantic
        {"convrisk.local_backend", "convrisk.api_client.client", "pydantic", "httpx", "rich"}
        | {
            "importlib.metadata",
            "tomllib",
            "logging",
            "convrisk.cli.commands.conv",
            *_OTHER_COMMANDS,
        }
        | _SERVE_STACK,
    ),
    (
        ["--help"],
        {*_BACKEND - {"convrisk.api_client"}, *_CLIENT, "pydantic", "importlib.metadata"}
        | _SERVE_STACK,
    ),
    (
        ["config", "path"],
        {
            *_BACKEND,
            "pydantic",
            "convrisk.cli.commands.conv",
            "convrisk.cli.commands.risk",
            "convrisk.cli.commands.serve",
            *_SERVE_STACK,
        },
    ),
    # typer's click line converts arguments without pydantic (typer 0.29 loads it for any)
    (
        ["config", "set", "output", "json"],
        {*_BACKEND, "pydantic", "convrisk.cli.commands.conv", "convrisk.cli.commands.risk"},
    ),
    (["conv", "list", "--help"], {"convrisk.local_backend", "pydantic", "httpx", "rich", "jq"}),
    (
        ["sandbox", "verify", "--help"],
        {*_BACKEND - {"convrisk.api_client"}, *_CLIENT, "pydantic", "convrisk.cli.commands.conv"}
        | _SERVE_STACK,
    ),
    (
        ["sandbox", "fault", "add", "--help"],
        {*_BACKEND - {"convrisk.api_client"}, *_CLIENT, "pydantic", "convrisk.cli.commands.conv"}
        | _SERVE_STACK,
    ),
    (
        ["conv", "list", "-o", "json"],
        {"httpx", "rich", "tomllib", "logging", "jq", *_OTHER_COMMANDS, *_SERVE_STACK},
    ),
    # piped: TSV, no rich table
    (["conv", "list"], {"httpx", "rich", "jq", *_OTHER_COMMANDS, *_SERVE_STACK}),
    # records are plain dicts inside (DESIGN 4.1): pydantic only for a remote answer
    # and a read draws no random numbers and hashes nothing: no hashlib (OpenSSL), no random
    (["conv", "list", "-o", "json"], {"pydantic", "importlib.metadata", *_READ_ONLY_ABSENT}),
    (["conv", "list", "--all", "-o", "jsonl"], _READ_ONLY_ABSENT),
    # a new id's 80 random bits come from os.urandom: no secrets, hence no OpenSSL hashlib
    (
        ["conv", "create", "--contact-id", "c", "-o", "id"],
        {"pydantic", "httpx", "rich", *_READ_ONLY_ABSENT, *_SERVE_STACK},
    ),
    # the journal is read without a backend: no database, no HTTP client
    (
        ["history", "-o", "json"],
        {"convrisk.local_backend", "sqlite3", "httpx", "pydantic", "rich", "jq"}
        | {"convrisk.cli.journal.journaled", *_OTHER_COMMANDS, *_SERVE_STACK},
    ),
    # jq (libjq) only for --jq, not for --fields
    (["conv", "list", "--fields", "id", "-o", "jsonl"], {"httpx", "rich", "jq"}),
]


def test_commands_import_only_what_they_use(env: dict[str, str], tmp_path: Path) -> None:
    """Start-up stays short: no HTTP client for the local database, no rich unless a table is
    drawn on a terminal, no backend for help, config and --version, only the command group
    that runs, no TOML parser without a config file and no logging without --debug."""
    for n, (args, absent) in enumerate(IMPORTS):
        home = tmp_path / f"home-{n}"  # each command in a HOME of its own, as if run first
        home.mkdir()
        fresh = {
            **env,
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_CACHE_HOME": str(home / ".cache"),
        }
        code = f"from convrisk.cli.app import main\ncode = main({args!r})\n"
        try:
            assert_loads_none_of(fresh, code, absent | _UI)
        except AssertionError as failed:
            raise AssertionError(f"convrisk {' '.join(args)}: {failed}") from failed


def test_serve_refuses_a_missing_folder_for_db(env: dict[str, str], tmp_path: Path) -> None:
    missing = tmp_path / "nonexistent" / "x.db"
    result = run(env, "serve", "--port", "0", "--db", str(missing))
    assert result.returncode == 2
    assert "does not exist" in result.stderr and "token" not in result.stderr
    assert not missing.parent.exists()


def test_serve_prints_no_token_when_it_cannot_listen(env: dict[str, str], tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run(env, "serve", "--port", str(port), "--db", str(tmp_path / "s.db"))
    assert result.returncode != 0
    assert "token" not in result.stderr.lower(), result.stderr
