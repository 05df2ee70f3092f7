"""serve's memory as a whole, through the installed script on 127.0.0.1: the heads not yet
complete share one budget across all connections, the proxy holds the upstream's answers within
one body budget, and memory is given back once connections close."""

from __future__ import annotations

import json
import re
import resource
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import ClassVar

import httpx
import pytest

from convrisk.local_backend.serve.memory import BODY_BUDGET, HEAD_BUDGET
from tests.loopback import JSONService, on_loopback, running, url_of

from .both_backends import TOKEN, Serve, serving

pytestmark = pytest.mark.e2e

HEAD_BYTES = 65_000
# The heads that fit in the budget, and some more that do not.
FIT = HEAD_BUDGET // HEAD_BYTES
CONNECTIONS = FIT + 120
READ_SECONDS = 15.0  # at most, for any one read (serve's head deadline is 10 s)
SETTLE_SECONDS = 30.0  # at most, for serve to read what was sent to it
MIB = 1024 * 1024
AUTH = {"Authorization": f"Bearer {TOKEN}"}
CONV = "/v1/conversations"


@contextmanager
def descriptors(wanted: int) -> Iterator[None]:
    """This process's (and so serve's) descriptor limit raised to `wanted` for the block."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < wanted:
        pytest.skip(f"needs {wanted} descriptors; the hard limit is {hard}")
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        yield
        return
    resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def head(method: bytes) -> bytes:
    """A request head of HEAD_BYTES bytes that never ends (headers of 4,000 bytes, no blank
    line)."""
    start = method + b" /v1/conversations HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    pads = b"".join(b"X-Pad-%d: %s\r\n" % (n, b"a" * 4000) for n in range(HEAD_BYTES // 4000 + 1))
    sent = (start + pads)[:HEAD_BYTES]
    assert len(sent) == HEAD_BYTES and b"\r\n\r\n" not in sent
    return sent


def port_of(served: Serve) -> int:
    """The port serve listens on."""
    return int(served.url.rsplit(":", 1)[1])


def unread(port: int) -> int:
    """Bytes in the receive queues of serve's side of its connections: not read by it yet."""
    total = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in Path(table).read_text().splitlines()[1:]:
            fields = row.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port:
                total += int(fields[4].split(":")[1], 16)
    return total


def settle(port: int) -> None:
    """Wait until serve has read everything sent to it (SETTLE_SECONDS at most)."""
    deadline = time.monotonic() + SETTLE_SECONDS
    while unread(port) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not unread(port), "serve did not read what was sent"
    time.sleep(0.3)  # and parsed it


def open_heads(port: int, sent: bytes, count: int) -> list[socket.socket]:
    """`count` connections, each having sent `sent` (a head that never ends)."""
    socks = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=READ_SECONDS)
        socks.append(sock)
        sock.sendall(sent)
    return socks


def answered(sock: socket.socket) -> bytes | None:
    """What serve sent on this connection by now, up to its close (None: nothing, still open)."""
    sock.setblocking(False)
    try:
        first = sock.recv(65536)
    except BlockingIOError:
        return None
    sock.settimeout(READ_SECONDS)
    data = first
    while first:
        first = sock.recv(65536)
        data += first
    return data


def ordinary(port: int) -> int:
    """The status of one ordinary request (a small head, whole, with the token)."""
    with socket.create_connection(("127.0.0.1", port), timeout=READ_SECONDS) as sock:
        sock.sendall(
            b"GET /v1/conversations?limit=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Authorization: Bearer " + TOKEN.encode() + b"\r\nConnection: close\r\n\r\n"
        )
        data = b""
        while b"\r\n" not in data:
            chunk = sock.recv(4096)
            assert chunk, "closed without an answer"
            data += chunk
    return int(data.split(b" ", 2)[1])


def rss_mib(served: Serve) -> float:
    """serve's resident memory (VmRSS) now, in MiB."""
    status = Path(f"/proc/{served.proc.pid}/status").read_text()
    match = re.search(r"^VmRSS:\s+(\d+) kB", status, re.M)
    assert match
    return int(match.group(1)) / 1024


@pytest.mark.parametrize("method", [b"GET", b"FOO"], ids=["llhttp", "h11"])
def test_half_open_heads_past_the_shared_budget_get_503_and_close_and_others_are_served(
    tmp_path: Path, method: bytes
) -> None:
    """FIT heads of 65,000 bytes fit in the 64 MiB shared by all connections; the ones past it
    are answered 503 in the error shape and closed, while a whole request is served. Once they
    close, the budget is whole again and the memory is given back. (FOO: a method llhttp does
    not know, parsed by h11.)"""
    with descriptors(2 * CONNECTIONS + 200), serving(tmp_path) as served:
        port = port_of(served)
        assert ordinary(port) == 200
        rest = rss_mib(served)
        socks = open_heads(port, head(method), CONNECTIONS)
        try:
            settle(port)
            held_mib = rss_mib(served)
            assert ordinary(port) == 200  # a whole head takes none of the budget
            answers = [answered(sock) for sock in socks]
        finally:
            for sock in socks:
                sock.close()
        refused = [a for a in answers if a is not None]
        # Each head is counted whole: at most FIT are held, and about as many as fit.
        assert CONNECTIONS - FIT <= len(refused) <= CONNECTIONS - FIT + 8, len(refused)
        for data in refused:
            top, _, body = data.partition(b"\r\n\r\n")
            lines = top.decode("latin-1").split("\r\n")
            assert lines[0] == "HTTP/1.1 503 Service Unavailable", data[:300]
            headers = dict(line.lower().split(": ", 1) for line in lines[1:])
            assert headers["content-type"] == "application/json"
            assert headers["connection"] == "close" and headers["retry-after"] == "1"
            error = json.loads(body)["error"]
            assert set(error) == {"type", "code", "message", "param"}
            assert (error["type"], error["code"]) == ("api_error", "service_unavailable")
            assert "64 MiB across all connections" in error["message"]
        # The connections closed, the budget is whole again: as many heads are held as fit.
        again = open_heads(port, head(method), 100)
        try:
            settle(port)
            assert [answered(sock) for sock in again] == [None] * 100
        finally:
            for sock in again:
                sock.close()
        # And the memory the heads took is given back (within seconds of the close).
        assert held_mib - rest > 48, (rest, held_mib)
        deadline = time.monotonic() + 20
        while rss_mib(served) > rest + (held_mib - rest) / 2 and time.monotonic() < deadline:
            time.sleep(0.25)
        after = rss_mib(served)
        assert after <= rest + (held_mib - rest) / 2, (rest, held_mib, after)
        assert ordinary(port) == 200
        code, log = served.stop()
    assert code == 0, log
    assert "incomplete request heads would go past 64 MiB across all connections" in log
    assert "Traceback" not in log


def test_request_bodies_being_read_share_the_body_budget(tmp_path: Path) -> None:
    """Bodies of 1 MiB, all but their last byte sent: 256 fit in the 256 MiB that bodies share,
    the ones past it are a 503 and closed; once they close, a create goes through."""
    count = BODY_BUDGET // MIB + 40
    start = (
        b"POST /v1/conversations HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
        + TOKEN.encode()
        + b"\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % MIB
    )
    with descriptors(2 * count + 200), serving(tmp_path) as served:
        port = port_of(served)
        socks = open_heads(port, start + b" " * (MIB - 1), count)
        try:
            settle(port)
            answers = [answered(sock) for sock in socks]
        finally:
            for sock in socks:
                sock.close()
        refused = [a for a in answers if a is not None]
        assert count - BODY_BUDGET // MIB <= len(refused) <= count - BODY_BUDGET // MIB + 4
        for data in refused:
            assert data.startswith(b"HTTP/1.1 503 "), data[:300]
            error = json.loads(data.partition(b"\r\n\r\n")[2])["error"]
            assert error["code"] == "service_unavailable"
            assert "The request body does not fit" in error["message"]
            assert "256 MiB across all requests" in error["message"]
        with httpx.Client(base_url=served.url, headers=AUTH, timeout=READ_SECONDS) as client:
            deadline = time.monotonic() + 20  # the closes reach serve's tasks
            while (created := client.post(CONV, json={"contact_id": "c_1"})).status_code == 503:
                assert time.monotonic() < deadline, created.text
                time.sleep(0.1)
        assert created.status_code in (200, 201), created.text


BIG = 160 * MIB  # two of these do not fit in the body budget; one does
CHUNK = b" " * 65536


class Big(JSONService):
    """Answers that are big: /v1/conversations declares BIG bytes and sends 32 MiB, then waits
    for `go` before the rest; /v1/risk-profiles declares BIG bytes and sends them all (on a
    later request: 1 MiB, then the connection closed); /v1/conversations/x sends up to BIG bytes
    without a length. Counts what each sent."""

    go: ClassVar[threading.Event] = threading.Event()
    started: ClassVar[threading.Event] = threading.Event()
    sent: ClassVar[dict[str, int]] = {}
    hits: ClassVar[dict[str, int]] = {}

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        self.hits[path] = self.hits.get(path, 0) + 1
        self.sent[path] = 0
        declared = path != "/v1/conversations/x"
        self.send_response(200)
        # Not JSON: the proxy's contract check reports it without parsing 160 MiB.
        self.send_header("Content-Type", "text/plain")
        if declared:
            self.send_header("Content-Length", str(BIG))
        self.send_header("Connection", "close")
        self.end_headers()
        cut = BIG
        if path == "/v1/risk-profiles" and self.hits[path] > 1:
            cut = MIB
        try:
            while self.sent[path] < cut:
                if path == "/v1/conversations" and self.sent[path] == 32 * MIB:
                    # The proxy has read the head and some of the body, past any buffer.
                    self.started.set()
                    assert self.go.wait(60), "never told to go on"
                self.wfile.write(CHUNK)
                self.sent[path] += len(CHUNK)
        except OSError:
            pass  # the proxy hung up: it read no further
        self.close_connection = True


def test_the_proxy_holds_concurrent_big_answers_within_one_body_budget(tmp_path: Path) -> None:
    """One answer of 160 MiB is held while it comes; a second of 160 MiB, or one of no declared
    length that grows past what is left, is the proxy's 503 (read no further, not buffered);
    once the first is done, its room is given back."""
    assert BIG < BODY_BUDGET < 2 * BIG
    Big.go.clear()
    Big.started.clear()
    Big.sent.clear()
    Big.hits.clear()
    first: dict[str, int] = {}

    def read_first(url: str) -> None:
        with (
            httpx.Client(timeout=60) as client,
            client.stream("GET", url + "/v1/conversations", headers=AUTH) as answer,
        ):
            first["status"] = answer.status_code
            first["bytes"] = sum(len(piece) for piece in answer.iter_raw())

    with (
        running(on_loopback(Big)) as upstream,
        serving(tmp_path, "--proxy-to", url_of(upstream)) as proxy,
        httpx.Client(base_url=proxy.url, headers=AUTH, timeout=60) as client,
    ):
        reader = threading.Thread(target=read_first, args=(proxy.url,), daemon=True)
        reader.start()
        try:
            assert Big.started.wait(60), "the first answer never started"
            second = client.get("/v1/risk-profiles")
            assert second.status_code == 503, second.text[:300]
            assert second.headers["retry-after"] == "1"
            error = second.json()["error"]
            assert (error["type"], error["code"]) == ("api_error", "service_unavailable")
            assert f"({BIG} bytes)" in error["message"]
            assert "256 MiB across all requests" in error["message"]
            assert "the upstream did answer" in error["message"]
            # Refused on its length: hardly any of it was read.
            assert Big.sent["/v1/risk-profiles"] < 32 * MIB
            endless = client.get("/v1/conversations/x")
            assert endless.status_code == 503, endless.text[:300]
            assert "(over " in endless.json()["error"]["message"]
            # Read up to the room left (96 MiB) and no further.
            assert Big.sent["/v1/conversations/x"] < BODY_BUDGET - BIG + 32 * MIB
        finally:
            Big.go.set()
            reader.join(120)
        assert first == {"status": 200, "bytes": BIG}
        # The first answer's room is given back: the second is taken now (and cut short by
        # the upstream this time: the proxy's 502, not a 503).
        again = client.get("/v1/risk-profiles")
        assert again.status_code == 502, again.text[:300]
        assert "upstream failed" in again.json()["error"]["message"]
        peak = peak_mib(proxy)
        code, log = proxy.stop()
    assert code == 0, log
    # Within the budget (256 MiB) and serve's own, not two or three answers at once.
    assert peak < 256 + 64, peak


def peak_mib(served: Serve) -> float:
    """serve's peak resident memory (VmHWM), in MiB."""
    status = Path(f"/proc/{served.proc.pid}/status").read_text()
    match = re.search(r"^VmHWM:\s+(\d+) kB", status, re.M)
    assert match
    return int(match.group(1)) / 1024
