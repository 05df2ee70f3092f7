"""Hostile HTTP servers on loopback, to show that the remote client never hangs or floods.

    python bench/hostile_server.py trickle                   # headers, one byte per 0.5 s
    python bench/hostile_server.py gzip-bomb --size-mib 1024 # 1 MiB of gzip, 1 GiB of JSON
    python bench/hostile_server.py big --size-mib 2048       # 2 GiB of plain JSON, chunked

Each prints `listening on http://127.0.0.1:PORT` on stdout, answers every request the same
hostile way, and stops after `--seconds` (default 120) or on Ctrl-C. Loopback only. The tests
start the same servers in-process (`HostileServer`).

Kinds:
- `trickle`: the status line and an endless header, one byte per `--pause` seconds.
- `gzip-bomb`: `Content-Encoding: gzip`; a valid JSON page (`{"data":[],"has_more":false}`
  padded with spaces) of `--size-mib` decompressed, about 1000 times smaller on the wire.
- `big`: the same page uncompressed, `Transfer-Encoding: chunked` (no declared length).
- `huge-length`: declares a `Content-Length` of `--size-mib`, then sends nothing.
- `page`: an ordinary answer with the body given to `HostileServer(body=...)`, gzipped when
  `gzip_body=True`; the connection is kept alive.
- `page-then-trickle`: `page` for the first request of a connection, `trickle` for the next.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import socket
import sys
import threading
import time
import zlib
from collections.abc import Iterator
from types import TracebackType

KINDS = ("trickle", "gzip-bomb", "big", "huge-length", "page", "page-then-trickle")
HOST = "127.0.0.1"
MAX_SECONDS = 3600.0
MIB = 1024 * 1024
_BLOCK = MIB
_HEAD_LIMIT = 64 * 1024
_PAGE_START = b'{"data":[],"has_more":false'
_PAGE_END = b"}"


def padded_page(size: int) -> Iterator[bytes]:
    """A valid empty JSON page of exactly `size` bytes (spaces before its last brace), in blocks."""
    spaces = size - len(_PAGE_START) - len(_PAGE_END)
    if spaces < 0:
        raise ValueError(f"a page needs at least {len(_PAGE_START) + len(_PAGE_END)} bytes")
    yield _PAGE_START
    block = b" " * min(_BLOCK, spaces)
    while spaces >= len(block) > 0:
        yield block
        spaces -= len(block)
    if spaces:
        yield b" " * spaces
    yield _PAGE_END


def gzipped(blocks: Iterator[bytes]) -> bytes:
    """The gzip of the concatenated blocks, compressed block by block (flat memory)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [packer.compress(block) for block in blocks]
    parts.append(packer.flush())
    return b"".join(parts)


class HostileServer:
    """A raw-socket HTTP/1.1 server on 127.0.0.1 answering every request one hostile way."""

    def __init__(
        self,
        kind: str,
        *,
        pause: float = 0.5,
        size: int = 64 * MIB,
        body: bytes = b"",
        gzip_body: bool = False,
        max_seconds: float = 120.0,
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}")
        self.kind = kind
        self.pause = pause
        self.size = size
        self.max_seconds = min(max_seconds, MAX_SECONDS)
        self.requests = 0
        # The first line of each request, e.g. "GET /v1/conversations?limit=100 HTTP/1.1".
        self.request_lines: list[str] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._body = body
        if kind == "gzip-bomb":
            self._body = gzipped(padded_page(size))
        elif kind == "page" and gzip_body:
            self._body = gzipped(iter([body]))
        self._gzip = kind == "gzip-bomb" or gzip_body
        self._listener = socket.create_server((HOST, 0))
        self._listener.settimeout(0.05)
        self._threads: list[threading.Thread] = []
        self._acceptor = threading.Thread(target=self._accept, daemon=True)

    @property
    def url(self) -> str:
        """The base URL of this server."""
        host, port = self._listener.getsockname()[:2]
        return f"http://{host}:{port}"

    @property
    def wire_bytes(self) -> int:
        """How many bytes of body a gzip-bomb or page answer puts on the wire."""
        return len(self._body)

    def start(self) -> HostileServer:
        """Start accepting in a daemon thread."""
        self._acceptor.start()
        return self

    def stop(self) -> None:
        """Stop accepting and end every connection (each handler ends within a pause)."""
        self._stopping.set()
        self._acceptor.join(timeout=10)
        for thread in self._threads:
            thread.join(timeout=10)
        self._listener.close()

    def close_soon(self) -> None:
        """Ask the server to stop (safe from a signal handler); `wait()` then returns."""
        self._stopping.set()

    def wait(self) -> None:
        """Block until the server's time is up (or Ctrl-C)."""
        while self._acceptor.is_alive():
            self._acceptor.join(timeout=0.5)

    def __enter__(self) -> HostileServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _accept(self) -> None:
        ends = time.monotonic() + self.max_seconds
        while not self._stopping.is_set() and time.monotonic() < ends:
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self._threads.append(thread)
            thread.start()
        self._stopping.set()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5.0)
            try:
                for turn in range(1000):
                    head = self._read_head(conn)
                    if head is None or self._stopping.is_set():
                        return
                    with self._lock:
                        self.requests += 1
                        self.request_lines.append(head.split(b"\r\n", 1)[0].decode("latin-1"))
                    if not self._answer(conn, turn):
                        return
            except OSError:
                # The client gave up and closed the connection: that is what we wanted.
                return

    def _read_head(self, conn: socket.socket) -> bytes | None:
        """Read one request's head (GET only: no body); None when the client went away."""
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(4096)
            if not chunk or len(data) > _HEAD_LIMIT:
                return None
            data += chunk
        return data

    def _answer(self, conn: socket.socket, turn: int) -> bool:
        """Send the answer to the connection's request number `turn`; True to keep it open."""
        if self.kind == "trickle" or (self.kind == "page-then-trickle" and turn > 0):
            for byte in b"HTTP/1.1 200 OK\r\nX-Slow: ":
                if self._stopping.wait(self.pause):
                    return False
                conn.sendall(bytes([byte]))
            while not self._stopping.wait(self.pause):
                conn.sendall(b"a")
            return False
        head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        if self._gzip:
            head += "Content-Encoding: gzip\r\n"
        if self.kind == "big":
            conn.sendall(f"{head}Transfer-Encoding: chunked\r\n\r\n".encode())
            for block in padded_page(self.size):
                if self._stopping.is_set():
                    return False
                conn.sendall(b"%x\r\n%s\r\n" % (len(block), block))
            conn.sendall(b"0\r\n\r\n")
            return False
        if self.kind == "huge-length":
            conn.sendall(f"{head}Content-Length: {self.size}\r\n\r\n".encode())
            self._stopping.wait(self.max_seconds)
            return False
        conn.sendall(f"{head}Content-Length: {len(self._body)}\r\n\r\n".encode() + self._body)
        return self.kind in ("page", "page-then-trickle")


def main(argv: list[str] | None = None) -> int:
    """Serve one hostile kind on a loopback port until the time is up or Ctrl-C."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("kind", choices=[k for k in KINDS if k != "page"])
    parser.add_argument("--pause", type=float, default=0.5, help="seconds between bytes (trickle)")
    parser.add_argument("--size-mib", type=int, default=1024, help="body size in MiB")
    parser.add_argument("--seconds", type=float, default=120.0, help="stop after (max 3600)")
    args = parser.parse_args(argv)
    if not 0 < args.pause <= 60 or not 0 < args.size_mib <= 64 * 1024 or args.seconds <= 0:
        parser.error("--pause must be in (0, 60], --size-mib in 1..65536, --seconds above 0")
    server = HostileServer(
        args.kind, pause=args.pause, size=args.size_mib * MIB, max_seconds=args.seconds
    )
    signal.signal(signal.SIGTERM, lambda signum, frame: server.close_soon())
    with server:
        print(f"listening on {server.url}", flush=True)
        if server.kind == "gzip-bomb":
            print(f"({server.wire_bytes} bytes of gzip on the wire)", file=sys.stderr, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            server.wait()
        print(f"served {server.requests} request(s)", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
