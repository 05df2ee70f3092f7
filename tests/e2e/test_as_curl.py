"""`--as-curl` and `User-Agent` through the installed convrisk: every command that sends requests
prints them as curl command lines and sends nothing, on both backends; the lines run, and send
what convrisk itself sends."""

from __future__ import annotations

import json
import shlex
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from convrisk import api_client
from convrisk.local_backend.store import LocalBackend
from tests.loopback import JSONService, on_loopback, running, url_of

from .both_backends import Cli, Serve, cli, isolated_env, local_cli, remote_cli, serving  # noqa: F401
from .console import SAFETY_TIMEOUT, assert_loads_none_of, run

USER_AGENT = f"convrisk/{api_client.__version__}"
# The headers a curl line must send as convrisk does (curl writes Host and Content-Length).
SENT_HEADERS = ("user-agent", "accept", "authorization", "content-type", "idempotency-key")


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


def test_every_command_that_sends_prints_its_requests_and_sends_nothing(cli: Cli) -> None:  # noqa: F811
    a, b = (
        cli.run("conv", "create", "--contact-id", f"c_{n}", "-o", "id").stdout.strip()
        for n in (1, 2)
    )
    rp = cli.run(
        "risk", "create", "--customer-id", "cus_1", "--profile-type", "moderate",
        "--score", "50", "-o", "id",
    ).stdout.strip()  # fmt: skip
    records = cli.home / "records.jsonl"
    records.write_text(
        '{"contact_id": "c_new"}\n{"group_id": "g_new"}\n'
        + json.dumps({"id": a, "is_muted": True})
        + "\n"
        + json.dumps({"id": b, "is_pinned": True})
    )
    before = stored(cli.db_path)
    logged = len(cli.serve.log) if cli.serve is not None else 0
    cases = [
        (["conv", "create", "--contact-id", "c_9"], ["POST"]),
        (["conv", "update", a, b, "--mute"], ["PUT", "PUT"]),
        (["conv", "delete", a, b], ["DELETE", "DELETE"]),  # no --yes, no terminal: no question
        (["risk", "delete", rp, "--yes"], ["DELETE"]),
        (["conv", "get", a, b, "-o", "json"], ["GET", "GET"]),
        (["conv", "list", "--all", "-o", "jsonl"], ["GET"]),
        (["conv", "import", str(records)], ["POST", "POST", "PUT", "PUT"]),
        (["conv", "import", str(records), "--dry-run"], ["GET", "GET"]),
        (["api", "-X", "PUT", f"/v1/conversations/{a}", "-d", '{"is_muted": true}'], ["PUT"]),
        (["status", "-o", "json"], ["GET"]),
        (["conv", "update", a, "--unmute", "--dry-run"], ["GET"]),
    ]
    for args, methods in cases:
        for argv in (["--as-curl", *args], [*args, "--as-curl"]):
            result = cli.run(*argv)
            assert [method_of(line) for line in curl_lines(result)] == methods, argv
            assert "nothing was sent" in result.stderr
            if cli.serve is not None:
                assert cli.serve.token not in result.stdout + result.stderr
    assert stored(cli.db_path) == before
    if cli.serve is not None:
        assert_no_request_reached(cli.serve, logged)


def test_a_list_prints_its_first_page_and_says_why_it_stops_there(cli: Cli) -> None:  # noqa: F811
    whole = cli.run("conv", "list", "--all", "--as-curl")
    assert len(curl_lines(whole)) == 1
    assert "only the first page" in whole.stderr
    short = cli.run("conv", "list", "--limit", "5", "--as-curl")
    assert "limit=5" in curl_lines(short)[0] and "first page" not in short.stderr


def test_commands_that_send_nothing_refuse_as_curl(cli: Cli) -> None:  # noqa: F811
    for argv in (
        ["config", "path", "--as-curl"],
        ["--as-curl", "serve", "--port", "0"],
        ["history", "--as-curl"],
    ):
        result = cli.run(*argv)
        assert result.returncode == 2 and "sends none" in result.stderr, argv
        assert result.stdout == ""
    planned = cli.run("conv", "create", "--contact-id", "c_1", "--dry-run", "--as-curl")
    assert planned.returncode == 0 and planned.stdout == ""
    assert "made no request" in planned.stderr


@pytest.fixture
def target(cli: Cli, tmp_path: Path) -> Iterator[Serve]:  # noqa: F811
    """The serve the printed lines are run against: the remote backend's own, or a new one."""
    if cli.serve is not None:
        yield cli.serve
        return
    home = tmp_path / "target"
    home.mkdir()
    with serving(home) as served:
        yield served


def test_printed_lines_run_with_curl_against_serve(cli: Cli, target: Serve) -> None:  # noqa: F811
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
        records = tmp_path / "records.jsonl"
        id = "conv_01HV0000000000000000000000"
        records.write_text('{"contact_id": "c_1"}\n' + json.dumps({"id": id, "is_pinned": True}))
        for args in (["conv", "import", str(records)], ["conv", "update", id, "--mute"]):
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


class Recorder(JSONService):
    """A service that answers every request plausibly and records it: method, path, headers
    (names in lower case) and body."""

    seen: list[tuple[str, str, dict[str, str], bytes]]
    lock = threading.Lock()

    def _record(self) -> tuple[str, str]:
        size = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(size) if size else b""
        path = urlsplit(self.path).path
        headers = {name.lower(): value for name, value in self.headers.items()}
        with self.lock:
            self.seen.append((self.command, self.path, headers, body))
        return path, path.rsplit("/", 1)[-1]

    def do_GET(self) -> None:
        path, last = self._record()
        if path.count("/") == 2:
            self.send_json(200, {"has_more": False, "data": [{"id": "conv_1"}]})
        else:
            self.send_json(200, {"id": last})

    def do_POST(self) -> None:
        self._record()
        self.send_json(201, {"id": "conv_new"})

    def do_PUT(self) -> None:
        _, last = self._record()
        self.send_json(200, {"id": last})

    def do_DELETE(self) -> None:
        _, last = self._record()
        self.send_json(200, {"id": last, "deleted": True})

    def do_PATCH(self) -> None:
        _, last = self._record()
        self.send_json(200, {"id": last})


@contextmanager
def recorder() -> Iterator[tuple[str, list[tuple[str, str, dict[str, str], bytes]]]]:
    """A Recorder on 127.0.0.1: its URL and what it has seen."""
    seen: list[tuple[str, str, dict[str, str], bytes]] = []
    handler = type("Recording", (Recorder,), {"seen": seen})
    with running(on_loopback(handler)) as server:
        yield url_of(server), seen


def test_every_request_carries_the_user_agent(tmp_path: Path) -> None:
    records = tmp_path / "records.jsonl"
    records.write_text(
        '{"contact_id": "c_1"}\n{"contact_id": "c_2"}\n{"id": "conv_1", "is_muted": true}\n'
    )
    commands = [
        ["conv", "list", "--all"],
        ["conv", "get", "conv_1", "conv_2"],
        ["conv", "create", "--contact-id", "c_1"],
        ["conv", "update", "conv_1", "--mute"],
        ["conv", "delete", "conv_1", "--yes"],
        ["conv", "import", str(records)],
        ["risk", "list"],
        ["api", "-X", "POST", "/v1/risk-profiles", "-d", "{}"],
        ["status"],
    ]
    with recorder() as (url, seen):
        env = isolated_env(tmp_path, CONVRISK_BASE_URL=url, CONVRISK_TOKEN="tok")
        for args in commands:
            result = run(env, *args)
            assert result.returncode == 0, (args, result.stderr)
        # At least one request per command's operation (a journaled write may read first).
        assert len(seen) >= 12 and {m for m, *_ in seen} == {"GET", "POST", "PUT", "DELETE"}
        assert {headers.get("user-agent") for _, _, headers, _ in seen} == {USER_AGENT}


def test_printed_lines_send_what_convrisk_sends(tmp_path: Path) -> None:
    records = tmp_path / "records.jsonl"
    records.write_text(
        '{"contact_id": "c_1"}\n{"group_id": "g_é"}\n{"id": "conv_1", "archived_at": 1714564800}\n'
    )
    commands = [
        ["conv", "import", str(records)],
        ["conv", "update", "conv_1", "conv_2", "--pin", "--archived-at", "2024-05-01"],
        ["conv", "delete", "conv_1", "--yes"],
        ["risk", "create", "--customer-id", "c", "--profile-type", "low", "--score", "1"],
        ["api", "-X", "PATCH", "/v1/conversations/conv_1?x=1", "-d", '{\n "a": "\\u00e9"\n}'],
    ]
    with recorder() as (url, seen):
        env = isolated_env(tmp_path, CONVRISK_BASE_URL=url, CONVRISK_TOKEN="tok")
        for args in commands:
            del seen[:]
            # The journal reads a record before changing it, for itself: --as-curl journals
            # nothing, so the operation's own requests are compared.
            assert run({**env, "CONVRISK_JOURNAL": "off"}, *args).returncode == 0
            sent = list(seen)
            del seen[:]
            for line in curl_lines(run(env, *args, "--as-curl")):
                bash(line, CONVRISK_TOKEN="tok")
            by_curl = list(seen)
            assert len(sent) == len(by_curl) > 0, args

            def kept(requests: list[tuple[str, str, dict[str, str], bytes]]) -> list[Any]:
                """The requests' parts that must agree, in one order (an import sends several
                creates at once)."""
                return sorted(
                    (method, path, [headers.get(h) for h in SENT_HEADERS], body)
                    for method, path, headers, body in requests
                )

            if args[1] == "create":  # a create's random key: the one printed is another
                for requests in (sent, by_curl):
                    for request in requests:
                        request[2].pop("idempotency-key")
            assert kept(sent) == kept(by_curl), args


def test_guarded_profiles_print_without_a_question_and_nothing_is_journaled(
    cli: Cli,  # noqa: F811
    tmp_path: Path,
) -> None:
    made = cli.run("conv", "create", "--contact-id", "c_1", "-o", "id", CONVRISK_JOURNAL="off")
    a = made.stdout.strip()
    records = tmp_path / "records.jsonl"
    records.write_text('{"contact_id": "c_2"}\n' + json.dumps({"id": a, "is_pinned": True}))
    for key in ("read_only", "protected"):
        assert cli.run("config", "set", "--profile", key, key, "true").returncode == 0
    journal = tmp_path / "journal.jsonl"
    before = stored(cli.db_path)
    writes = [
        ["conv", "create", "--contact-id", "c_3"],
        ["conv", "update", a, "--mute"],
        ["conv", "delete", a],
        ["conv", "import", str(records)],
        ["api", "-X", "DELETE", f"/v1/conversations/{a}"],
    ]
    for profile in ("read_only", "protected"):
        for args in writes:
            # No terminal and no --yes: a question or a refusal would be exit 2.
            result = cli.run(
                "--profile", profile, *args, "--as-curl", CONVRISK_JOURNAL=str(journal)
            )
            assert curl_lines(result), (profile, args)
            assert "nothing was sent" in result.stderr
            # Run by hand, the line writes past every guard: said once, as a warning.
            mark = profile.replace("_", "-")
            warning = f"Warning: The profile {profile!r} is {mark}: the printed writes, run by hand"
            assert warning in result.stderr
    assert stored(cli.db_path) == before
    assert not journal.exists()


def test_on_a_terminal_a_protected_write_asks_nothing_and_the_line_shows_no_control(
    cli: Cli,  # noqa: F811
) -> None:
    from .screen import Terminal

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


@pytest.mark.parametrize(
    ("args", "absent"),
    [
        # Without --as-curl nothing of it is loaded (nor httpx, for the local database).
        (["conv", "list", "-o", "json"], {"convrisk.cli.as_curl", "convrisk.api_client.capture"}),
        (["conv", "create", "--contact-id", "c_1"], {"convrisk.cli.as_curl", "httpx"}),
        # With it, the local backend is never loaded: the database is not even opened.
        (["conv", "list", "--as-curl"], {"convrisk.local_backend", "sqlite3"}),
        (["conv", "import", "-", "--as-curl"], {"convrisk.local_backend", "sqlite3"}),
    ],
)
def test_as_curl_loads_only_when_used_and_never_the_database(
    env: dict[str, str], args: list[str], absent: set[str]
) -> None:
    assert_loads_none_of(env, f"from convrisk.cli.app import main\ncode = main({args!r})\n", absent)
