"""`convrisk api` keeps every request under /v1/ however PATH is encoded, and reports an answer
that breaks HTTP (an illegal Location header) as a bad answer: exit 1, not retried."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from .both_backends import TOKEN, Remote
from .console import SAFETY_TIMEOUT

ACCEPT_POLL = 0.05


@contextmanager
def raw_service(answer: bytes) -> Iterator[tuple[str, list[bytes]]]:
    """A loopback socket answering every request with the bytes `answer`; its URL and the
    requests it read."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    sock.settimeout(ACCEPT_POLL)
    seen: list[bytes] = []
    done = threading.Event()

    def serve() -> None:
        until = time.monotonic() + SAFETY_TIMEOUT
        while not done.is_set() and time.monotonic() < until:
            try:
                conn, _ = sock.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(SAFETY_TIMEOUT)
                seen.append(conn.recv(65536))
                conn.sendall(answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", seen
    finally:
        done.set()
        thread.join(timeout=SAFETY_TIMEOUT)
        sock.close()


OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"
BAD_REDIRECT = (
    b"HTTP/1.1 302 Found\r\nLocation: //\x00x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
)


@pytest.mark.parametrize("path", ["/v1/..;/admin", "/v1/%252e%252e/admin"])
def test_api_refuses_a_path_that_leads_outside_v1_once_decoded(tmp_path: Path, path: str) -> None:
    with raw_service(OK) as (url, seen):
        result = Remote(tmp_path, url, TOKEN).run("api", path)
    assert result.returncode == 2, result.stderr
    assert "leads outside /v1/" in result.stderr
    assert seen == []


@pytest.mark.parametrize(
    ("path", "named"),
    [
        ("/v1/%c0%ae%c0%ae/x", "is not UTF-8 once percent-decoded"),
        ("/v1/\uff0e\uff0e/x", "U+FF0E, which Unicode normalization (NFKC) reads as '.'"),
        ("/v1/%u002e%u002e/x", "holds a %u escape (%u002e)"),
        ("/v1/..%00/x", "holds a NUL character once percent-decoded"),
    ],
)
def test_api_refuses_a_path_a_server_would_decode_into_another_and_sends_nothing(
    tmp_path: Path, path: str, named: str
) -> None:
    # Issue 29, finding 8: each of these reached the service unchanged.
    with raw_service(OK) as (url, seen):
        result = Remote(tmp_path, url, TOKEN).run("api", path)
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("Error: PATH ") and named in line, line
    assert line.endswith("is refused."), line
    assert result.stdout == ""
    assert seen == []


def test_a_redirect_with_an_illegal_location_is_a_bad_answer_not_unreachable(
    tmp_path: Path,
) -> None:
    with raw_service(BAD_REDIRECT) as (url, seen):
        result = Remote(tmp_path, url, TOKEN).run("api", "/v1/conversations")
    assert result.returncode == 1, result.stderr
    assert "is not valid HTTP" in result.stderr and "Location" in result.stderr
    assert "Could not reach" not in result.stderr
    assert len(seen) == 1  # not retried
