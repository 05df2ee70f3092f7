"""A loopback socket that answers every request with the same bytes (HTTP or not), and keeps
what it read: for `convrisk api` in-process (tests/cli) and through the installed script."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

ACCEPT_POLL = 0.05
SAFETY_TIMEOUT = 120  # seconds; only so that a hung client cannot hang the suite


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
