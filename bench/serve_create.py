"""`convrisk serve`'s creates at one connection against a bare Starlette + uvicorn + sqlite3 app.

    python bench/serve_create.py [--bin DIR/bin/convrisk] [--seconds 3] [--rounds 7]
    python bench/serve_create.py --tiny        # proves it runs, in seconds

The reference is bench/ref_app.py. One database is made by convrisk's own LocalBackend (WAL,
its schema) and copied fresh for each server. Both servers listen on 127.0.0.1 for the whole
run, their logs written to files (no reader in this process). One keep-alive client, the same
for both, sends `POST /v1/conversations` for a few seconds at a time, in interleaved rounds
(serve, reference, reference, serve...): wrk (one thread, one connection, a Lua script) when it
is installed, with http.client from this process as a second ruler; http.client alone
otherwise (and with --tiny). The figures are medians of the rounds: requests/s, and each
server's own CPU time per request (from /proc/PID/stat, which a shared machine's load moves
less); the target is judged on the first client's requests/s. `section(ws)` has the signature
of the sections of `python -m bench`.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import CONVRISK, SERVE_READY_SECONDS, Workspace, have

REF_APP = Path(__file__).resolve().parent / "ref_app.py"
TOKEN = "bench-create-token-7d3a"
PATH = "/v1/conversations"
BODY = b'{"contact_id":"ct_bench"}'
TARGET = 0.8
# The name of another build's serve measured in the same rounds (`--baseline`).
BASELINE = "baseline serve"
# Each client run stops at this many requests even if its seconds are not over.
MAX_REQUESTS = 1_000_000
_TICK = os.sysconf("SC_CLK_TCK")

_LUA = """
wrk.method = "POST"
wrk.body = '{body}'
wrk.headers["Authorization"] = "Bearer {token}"
wrk.headers["Content-Type"] = "application/json"
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('\\nRESULT {{"requests":%d,"duration_us":%d,"errors":%d}}\\n',
    summary.requests, summary.duration,
    e.connect + e.read + e.write + e.status + e.timeout))
end
"""


@dataclass
class Server:
    """A server under test: its name, base URL and process."""

    name: str
    url: str
    proc: subprocess.Popen[bytes]

    def cpu_seconds(self) -> float:
        """The server's CPU time so far (user + system, all its threads)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICK


@dataclass
class Figures:
    """The rounds of one server under one client: requests/s and server CPU µs per request."""

    rps: list[float] = field(default_factory=list)
    cpu_us: list[float] = field(default_factory=list)

    @property
    def median_rps(self) -> float:
        """The median requests/s of the rounds."""
        return statistics.median(self.rps)

    @property
    def median_cpu_us(self) -> float:
        """The median server CPU µs per request of the rounds."""
        return statistics.median(self.cpu_us)


def fresh_database(path: Path) -> Path:
    """An empty convrisk database (WAL, the current schema), made by convrisk itself."""
    from convrisk.local_backend.backend import LocalBackend

    with LocalBackend(path) as backend:
        backend.conversations.list(limit=1)  # opens the file: WAL and the schema
    return path


@contextlib.contextmanager
def started(name: str, argv: Sequence[str], log: Path, env: dict[str, str]) -> Iterator[Server]:
    """Start a server whose stderr says `listening on URL`; its output goes to `log`. Stopped
    with SIGTERM at the end (killed if it has not ended 30 s later)."""
    with log.open("wb") as out:
        proc = subprocess.Popen(
            argv, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        url = ""
        deadline = time.monotonic() + SERVE_READY_SECONDS
        while not url and time.monotonic() < deadline and proc.poll() is None:
            for line in log.read_text(errors="replace").splitlines():
                if "listening on " in line:
                    url = line.split("listening on ", 1)[1].strip()
                    break
            else:
                time.sleep(0.05)
        if urllib.parse.urlsplit(url).hostname != "127.0.0.1":
            text = log.read_text(errors="replace")[-2000:]
            raise SystemExit(f"{name} did not listen on 127.0.0.1: {text}")
        yield Server(name, url, proc)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


def _address(server: Server) -> tuple[str, int]:
    parts = urllib.parse.urlsplit(server.url)
    assert parts.hostname is not None and parts.port is not None
    return parts.hostname, parts.port


def http_client(server: Server, seconds: float) -> tuple[int, float]:
    """POST creates on one keep-alive http.client connection for `seconds` (and at most
    MAX_REQUESTS): how many were answered, in how many seconds. Any other answer than 200 or
    201, or a connection that does not stay open, ends the benchmark."""
    host, port = _address(server)
    conn = http.client.HTTPConnection(host, port, timeout=10)
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    count = 0
    try:
        started_at = time.perf_counter()
        deadline = started_at + seconds
        conn.connect()
        sock = conn.sock
        while count < MAX_REQUESTS and time.perf_counter() < deadline:
            conn.request("POST", PATH, BODY, headers)
            answer = conn.getresponse()
            data = answer.read()
            if answer.status not in (200, 201) or conn.sock is not sock:
                raise SystemExit(f"{server.name} answered {answer.status}: {data[:300]!r}")
            count += 1
        return count, time.perf_counter() - started_at
    finally:
        conn.close()


def wrk_client(lua: Path) -> Callable[[Server, float], tuple[int, float]]:
    """The same run with wrk (one thread, one connection) and this Lua script."""

    def drive(server: Server, seconds: float) -> tuple[int, float]:
        argv = ["wrk", "-t1", "-c1", f"-d{max(1, round(seconds))}s", "--timeout", "10s"]
        argv += ["-s", str(lua), server.url + PATH]
        result = subprocess.run(
            argv, capture_output=True, text=True, timeout=seconds + 60, check=False
        )
        line = next((x for x in result.stdout.splitlines() if x.startswith("RESULT ")), None)
        if result.returncode != 0 or line is None:
            raise SystemExit(f"wrk failed ({result.returncode}): {result.stdout}{result.stderr}")
        raw = json.loads(line.removeprefix("RESULT "))
        if raw["errors"]:
            raise SystemExit(f"wrk against {server.name}: {raw['errors']} errors")
        return raw["requests"], raw["duration_us"] / 1e6

    return drive


def measure(
    convrisk: str,
    workdir: Path,
    *,
    seconds: float,
    rounds: int,
    use_wrk: bool,
    baseline: str | None = None,
) -> tuple[dict[str, dict[str, Figures]], tuple[float, float]]:
    """Figures by client, then by server ("serve", "reference", and "baseline serve" when a
    `baseline` convrisk is given, in the same rounds); the load average before and after."""
    db = fresh_database(workdir / "fresh.db")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONVRISK_")}
    env |= {"HOME": str(workdir), "XDG_CONFIG_HOME": str(workdir / "config")}
    env["XDG_DATA_HOME"] = str(workdir / "data")
    # wrk when it is installed (a C client: the servers' own costs weigh more), then
    # http.client as a second ruler; http.client alone otherwise. The first one is the figure.
    clients: dict[str, Callable[[Server, float], tuple[int, float]]] = {}
    if use_wrk:
        lua = workdir / "create.lua"
        lua.write_text(_LUA.format(body=BODY.decode(), token=TOKEN))
        clients["wrk"] = wrk_client(lua)
    clients["http.client"] = http_client
    commands = {
        "serve": [convrisk, "serve", "--port", "0", "--token", TOKEN],
        "reference": [sys.executable, str(REF_APP), "--token", TOKEN],
    }
    if baseline is not None:
        commands[BASELINE] = [baseline, "serve", "--port", "0", "--token", TOKEN]
    figures = {client: {name: Figures() for name in commands} for client in clients}
    load_before = os.getloadavg()[0]
    with contextlib.ExitStack() as stack:
        servers = []
        for name, argv in commands.items():
            copy = workdir / f"{name.replace(' ', '-')}.db"
            shutil.copy(db, copy)
            log = copy.with_suffix(".log")
            servers.append(stack.enter_context(started(name, [*argv, "--db", str(copy)], log, env)))
        for server in servers:  # warm up: first connection, the schema, the page cache
            http_client(server, min(seconds, 1.0))
        for round_ in range(rounds):
            for client, drive in clients.items():
                # The order turns round by round: neither server always goes first.
                for server in servers if round_ % 2 == 0 else servers[::-1]:
                    cpu_before = server.cpu_seconds()
                    count, took = drive(server, seconds)
                    cpu = server.cpu_seconds() - cpu_before
                    figures[client][server.name].rps.append(count / took)
                    figures[client][server.name].cpu_us.append(cpu / count * 1e6)
    return figures, (load_before, os.getloadavg()[0])


def report(
    figures: dict[str, dict[str, Figures]], seconds: float, rounds: int, load: tuple[float, float]
) -> str:
    """The section's text and table; the first client's ratio is the figure."""
    rows = []
    for client, by_server in figures.items():
        ref = by_server["reference"]
        for name, serve in by_server.items():
            if name == "reference":
                continue
            rows.append(
                f"| {client} | {name} | {serve.median_rps:,.0f} | {ref.median_rps:,.0f} "
                f"| {serve.median_rps / ref.median_rps:.2f}x | {serve.median_cpu_us:.0f} "
                f"| {ref.median_cpu_us:.0f} | {serve.median_cpu_us / ref.median_cpu_us:.2f}x |"
            )
    table = "\n".join(
        [
            "| client | server | req/s | reference req/s | req/s ratio | CPU µs/req "
            "| reference CPU µs/req | CPU ratio |",
            "|---|---|---|---|---|---|---|---|",
            *rows,
        ]
    )
    return (
        f"One keep-alive connection, POST `{PATH}` with `{BODY.decode()}`, {rounds} interleaved "
        f"rounds of {seconds:g} s per client (serve, reference; the order reversed every other "
        "round); medians. The reference is bench/ref_app.py (Starlette + uvicorn with its "
        "defaults + stdlib sqlite3 on a copy of the same fresh database). CPU is each server's "
        "own (user + system, /proc). Load "
        f"average {load[0]:.2f} before, {load[1]:.2f} after.\n\n{table}\n"
    )


def ratio(figures: dict[str, dict[str, Figures]]) -> float:
    """serve's median requests/s over the reference's, by the first client (wrk when it was
    used)."""
    by_server = next(iter(figures.values()))
    return by_server["serve"].median_rps / by_server["reference"].median_rps


def section(ws: Workspace) -> str:
    """The section of `python -m bench`: the installed build's serve against the reference."""
    seconds, rounds = (0.5, 2) if ws.tiny else (3.0, 7)
    convrisk = str(ws.installed() / "convrisk")
    workdir = ws.dir / "serve-create"
    workdir.mkdir(exist_ok=True)
    base_bin = ws.baseline()
    figures, load = measure(
        convrisk,
        workdir,
        seconds=seconds,
        rounds=rounds,
        use_wrk=have("wrk") and not ws.tiny,
        baseline=None if base_bin is None else str(base_bin / "convrisk"),
    )
    measured = ratio(figures)
    ws.target(
        "`serve` creates at 1 connection, ratio to a bare Starlette+uvicorn+sqlite3 app",
        f">= {TARGET:g}x",
        f"{measured:.2f}x",
        measured >= TARGET,
    )
    return "## 9. `serve` creates at one connection\n\nbench/serve_create.py: " + report(
        figures, seconds, rounds, load
    )


def main(argv: list[str] | None = None) -> None:
    """Measure and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", default=CONVRISK, help="the convrisk whose serve is measured")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--baseline", help="another build's convrisk, measured in the same rounds")
    parser.add_argument("--no-wrk", action="store_true", help="http.client only")
    parser.add_argument("--tiny", action="store_true", help="a second or two: proves it runs")
    args = parser.parse_args(argv)
    seconds, rounds = (0.5, 2) if args.tiny else (args.seconds, args.rounds)
    use_wrk = have("wrk") and not args.no_wrk and not args.tiny
    with tempfile.TemporaryDirectory(prefix="bench-serve-create-") as tmp:
        figures, load = measure(
            args.bin,
            Path(tmp),
            seconds=seconds,
            rounds=rounds,
            use_wrk=use_wrk,
            baseline=args.baseline,
        )
    print(report(figures, seconds, rounds, load))
    print(f"ratio ({next(iter(figures))}): {ratio(figures):.2f}x (target >= {TARGET:g}x)")


if __name__ == "__main__":
    main()
