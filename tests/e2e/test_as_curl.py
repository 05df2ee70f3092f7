"""`--as-curl` and `User-Agent` through the installed convrisk: every command that sends requests
prints them as curl command lines and sends nothing, on both backends; the lines run, and send
what convrisk itself sends. Each behaviour runs once here; its variants (both backends, every
command) run in-process in tests/cli/test_as_curl.py, under the same test names."""

from __future__ import annotations

import json
import shlex
import subprocess
import time
from pathlib import Path
from typing import Any

from convrisk import api_client
from convrisk.local_backend.backend import LocalBackend
from tests.cli.recording_service import comparable, recorder

from .both_backends import Cli, Serve, isolated_env, local_cli, over_serve, remote_cli
from .console import SAFETY_TIMEOUT, assert_loads_none_of, run

__all__ = ["over_serve"]  # a fixture

USER_AGENT = f"convrisk/{api_client.__version__}"


def curl_lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    """stdout of a run with --as-curl, which must succeed: one curl line each."""
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert all(line.startswith("curl ") for line in lines), result.stdout
    return lines


def method_of(line: str) -> str:
    """The method of a printed line (`curl -X METHOD ...`)."""
    return shlex.split(line)[2]


def bash(line: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run a printed line in bash, with only PATH and `env` set (no proxy)."""
    return subprocess.run(
        ["bash", "-c", line],
        env={"PATH": "/usr/bin:/bin", **env},
        capture_output=True,
        text=True,
        timeout=SAFETY_TIMEOUT,
    )


def stored(db: Path) -> list[Any]:
    """Every conversation and risk profile in a database, as stored."""
    backend = LocalBackend(db)
    try:
        return [
            *backend.conversations.list(limit=100)["data"],
            *backend.risk_profiles.list(limit=100)["data"],
        ]
    finally:
        backend.close()


def assert_no_request_reached(served: Serve, logged_before: int) -> None:
    """serve logged no request since `logged_before` lines: one real request (a status) is
    sent, its line awaited, and it must be the only new one."""
    env = isolated_env(Path(served.db_path).parent / "probe")
    result = run({**env, "CONVRISK_BASE_URL": served.url, "CONVRISK_TOKEN": served.token}, "status")
    assert result.returncode == 0, result.stderr
    deadline = time.monotonic() + SAFETY_TIMEOUT
    while len(served.log) <= logged_before and time.monotonic() < deadline:
        time.sleep(0.05)
    new = served.log[logged_before:]
    assert len(new) == 1 and "GET /v1/conversations?limit=1 200" in new[0], new


def test_every_command_that_sends_prints_its_requests_and_sends_nothing(over_serve: Cli) -> None:
    # One command (an import: creates and updates), --as-curl before and after it; every
    # command on both backends in-process.
    cli = over_serve
    assert cli.serve is not None
    a, b = (cli.store.conversations.create({"contact_id": f"c_{n}"})["id"] for n in (1, 2))
    records = cli.home / "records.jsonl"
    records.write_text(
        '{"contact_id": "c_new"}\n{"group_id": "g_new"}\n'
        + json.dumps({"id": a, "is_muted": True})
        + "\n"
        + json.dumps({"id": b, "is_pinned": True})
    )
    before = stored(cli.db_path)
    logged = len(cli.serve.log)
    args = ["conv", "import", str(records)]
    for argv in (["--as-curl", *args], [*args, "--as-curl"]):
        result = cli.run(*argv)
        assert [method_of(line) for line in curl_lines(result)] == ["POST", "POST", "PUT", "PUT"]
        assert "nothing was sent" in result.stderr
        assert cli.serve.token not in result.stdout + result.stderr
    assert stored(cli.db_path) == before
    assert_no_request_reached(cli.serve, logged)


def test_a_list_prints_its_first_page_and_says_why_it_stops_there(over_serve: Cli) -> None:
    cli = over_serve
    whole = cli.run("conv", "list", "--all", "--as-curl")
    assert len(curl_lines(whole)) == 1
    assert "only the first page" in whole.stderr
    short = cli.run("conv", "list", "--limit", "5", "--as-curl")
    assert "limit=5" in curl_lines(short)[0] and "first page" not in short.stderr


def test_commands_that_send_nothing_refuse_as_curl(over_serve: Cli) -> None:
    # serve (which would start a process that listens) and a plan; `config path` and
    # `history` as well, in-process.
    cli = over_serve
    result = cli.run("--as-curl", "serve", "--port", "0")
    assert result.returncode == 2 and "sends none" in result.stderr
    assert result.stdout == ""
    planned = cli.run("conv", "create", "--contact-id", "c_1", "--dry-run", "--as-curl")
    assert planned.returncode == 0 and planned.stdout == ""
    assert "made no request" in planned.stderr


def test_printed_lines_run_with_curl_against_serve(over_serve: Cli) -> None:
    # The remote backend's lines, against its own serve (the local backend's: in-process).
    cli = over_serve
    assert cli.serve is not None
    target = cli.serve
    shell = {"CONVRISK_TOKEN": target.token, "CONVRISK_BASE_URL": target.url}
    (create,) = curl_lines(cli.run("conv", "create", "--contact-id", "c_curl", "--as-curl"))
    made = json.loads(bash(create, **shell).stdout)
    assert made["contact_id"] == "c_curl" and made["id"].startswith("conv_")
    again = json.loads(bash(create, **shell).stdout)  # the same Idempotency-Key: replayed
    assert again == made
    (update,) = curl_lines(cli.run("conv", "update", made["id"], "--mute", "--as-curl"))
    assert json.loads(bash(update, **shell).stdout)["is_muted"] is True
    (delete,) = curl_lines(cli.run("conv", "delete", made["id"], "--as-curl"))
    assert json.loads(bash(delete, **shell).stdout) == {"id": made["id"], "deleted": True}
    risk = cli.run(
        "risk", "create", "--customer-id", "cus_é", "--profile-type", "moderate", "--score",
        "72.5", "--details", '{"note": "it\'s \\u0007 here"}', "--as-curl",
    )  # fmt: skip
    profile = json.loads(bash(curl_lines(risk)[0], **shell).stdout)
    assert profile["customer_id"] == "cus_é" and profile["details"] == {"note": "it's \x07 here"}
    assert [r["id"] for r in stored(target.db_path)] == [profile["id"]]


def test_both_backends_print_the_same_requests(tmp_path: Path) -> None:
    for name in ("local", "remote"):
        (tmp_path / name).mkdir()
    local = local_cli(tmp_path / "local")
    remote = remote_cli(tmp_path / "remote")
    assert remote.serve is not None
    try:
        # One command here; an import as well, in-process.
        args = ["conv", "update", "conv_01HV0000000000000000000000", "--mute"]
        printed = [curl_lines(c.run(*args, "--as-curl")) for c in (local, remote)]
        from_local, from_remote = ([shlex.split(line) for line in lines] for lines in printed)
        with_url = [
            [word.replace("$CONVRISK_BASE_URL", remote.serve.url) for word in words]
            for words in from_local
        ]
        assert with_url == from_remote
    finally:
        local.close()
        remote.close()
        remote.serve.stop()


def test_every_request_carries_the_user_agent(tmp_path: Path) -> None:
    records = tmp_path / "records.jsonl"
    records.write_text(
        '{"contact_id": "c_1"}\n{"contact_id": "c_2"}\n{"id": "conv_1", "is_muted": true}\n'
    )
    # One command (an import: reads, creates, an update), its version as the installed script
    # has it; every command in-process.
    with recorder() as (url, seen):
        env = isolated_env(tmp_path, CONVRISK_BASE_URL=url, CONVRISK_TOKEN="tok")
        result = run(env, "conv", "import", str(records))
        assert result.returncode == 0, result.stderr
        assert len(seen) >= 3 and {"POST", "PUT"} <= {m for m, *_ in seen}
        assert {headers.get("user-agent") for _, _, headers, _ in seen} == {USER_AGENT}


def test_printed_lines_send_what_convrisk_sends(tmp_path: Path) -> None:
    records = tmp_path / "records.jsonl"
    records.write_text(
        '{"contact_id": "c_1"}\n{"group_id": "g_é"}\n{"id": "conv_1", "archived_at": 1714564800}\n'
    )
    # One command (an import: several requests at once); every command in-process.
    args = ["conv", "import", str(records)]
    with recorder() as (url, seen):
        env = isolated_env(tmp_path, CONVRISK_BASE_URL=url, CONVRISK_TOKEN="tok")
        # The journal reads a record before changing it, for itself: --as-curl journals
        # nothing, so the operation's own requests are compared.
        assert run({**env, "CONVRISK_JOURNAL": "off"}, *args).returncode == 0
        sent = list(seen)
        del seen[:]
        for line in curl_lines(run(env, *args, "--as-curl")):
            bash(line, CONVRISK_TOKEN="tok")
        by_curl = list(seen)
        assert len(sent) == len(by_curl) > 0
        assert comparable(sent) == comparable(by_curl)


def test_guarded_profiles_print_without_a_question_and_nothing_is_journaled(
    over_serve: Cli, tmp_path: Path
) -> None:
    # A delete under a protected profile; every write under it and a read-only one, on both
    # backends, in-process.
    cli = over_serve
    a = cli.store.conversations.create({"contact_id": "c_1"})["id"]
    assert cli.run("config", "set", "--profile", "prod", "protected", "true").returncode == 0
    journal = tmp_path / "journal.jsonl"
    before = stored(cli.db_path)
    # No terminal and no --yes: a question or a refusal would be exit 2.
    result = cli.run(
        "--profile", "prod", "conv", "delete", a, "--as-curl", CONVRISK_JOURNAL=str(journal)
    )
    assert [method_of(line) for line in curl_lines(result)] == ["DELETE"]
    assert "nothing was sent" in result.stderr
    # Run by hand, the line writes past every guard: said once, as a warning.
    warning = "Warning: The profile 'prod' is protected: the printed writes, run by hand"
    assert warning in result.stderr
    assert stored(cli.db_path) == before
    assert not journal.exists()


def test_on_a_terminal_a_protected_write_asks_nothing_and_the_line_shows_no_control(
    over_serve: Cli,
) -> None:
    from .screen import Terminal

    # On a real terminal, two writes: a delete (which would ask) and a body holding a control
    # character (escaped in its line); the local backend's in-process.
    cli = over_serve

    a = cli.run("conv", "create", "--contact-id", "c_1", "-o", "id").stdout.strip()
    assert cli.run("config", "set", "--profile", "prod", "protected", "true").returncode == 0
    before = stored(cli.db_path)
    body = '{"is_muted": true,\n "note": "\u202e\x1b"}'.replace("\x1b", "\\u001b")
    for args in (
        ["conv", "delete", a],
        ["api", "-X", "PUT", f"/v1/conversations/{a}", "-d", body],
    ):
        # A question would wait for an answer that never comes: finish() would time out.
        term = Terminal(cli.env, ["--profile", "prod", *args, "--as-curl"], columns=80)
        assert term.finish() == 0
        screen = term.text()
        assert not any("Type the number" in line for line in screen), screen
        assert not any("\u202e" in line for line in screen), screen
        assert screen[0].startswith("curl -X ")
        printed = "".join(
            screen[: next(n for n, line in enumerate(screen) if "nothing was sent" in line)]
        )
        assert ("\\xe2\\x80\\xae" in printed) == (args[0] == "api")
    assert stored(cli.db_path) == before


def test_as_curl_loads_only_when_used_and_never_the_database(env: dict[str, str]) -> None:
    # What a run imports can be seen only in a fresh interpreter: one child per command.
    for args, absent in (
        # Without --as-curl nothing of it is loaded (nor httpx, for the local database).
        (
            ["conv", "list", "-o", "json"],
            {"convrisk.cli.output.as_curl", "convrisk.api_client.remote.capture"},
        ),
        (["conv", "create", "--contact-id", "c_1"], {"convrisk.cli.output.as_curl", "httpx"}),
        # With it, the local backend is never loaded: the database is not even opened.
        (["conv", "list", "--as-curl"], {"convrisk.local_backend", "sqlite3"}),
        (["conv", "import", "-", "--as-curl"], {"convrisk.local_backend", "sqlite3"}),
    ):
        call = f"from convrisk.cli.app import main\ncode = main({args!r})\n"
        assert_loads_none_of(env, call, absent)
