"""A remote import stops at the first error that every request would meet (a wrong token, a
refused port, a server that never answers), sending nothing more; Ctrl-C stops it at once."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .both_backends import TOKEN, isolated_env, serving
from .console import CONVRISK, SAFETY_TIMEOUT

# More than one batch of the import (256), so that "the whole batch" would show.
RECORDS = 300
# The import's concurrency (api_client.remote.session.CREATE_MANY_CONCURRENCY) and its attempts per
# request at the default max_retries of 2: at most this many requests once it stops.
IN_FLIGHT = 8
ATTEMPTS = 3
ACCEPT_POLL = 0.05


def records(tmp_path: Path) -> Path:
    """A file of RECORDS conversations to create."""
    path = tmp_path / "conversations.jsonl"
    path.write_text("".join(json.dumps({"contact_id": f"c_{n}"}) + "\n" for n in range(RECORDS)))
    return path


def remote_import(
    tmp_path: Path, url: str, *extra: str, **env: str
) -> subprocess.CompletedProcess[str]:
    """`convrisk conv import` of the records against `url`, run to its end."""
    environment = isolated_env(
        tmp_path, **{"CONVRISK_BASE_URL": url, "CONVRISK_TOKEN": TOKEN, **env}
    )
    return subprocess.run(
        [str(CONVRISK), "conv", "import", str(records(tmp_path)), "-o", "jsonl", *extra],
        env=environment,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=SAFETY_TIMEOUT,
    )


class SilentServer:
    """A loopback socket that accepts connections, holds them and never answers."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(ACCEPT_POLL)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.held: list[socket.socket] = []
        self.done = threading.Event()

    def accept_until_done(self) -> None:
        """Accept (and hold) connections until `done`; bounded by SAFETY_TIMEOUT."""
        until = time.monotonic() + SAFETY_TIMEOUT
        while not self.done.is_set() and time.monotonic() < until:
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.held.append(conn)


@contextmanager
def silent_server() -> Iterator[SilentServer]:
    """A SilentServer accepting from a thread for the length of a `with`."""
    server = SilentServer()
    thread = threading.Thread(target=server.accept_until_done, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.done.set()
        thread.join(timeout=SAFETY_TIMEOUT)
        for conn in server.held:
            conn.close()
        server.sock.close()


def test_a_wrong_token_stops_a_remote_import_after_the_requests_in_flight(
    tmp_path: Path,
) -> None:
    (tmp_path / "serve").mkdir()
    with serving(tmp_path / "serve") as served:
        done = remote_import(tmp_path, served.url, CONVRISK_TOKEN="not-the-token-1234")
        time.sleep(0.2)  # the log line of the last answer
        seen = [line for line in served.log if " POST " in line]
    assert done.returncode == 4, done.stderr
    assert "refused the token" in done.stderr
    assert 1 <= len(seen) <= IN_FLIGHT, seen
    assert done.stdout == "" and "Traceback" not in done.stderr


def test_a_refused_port_stops_a_remote_import_after_the_first_request_gives_up(
    tmp_path: Path,
) -> None:
    unused = socket.socket()
    unused.bind(("127.0.0.1", 0))
    port = unused.getsockname()[1]
    unused.close()
    done = remote_import(tmp_path, f"http://127.0.0.1:{port}", "--debug")
    attempts = [line for line in done.stderr.splitlines() if "POST /v1/conversations" in line]
    assert done.returncode == 5, done.stderr
    assert "Could not reach 127.0.0.1" in done.stderr
    assert 1 <= len(attempts) <= IN_FLIGHT * ATTEMPTS, len(attempts)


def test_a_silent_server_stops_a_remote_import_after_the_first_request_times_out(
    tmp_path: Path,
) -> None:
    with silent_server() as server:
        done = remote_import(tmp_path, server.url, CONVRISK_TIMEOUT="0.5")
        connections = len(server.held)
    assert done.returncode == 5, done.stderr
    assert "did not answer in time" in done.stderr
    assert 1 <= connections <= IN_FLIGHT * ATTEMPTS, connections


def test_ctrl_c_stops_a_remote_import_at_once_and_more_ctrl_c_print_no_traceback(
    tmp_path: Path,
) -> None:
    with silent_server() as server:
        environment = isolated_env(tmp_path, CONVRISK_BASE_URL=server.url, CONVRISK_TOKEN=TOKEN)
        child = subprocess.Popen(
            [str(CONVRISK), "conv", "import", str(records(tmp_path)), "-o", "jsonl"],
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            until = time.monotonic() + SAFETY_TIMEOUT
            while len(server.held) < IN_FLIGHT and time.monotonic() < until:
                time.sleep(ACCEPT_POLL)  # every worker waits on its answer
            for _ in range(3):
                child.send_signal(signal.SIGINT)  # no-op once it has exited
                time.sleep(0.001)  # the next ones arrive while it winds down
            # The requests in flight wait up to 30 s for their answers: Ctrl-C does not.
            out, err = child.communicate(timeout=10)
        finally:
            if child.poll() is None:
                child.kill()
                child.communicate(timeout=SAFETY_TIMEOUT)
    assert child.returncode == 130, err
    assert err.count("Interrupted.") == 1, err
    assert "Traceback" not in err and "threading" not in err, err
    assert out == ""
