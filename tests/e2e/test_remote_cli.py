"""The installed `convrisk` in remote mode against a real `convrisk serve` subprocess."""

from __future__ import annotations

import contextlib
import json
import re
import shlex
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from convrisk.api_client import Client
from convrisk.api_client.remote.http import HTTPBackend
from convrisk.local_backend.backend import LocalBackend

from .both_backends import TOKEN, Remote, Serve, serving, start_serve
from .both_backends import serve as serve  # a fixture: one `convrisk serve` for this module


@pytest.fixture(scope="module")
def api(serve: Serve) -> Iterator[Client]:
    """A Python client on the module's server, to set up data quickly."""
    with Client(HTTPBackend(serve.url, TOKEN)) as client:
        yield client


@pytest.fixture
def cli(serve: Serve, tmp_path: Path) -> Remote:
    """The CLI pointed at the module's server, from a fresh HOME."""
    return Remote(tmp_path, serve.url, TOKEN)


def test_conversation_commands_end_to_end(cli: Remote) -> None:
    contact = cli.json("conv", "create", "--contact-id", "ct_e2e_1")
    group = cli.json("conv", "create", "--group-id", "grp_e2e")
    assert contact["contact_id"] == "ct_e2e_1" and contact["group_id"] is None
    assert (contact["is_muted"], contact["archived_at"]) == (False, None)
    assert group["group_id"] == "grp_e2e" and group["contact_id"] is None
    both = cli.json("conv", "get", contact["id"], group["id"])
    assert both == [contact, group]

    muted = cli.json("conv", "update", contact["id"], "--mute", "--archive")
    assert muted["is_muted"] is True and isinstance(muted["archived_at"], int)
    pinned = cli.json("conv", "update", group["id"], "--pin", "--pinned-message-id", "msg_1")
    assert (pinned["is_pinned"], pinned["pinned_message_id"]) == (True, "msg_1")
    listed = cli.json("conv", "list", "--group-id", "grp_e2e", "--pinned")
    assert listed == [pinned]
    undone = cli.json(
        "conv", "update", contact["id"], group["id"],
        "--unmute", "--unarchive", "--unpin", "--clear-pinned-message",
    )  # fmt: skip
    assert undone == [contact, group]

    deleted = cli.json("conv", "delete", contact["id"], "--yes")
    assert deleted == {"id": contact["id"], "deleted": True}
    gone = cli.run("conv", "get", contact["id"])
    assert gone.returncode == 3
    assert contact["id"] in gone.stderr


def test_conversation_list_filters_and_pages(cli: Remote, api: Client) -> None:
    made = [api.conversations.create({"group_id": "grp_pages"})["id"] for _ in range(5)]
    api.conversations.update(made[1], {"is_muted": True})
    newest_first = made[::-1]
    # Pages of 2: the CLI walks them with starting_after, over one server.
    paged = cli.run(
        "conv", "list", "--group-id", "grp_pages", "--all", "-o", "id", CONVRISK_PAGE_SIZE="2"
    )
    assert paged.returncode == 0, paged.stderr
    assert paged.stdout.split() == newest_first
    first = cli.run("conv", "list", "--group-id", "grp_pages", "--limit", "2", "-o", "id")
    assert first.stdout.split() == newest_first[:2]
    assert first.stderr  # the "more exist" hint goes to stderr, never stdout
    after = cli.json("conv", "list", "--group-id", "grp_pages", "--starting-after", made[3])
    assert [c["id"] for c in after] == newest_first[2:]
    loud = cli.json("conv", "list", "--group-id", "grp_pages", "--not-muted", "--not-archived")
    assert [c["id"] for c in loud] == [i for i in newest_first if i != made[1]]


def test_risk_commands_end_to_end(cli: Remote, api: Client, tmp_path: Path) -> None:
    created = cli.json(
        "risk", "create", "--customer-id", "cus_e2e", "--profile-type", "moderate",
        "--score", "72.5", "--details", '{"horizon": "10y"}',
    )  # fmt: skip
    assert (created["customer_id"], created["score"], created["details"]) == (
        "cus_e2e",
        72.5,
        {"horizon": "10y"},
    )
    assert created["created_at"] == created["updated_at"]
    details_file = tmp_path / "details.json"
    details_file.write_text('{"reviewed": true}')
    updated = cli.json(
        "risk", "update", created["id"], "--score", "80", "--details", f"@{details_file}"
    )
    assert (updated["score"], updated["details"]) == (80, {"reviewed": True})
    retyped = cli.json(
        "risk", "update", created["id"], "--profile-type", "aggressive", "--details", "-",
        stdin='{"via": "stdin"}',
    )  # fmt: skip
    assert (retyped["profile_type"], retyped["details"]) == ("aggressive", {"via": "stdin"})

    other = api.risk_profiles.create(
        {"customer_id": "cus_e2e", "profile_type": "conservative", "score": 10, "details": {}}
    )
    assert cli.json("risk", "get", other["id"]) == other
    listed = cli.json("risk", "list", "--customer-id", "cus_e2e")
    assert [r["id"] for r in listed] == [other["id"], created["id"]]
    typed = cli.json("risk", "list", "--customer-id", "cus_e2e", "--profile-type", "aggressive")
    assert [r["id"] for r in typed] == [created["id"]]

    deleted = cli.run("risk", "delete", created["id"], other["id"], "--yes", "-o", "jsonl")
    assert deleted.returncode == 0, deleted.stderr
    assert [json.loads(line) for line in deleted.stdout.splitlines()] == [
        {"id": created["id"], "deleted": True},
        {"id": other["id"], "deleted": True},
    ]
    assert cli.run("risk", "get", created["id"]).returncode == 3


def test_a_refusal_from_the_server_reaches_the_user_as_json(cli: Remote) -> None:
    result = cli.run("risk", "get", "rp_00000000000000000000000000", "-o", "json")
    assert result.returncode == 3
    assert result.stdout == ""
    error = json.loads(result.stderr.strip().splitlines()[-1])["error"]
    assert (error["type"], error["status"], error["id"]) == (
        "not_found_error",
        404,
        "rp_00000000000000000000000000",
    )


def test_a_wrong_token_exits_4_and_never_shows_a_token(cli: Remote) -> None:
    wrong = Remote(cli.home, cli.url, "not-the-token-0000")
    for args in (("conv", "list"), ("conv", "create", "--group-id", "g")):
        result = wrong.run(*args)
        assert result.returncode == 4, result.stderr
        assert result.stdout == ""
        assert "not-the-token-0000" not in result.stderr
        assert TOKEN not in result.stderr


def test_a_stopped_server_exits_5(tmp_path: Path) -> None:
    stopped = start_serve(tmp_path)
    code, _ = stopped.stop()
    assert code == 0
    cli = Remote(tmp_path, stopped.url, TOKEN)
    result = cli.run("conv", "list", CONVRISK_MAX_RETRIES="0")
    assert result.returncode == 5, result.stderr
    assert result.stdout == ""
    assert "Traceback" not in result.stderr


def test_a_signal_stops_serve_cleanly_with_the_database_intact(tmp_path: Path) -> None:
    # A signal reaches only a process of its own: kill's SIGTERM and Ctrl-C's SIGINT, each to
    # a serve of its own.
    for sig in (signal.SIGTERM, signal.SIGINT):
        home = tmp_path / signal.Signals(sig).name
        home.mkdir()
        with serving(home) as served:
            with Client(HTTPBackend(served.url, TOKEN)) as api:
                made = [api.conversations.create({"contact_id": f"ct_{n}"})["id"] for n in range(3)]
            code, err = served.stop(sig)
        assert code == 0, (sig, err)
        assert "Traceback" not in err
        # Each request left one access-log line, and the token none.
        posts = r"^\S+Z 127\.0\.0\.1:\d+ POST /v1/conversations 200 [0-9.]+ms$"
        assert len(re.findall(posts, err, re.M)) == 3
        assert TOKEN not in err and TOKEN not in "\n".join(served.banner)
        # The WAL was checkpointed and the file is whole: every acknowledged row is there.
        assert (
            not Path(f"{served.db_path}-wal").exists()
            or Path(f"{served.db_path}-wal").stat().st_size == 0
        )
        with Client(LocalBackend(served.db_path)) as client:
            assert [c["id"] for c in client.conversations.iterate()] == made[::-1]


def test_serve_without_a_token_keeps_one_beside_the_database_across_restarts(
    tmp_path: Path,
) -> None:
    tokens = []
    for _ in range(2):
        with serving(tmp_path, token=None) as served:
            export = _export_line(served)
            token = export["CONVRISK_TOKEN"]
            assert len(token) >= 32 and served.token == token
            assert export["CONVRISK_BASE_URL"] == served.url
            assert Remote(tmp_path, served.url, token).json("conv", "list") == []
            assert Remote(tmp_path, served.url, token + "x").run("conv", "list").returncode == 4
            code, err = served.stop()
        assert code == 0
        assert token not in err
        tokens.append(token)
    assert tokens[0] == tokens[1]
    kept = Path(f"{served.db_path}.token")
    assert kept.read_text().strip() == tokens[0]
    assert kept.stat().st_mode & 0o777 == 0o600


def _export_line(served: Serve) -> dict[str, str]:
    """The `export NAME=VALUE ...` line of the banner, as a dict (read as a shell would)."""
    lines = [line for line in served.banner if line.startswith("export ")]
    assert len(lines) == 1, served.banner
    words = shlex.split(lines[0])
    return dict(word.split("=", 1) for word in words[1:])


def test_a_second_signal_stops_serve_at_once_with_a_request_in_flight(tmp_path: Path) -> None:
    served = start_serve(tmp_path, "--latency", "30000")
    try:
        host, port = served.url.removeprefix("http://").rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10) as held:
            held.sendall(
                b"GET /v1/conversations HTTP/1.1\r\nHost: x\r\n"
                + f"Authorization: Bearer {TOKEN}\r\n\r\n".encode()
            )
            time.sleep(0.5)  # the request is in the server, waiting out its latency
            served.proc.send_signal(signal.SIGTERM)
            time.sleep(0.5)
            assert served.proc.poll() is None  # draining: the first signal waits for it
            started = time.monotonic()
            code, log = served.stop(signal.SIGINT)
            took = time.monotonic() - started
            answered = _read_all(held)
    finally:
        if served.proc.poll() is None:
            served.stop(signal.SIGKILL)
    assert code == 0, log
    assert took < 5, f"stopped {took:.1f} s after the second signal"
    assert "Traceback" not in log
    assert "GET /v1/conversations: not answered, the server stopped first." in log
    # The client is told in the error shape, not uvicorn's plain text.
    head, _, body = answered.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 503 "), answered
    assert b"retry-after: 1" in head.lower()
    assert json.loads(body)["error"]["code"] == "service_unavailable"


def _read_all(sock: socket.socket) -> bytes:
    """What the server sent on `sock` until it closed it (at most 5 s, 64 KiB)."""
    sock.settimeout(5)
    got = b""
    with contextlib.suppress(OSError):
        while len(got) < 65536:
            chunk = sock.recv(4096)
            if not chunk:
                break
            got += chunk
    return got
