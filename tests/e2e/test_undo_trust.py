"""`convrisk undo` that cannot destroy what it should protect (issue 29), through the installed
script: a record changed while a long undo runs is kept (over `serve --latency`; on both
backends in-process in tests/cli/test_undo_trust.py), a field another writer set between an
update's read and its write is kept, and an undo of a delete killed (-9) at any point of its
create-then-update is finished by the next run."""

from __future__ import annotations

import http.client
import json
import os
import select
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from convrisk.api_client.records import Created
from convrisk.api_client.resources import CONVERSATIONS
from tests import described
from tests.loopback import JSONService, running, url_of

from .both_backends import Cli, isolated_env, serving
from .console import CONVRISK, SAFETY_TIMEOUT


def ok(cli: Cli, *args: str, input: str | None = None) -> str:
    """Run convrisk, which must succeed; its stdout."""
    result = cli.run(*args, input=input)
    assert result.returncode == 0, result.stderr
    return result.stdout


@contextmanager
def cli_over_serve(home: Path, *serve_args: str) -> Iterator[Cli]:
    """convrisk against its own `convrisk serve` started with `serve_args`."""
    with serving(home, *serve_args) as served:
        env = isolated_env(home, CONVRISK_BASE_URL=served.url, CONVRISK_TOKEN=served.token)
        made = Cli("remote", home, served.db_path, env, serve=served)
        try:
            yield made
        finally:
            made.close()


def first_line_then(proc: subprocess.Popen[str], action: Callable[[], object]) -> tuple[str, str]:
    """Wait for the first line `proc` prints (its writes have begun), do `action` while it runs,
    then read the rest; all its stdout, and its stderr.

    Nothing more is read until `action` is done, so a command printing a line per write blocks
    on the full pipe within a few hundred writes: `action` lands while it is still writing.
    """
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    # Read from the pipe itself: what a buffered readline took beyond its line would be lost to
    # communicate(), which reads the pipe, not the file object's buffer.
    seen = b""
    while b"\n" not in seen:
        ready, _, _ = select.select([fd], [], [], SAFETY_TIMEOUT)
        assert ready, f"the command printed no line: {seen!r}"
        chunk = os.read(fd, 4096)
        assert chunk, f"the command ended before a line: {seen!r}"
        seen += chunk
    action()
    rest, stderr = proc.communicate(timeout=SAFETY_TIMEOUT)
    return seen.decode() + rest, stderr


def test_a_record_changed_while_a_long_undo_runs_is_kept(tmp_path: Path) -> None:
    # Against a serve that waits 2 ms before each answer, changed by a writer in this process
    # while the undo's process writes; 3,000 on the local database, and both backends with the
    # change made at a known point, in-process in tests/cli/test_undo_trust.py.
    count = 700
    with cli_over_serve(tmp_path, "--latency", "2") as cli:
        cli.env["CONVRISK_JOURNAL"] = str(tmp_path / "journal.jsonl")
        made = cli.store.risk_profiles.create_many(
            [
                (
                    {"customer_id": f"cus_{n}", "profile_type": "moderate", "score": 10,
                     "details": {}},
                    None,
                )
                for n in range(count)
            ],
            stop_on_error=True,
        )  # fmt: skip
        ids = [result.record["id"] for result in made if isinstance(result, Created)]
        assert len(ids) == count
        ok(cli, "risk", "update", "-", "--score", "50", "--yes", input="\n".join(ids) + "\n")
        assert {cli.store.risk_profiles.retrieve(i)["score"] for i in ids} == {50}
        # Undo goes newest entry first: the first id is put back last.
        undo = cli.popen("undo", "--last", "--yes", "-o", "jsonl", "--max-affected", "10000")
        out, stderr = first_line_then(
            undo, lambda: cli.store.risk_profiles.update(ids[0], {"score": 99})
        )
        assert undo.returncode == 1
        assert f"{ids[0]} changed since the update (score): left alone." in stderr
        assert len(out.splitlines()) == count - 1
        assert cli.store.risk_profiles.retrieve(ids[0])["score"] == 99
        assert {cli.store.risk_profiles.retrieve(i)["score"] for i in ids[1:]} == {10}


class Interposer(JSONService):
    """Forwards every request to the upstream serve, after `hook(method, path, phase)` of the
    server: phase "before" the request is forwarded and "after" its answer came, before it is
    passed on. A hook that returns False holds the request: no answer, ever (the client is
    killed meanwhile)."""

    server: Interposing

    def do_GET(self) -> None:
        self.forward()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    def forward(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        if not self.server.hook(self.command, self.path, "before"):
            return self.hold()
        host, port = self.server.upstream
        upstream = http.client.HTTPConnection(host, port, timeout=SAFETY_TIMEOUT)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
        upstream.request(self.command, self.path, body, headers)
        answer = upstream.getresponse()
        data = answer.read()
        upstream.close()
        if not self.server.hook(self.command, self.path, "after"):
            return self.hold()
        self.send_response(answer.status)
        for name, value in answer.getheaders():
            if name.lower() not in ("connection", "content-length", "transfer-encoding"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)

    def hold(self) -> None:
        """Keep the request unanswered until the test lets go (the client is gone by then)."""
        self.server.held.set()
        self.server.release.wait(SAFETY_TIMEOUT)
        self.close_connection = True


def passes(method: str, path: str, phase: str) -> bool:
    """The hook that holds nothing."""
    return True


class Interposing(ThreadingHTTPServer):
    """The server of Interposer, on 127.0.0.1: the upstream's address and the hook."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        super().__init__(("127.0.0.1", 0), Interposer)
        self.upstream = upstream
        self.hook: Callable[[str, str, str], bool] = passes
        self.held = threading.Event()
        self.release = threading.Event()


@contextmanager
def interposed(cli: Cli) -> Iterator[Interposing]:
    """A forwarding service in front of the cli's serve; the cli pointed at it."""
    assert cli.serve is not None
    parts = urlsplit(cli.serve.url)
    assert parts.hostname is not None and parts.port is not None
    server = Interposing((parts.hostname, parts.port))
    with running(server):
        cli.env["CONVRISK_BASE_URL"] = url_of(server)
        try:
            yield server
        finally:
            server.release.set()


def test_a_field_another_writer_set_between_an_update_s_read_and_write_is_kept(
    tmp_path: Path,
) -> None:
    with cli_over_serve(tmp_path) as cli, interposed(cli) as proxy:
        cli.env["CONVRISK_JOURNAL"] = str(tmp_path / "journal.jsonl")
        id = ok(cli, "conv", "create", "--contact-id", "c_1", "-o", "id").strip()

        def pin_first(method: str, path: str, phase: str) -> bool:
            if (method, phase) == ("PUT", "before"):  # update's read is done, its write not yet
                cli.store.conversations.update(id, {"is_pinned": True})
            return True

        proxy.hook = pin_first
        ok(cli, "conv", "update", id, "--mute")
        proxy.hook = passes
        [row] = json.loads(ok(cli, "undo", "--last", "-o", "json"))
        assert row["body"] == {"is_muted": False}
        now = cli.store.conversations.retrieve(id)
        assert (now["is_muted"], now["is_pinned"]) == (False, True)


# Where the undo is killed: before its create is sent, once the create is done but before its
# answer, before the update of what a create does not take, and once that is done unanswered.
KILLED_AT = [("POST", "before"), ("POST", "after"), ("PUT", "before"), ("PUT", "after")]


def test_an_undo_of_a_delete_killed_midway_is_finished_by_the_next_run(tmp_path: Path) -> None:
    # A kill -9 is the point, and only a real process can take one: each of the four points
    # once, one after the other on one serve, each on a record of its own.
    with cli_over_serve(tmp_path) as cli, interposed(cli) as proxy:
        cli.env["CONVRISK_JOURNAL"] = str(tmp_path / "journal.jsonl")
        for n, (method, phase) in enumerate(KILLED_AT):
            killed_midway_then_finished(cli, proxy, f"c_{n}", method, phase)


def killed_midway_then_finished(
    cli: Cli, proxy: Interposing, contact: str, method: str, phase: str
) -> None:
    """Make, change and delete a conversation of `contact`; kill `undo --last` when its request
    `method` reaches `phase`; the next `undo --last` puts exactly one record back for it."""
    proxy.hook = passes
    proxy.held.clear()
    id = ok(cli, "conv", "create", "--contact-id", contact, "-o", "id").strip()
    ok(cli, "conv", "update", id, "--mute", "--pin", "--pinned-message-id", "m_7")
    deleted = cli.store.conversations.retrieve(id)
    ok(cli, "conv", "delete", id, "--yes")
    proxy.hook = lambda m, path, p: (m, p) != (method, phase)
    undo = subprocess.Popen(
        [CONVRISK, "undo", "--last"],
        env=cli.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        assert proxy.held.wait(SAFETY_TIMEOUT), f"the undo's request never came ({method}, {phase})"
    finally:
        undo.send_signal(signal.SIGKILL)
        undo.wait(timeout=SAFETY_TIMEOUT)
    proxy.hook = passes
    result = cli.run("undo", "--last", "-o", "json")
    assert result.returncode == 0, (method, phase, result.stderr)
    assert "already undone" not in result.stderr
    [row] = json.loads(result.stdout)
    assert (row["status"], row["stands_for"]) == ("undone", id)
    mine = [c for c in every_conversation(cli) if c.get("contact_id") == contact]
    [made] = mine  # exactly one record for the one deleted
    assert made["id"] == row["id"] != id
    names = described.settable(CONVERSATIONS)
    assert {n: made[n] for n in names} == {n: deleted[n] for n in names}  # type: ignore[literal-required]
    again = cli.run("undo", row["entry"])  # the delete is undone now: once is enough
    assert again.returncode == 1 and "already undone by" in again.stderr
    assert len([c for c in every_conversation(cli) if c.get("contact_id") == contact]) == 1


def every_conversation(cli: Cli) -> list[Any]:
    """Every conversation the database holds (at most 100)."""
    page = cli.store.conversations.list(limit=100)
    assert not page["has_more"]
    return list(page["data"])
