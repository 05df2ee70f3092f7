"""serve's resident memory at rest, under thousands of half-open request heads, and after.

    python bench/serve_memory.py                                  # 9,000 heads of 65,000 bytes
    python bench/serve_memory.py --convrisk OLD/bin/convrisk      # another build, to compare
    python bench/serve_memory.py --connections 20 --after 1       # tiny: proves it runs

A real `convrisk serve --port 0` subprocess over a fresh database. Once it has answered one
request (at rest), `--connections` connections are opened one after another, each sending
`GET /v1/conversations` and headers that make `--head-bytes` bytes of a head that never ends
(no blank line). With all of them open, each is looked at: still held by serve, answered (the
status line, 503 past serve's shared budget for incomplete heads) or closed without an answer.
Then the client closes them all and waits `--after` seconds. Printed: serve's VmRSS (from /proc)
at rest, with the heads held, and at intervals after they closed; its VmHWM (the peak); and the
status of one ordinary request made with the heads held and one made after.

The descriptor limit is raised (soft up to hard) for this process and for serve, which inherits
it: serve takes as many connections as its descriptors allow (local_backend/serve/server.py).
"""

from __future__ import annotations

import argparse
import collections
import re
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import Workspace, machine

TOKEN = "serve-memory-token"
CONNECTIONS = 9000
HEAD_BYTES = 65000
AFTER_SECONDS = 30.0
# The target: what serve still holds, over its memory at rest, once the connections closed.
GIVEN_BACK_MIB = 32
READY_SECONDS = 60.0
# serve closes a connection whose head is not whole 10 s after its first byte
# (local_backend/serve/uvicorn_protocols.py): the heads are all sent well within that.
OPEN_SECONDS = 8.0
READ_SECONDS = 15.0


def _kib(pid: int, field: str) -> int:
    """A memory figure of /proc/PID/status, in KiB."""
    text = Path(f"/proc/{pid}/status").read_text()
    match = re.search(rf"^{field}:\s+(\d+) kB", text, re.M)
    assert match, field
    return int(match.group(1))


def _mib(kib: int) -> str:
    return f"{kib / 1024:.1f} MiB"


def _head(size: int) -> bytes:
    """A request head of `size` bytes that is never finished (no blank line after it)."""
    start = b"GET /v1/conversations HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    # Headers of 4,000 bytes (each under any per-header limit), the last one cut short.
    pads = b"".join(b"X-Pad-%d: %s\r\n" % (n, b"a" * 4000) for n in range(size // 4000 + 1))
    return (start + pads)[:size]


def _ordinary(port: int) -> str:
    """The status line of one ordinary request (GET, with the token), or how it failed."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=READ_SECONDS) as sock:
            sock.sendall(
                b"GET /v1/conversations?limit=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                b"Authorization: Bearer " + TOKEN.encode() + b"\r\nConnection: close\r\n\r\n"
            )
            data = b""
            while b"\r\n" not in data:
                chunk = sock.recv(4096)
                if not chunk:
                    return "closed without an answer"
                data += chunk
            return data.split(b"\r\n", 1)[0].decode("latin-1")
    except OSError as exc:
        return f"failed ({type(exc).__name__})"


def _state(sock: socket.socket) -> str:
    """What became of one half-open connection: held, answered (its status) or closed."""
    sock.setblocking(False)
    try:
        data = sock.recv(200)
    except BlockingIOError:
        return "held by serve"
    except OSError as exc:
        return f"reset ({type(exc).__name__})"
    if not data:
        return "closed without an answer"
    status = data.split(b"\r\n", 1)[0].decode("latin-1")
    return f"answered {status.removeprefix('HTTP/1.1 ')}"


def _unread(port: int) -> int:
    """Bytes waiting in the receive queues of serve's side of its connections (/proc/net/tcp):
    what serve has not read yet."""
    total = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            local, queues = fields[1], fields[4]
            if int(local.rsplit(":", 1)[1], 16) == port:
                total += int(queues.split(":")[1], 16)
    return total


def _settle(port: int) -> float:
    """Wait (READ_SECONDS at most) until serve has read what was sent; the seconds waited."""
    started = time.monotonic()
    while _unread(port) and time.monotonic() - started < READ_SECONDS:
        time.sleep(0.05)
    time.sleep(0.2)  # what it read, parsed
    return time.monotonic() - started


def _open(port: int, head: bytes, count: int) -> tuple[list[socket.socket], int, float]:
    """Up to `count` connections each sending `head`, within OPEN_SECONDS: the sockets, how many
    could not send it all, and the seconds it took."""
    socks: list[socket.socket] = []
    cut = 0
    started = time.monotonic()
    while len(socks) < count and time.monotonic() - started < OPEN_SECONDS:
        sock = socket.create_connection(("127.0.0.1", port), timeout=READ_SECONDS)
        socks.append(sock)
        try:
            sock.sendall(head)
        except OSError:
            cut += 1  # refused and closed while sending
    return socks, cut, time.monotonic() - started


def _start(convrisk: str, folder: str) -> tuple[subprocess.Popen[str], int]:
    """A `convrisk serve --port 0` over a fresh database in `folder`, and its port (0: failed)."""
    proc = subprocess.Popen(
        [convrisk, "serve", "--port", "0", "--token", TOKEN, "--db", f"{folder}/s.db"],
        env={"HOME": folder, "XDG_CONFIG_HOME": folder, "XDG_DATA_HOME": folder},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    started = time.monotonic()
    for line in proc.stderr:
        match = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        if match:
            # Read all along: a full pipe would block serve.
            threading.Thread(target=proc.stderr.read, daemon=True).start()
            return proc, int(match.group(1))
        if time.monotonic() - started > READY_SECONDS:
            break
    return proc, 0


@dataclass
class Round:
    """One round: the connections opened and what became of them, serve's VmRSS (KiB) with
    the heads held and at seconds after the close."""

    opened: int
    cut: int
    open_seconds: float
    settle_seconds: float
    states: dict[str, int]
    held_kib: int
    during: str
    after_kib: dict[float, int] = field(default_factory=dict)


@dataclass
class Figures:
    """What one run measured (memory in KiB)."""

    convrisk: str
    connections: int
    head_bytes: int
    rest_kib: int
    first: str
    rounds: list[Round]
    last: str
    peak_kib: int


def _raise_descriptors(connections: int) -> None:
    """Raise this process's descriptor limit (serve inherits it) for `connections`."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = connections + 200
    if hard != resource.RLIM_INFINITY and hard < wanted:
        raise RuntimeError(f"the descriptor limit is {hard}; {wanted} needed")
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


def measure(convrisk: str, connections: int, head_bytes: int, after: float, rounds: int) -> Figures:
    """Run serve, flood it `rounds` times, and take its memory figures."""
    _raise_descriptors(connections)
    head = _head(head_bytes)
    assert len(head) == head_bytes and b"\r\n\r\n" not in head
    with tempfile.TemporaryDirectory(prefix="serve-memory-") as folder:
        proc, port = _start(convrisk, folder)
        try:
            if not port:
                raise RuntimeError("convrisk serve did not start")
            first = _ordinary(port)
            time.sleep(1.0)
            rest = _kib(proc.pid, "VmRSS")
            done: list[Round] = []
            for _ in range(rounds):
                socks, cut, took = _open(port, head, connections)
                settled = _settle(port)
                held = _kib(proc.pid, "VmRSS")
                during = _ordinary(port)
                states = collections.Counter(_state(sock) for sock in socks)
                for sock in socks:
                    sock.close()
                one = Round(len(socks), cut, took, settled, dict(states), held, during)
                closed = time.monotonic()
                for mark in sorted({m for m in (1.0, 10.0, after) if m <= after}):
                    time.sleep(max(0.0, closed + mark - time.monotonic()))
                    one.after_kib[mark] = _kib(proc.pid, "VmRSS")
                done.append(one)
            last = _ordinary(port)
            # VmHWM is synced lazily from each thread's counters: never below a reading taken.
            peak = max(_kib(proc.pid, "VmHWM"), *(one.held_kib for one in done))
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    return Figures(convrisk, connections, head_bytes, rest, first, done, last, peak)


def report(figures: Figures) -> str:
    """The figures as text (Markdown-friendly lines)."""
    lines = [
        f"{figures.connections} connections, each a {figures.head_bytes}-byte head never "
        f"finished, {len(figures.rounds)} round(s); serve's VmRSS:",
        "",
        f"- at rest (one request served: {figures.first}): {_mib(figures.rest_kib)}",
    ]
    for n, one in enumerate(figures.rounds, 1):
        states = ", ".join(f"{count} {state}" for state, count in sorted(one.states.items()))
        after = ", ".join(f"{mark:g} s: {_mib(kib)}" for mark, kib in one.after_kib.items())
        lines += [
            f"- round {n}: {one.opened} opened in {one.open_seconds:.1f} s ({one.cut} cut "
            f"while sending), all read by serve {one.settle_seconds:.1f} s later: {states}",
            f"  - with the heads held: {_mib(one.held_kib)} (an ordinary request meanwhile: "
            f"{one.during})",
            f"  - after the client closed them: {after}",
        ]
    lines += [
        f"- after the rounds, an ordinary request: {figures.last}",
        f"- peak (VmHWM): {_mib(figures.peak_kib)}",
    ]
    return "\n".join(lines)


def returned(figures: Figures) -> int:
    """KiB over at rest in the end (the last reading after the last round's close)."""
    last = figures.rounds[-1].after_kib
    return (list(last.values())[-1] if last else figures.rounds[-1].held_kib) - figures.rest_kib


def section(ws: Workspace) -> str:
    """The section of `python -m bench`: the installed build's serve under the heads."""
    connections, after = (20, 1.0) if ws.tiny else (CONNECTIONS, AFTER_SECONDS)
    figures = measure(str(ws.installed() / "convrisk"), connections, HEAD_BYTES, after, 1)
    over = returned(figures)
    ws.target(
        f"`serve` VmRSS {after:g} s after {connections} half-open heads closed, over at rest",
        f"<= {GIVEN_BACK_MIB} MiB",
        _mib(over),
        over <= GIVEN_BACK_MIB * 1024,
    )
    return (
        "## 10. `serve` memory under half-open heads\n\nbench/serve_memory.py: "
        + report(figures)
        + "\n"
    )


def main(argv: list[str] | None = None) -> int:
    """Run the measure and print it."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    default = Path(sys.executable).parent / "convrisk"
    parser.add_argument("--convrisk", default=str(default), help="the convrisk to measure")
    parser.add_argument("--connections", type=int, default=CONNECTIONS, choices=range(1, 15001))
    parser.add_argument("--head-bytes", type=int, default=HEAD_BYTES, choices=range(64, 65537))
    parser.add_argument("--after", type=float, default=AFTER_SECONDS, help="seconds after close")
    parser.add_argument("--rounds", type=int, default=1, choices=range(1, 6))
    args = parser.parse_args(argv)
    after = min(max(args.after, 0.0), 300.0)
    try:
        figures = measure(args.convrisk, args.connections, args.head_bytes, after, args.rounds)
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"{args.convrisk}: {machine()}")
    print(report(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
