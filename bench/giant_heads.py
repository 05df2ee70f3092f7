"""serve's peak memory under connections that send one endless request head, unauthenticated.

    python bench/giant_heads.py                              # 4 connections, this checkout
    python bench/giant_heads.py --convrisk OLD/bin/convrisk  # another build, to compare
    python bench/giant_heads.py --connections 1 --seconds 2  # tiny

A real `convrisk serve --port 0` subprocess over a fresh database; each connection sends
`GET /v1/conversations` and one header whose value never ends, 64 KiB at a time, until the
server closes it, `--seconds` pass, or `--max-mib` MiB are sent. Printed: serve's resident
memory (VmRSS) before, its peak (VmHWM, from /proc) after, what each connection sent and how it
ended (the answer's status line, or how it was cut).
"""

from __future__ import annotations

import argparse
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

TOKEN = "giant-heads-token"
CHUNK = b"a" * 65536
READY_SECONDS = 60.0


def _kib(pid: int, field: str) -> int:
    """A memory figure of /proc/PID/status, in KiB."""
    text = Path(f"/proc/{pid}/status").read_text()
    match = re.search(rf"^{field}:\s+(\d+) kB", text, re.M)
    assert match, field
    return int(match.group(1))


def _flood(port: int, seconds: float, max_bytes: int, report: list[str]) -> None:
    """One connection: an endless head until the server stops it (or the bounds do)."""
    sent = 0
    ended = "bounds reached"
    deadline = time.monotonic() + seconds
    with socket.create_connection(("127.0.0.1", port), timeout=15) as sock:
        sock.sendall(b"GET /v1/conversations HTTP/1.1\r\nHost: x\r\nX-Giant: ")
        try:
            while sent < max_bytes and time.monotonic() < deadline:
                sock.sendall(CHUNK)
                sent += len(CHUNK)
        except OSError as exc:
            ended = f"cut ({type(exc).__name__})"
        try:
            first = sock.recv(200).split(b"\r\n", 1)[0].decode("latin-1")
            ended = first or f"{ended}, closed without an answer"
        except OSError as exc:
            ended = f"{ended}, then {type(exc).__name__}"
    report.append(f"sent {sent / 2**20:8.1f} MiB: {ended}")


def main(argv: list[str] | None = None) -> int:
    """Run the measure and print it."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    default = Path(sys.executable).parent / "convrisk"
    parser.add_argument("--convrisk", default=str(default), help="the convrisk to measure")
    parser.add_argument("--connections", type=int, default=4, choices=range(1, 65))
    parser.add_argument("--seconds", type=float, default=12.0, help="per connection, at most")
    parser.add_argument("--max-mib", type=int, default=1024, help="per connection, at most")
    args = parser.parse_args(argv)
    seconds = min(max(args.seconds, 0.1), 120.0)
    with tempfile.TemporaryDirectory(prefix="giant-heads-") as folder:
        home = Path(folder)
        proc = subprocess.Popen(
            [args.convrisk, "serve", "--port", "0", "--token", TOKEN, "--db", str(home / "s.db")],
            env={"HOME": folder, "XDG_CONFIG_HOME": folder, "XDG_DATA_HOME": folder},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            port = 0
            assert proc.stderr is not None
            started = time.monotonic()
            for line in proc.stderr:
                match = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
                if match:
                    port = int(match.group(1))
                    break
                if time.monotonic() - started > READY_SECONDS:
                    break
            if not port:
                print("convrisk serve did not start", file=sys.stderr)
                return 1
            threading.Thread(target=proc.stderr.read, daemon=True).start()
            before = _kib(proc.pid, "VmRSS")
            report: list[str] = []
            threads = [
                threading.Thread(target=_flood, args=(port, seconds, args.max_mib * 2**20, report))
                for _ in range(args.connections)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(seconds + 30)
            peak = _kib(proc.pid, "VmHWM")
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    print(f"{args.convrisk}: {args.connections} connections, at most {seconds:g} s each")
    for line in report:
        print(f"  {line}")
    print(f"  serve's memory: {before / 1024:.1f} MiB before, peak {peak / 1024:.1f} MiB (VmHWM)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
