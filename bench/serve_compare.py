"""`convrisk serve` under load, one build against another: requests/s and p99, side by side.

    python bench/serve_compare.py compare --old OLD/bin/convrisk --out /tmp/cmp  # both builds
    python bench/serve_compare.py table /tmp/cmp.old.json /tmp/cmp.new.json     # the section
    python bench/serve_compare.py measure --out new.json                         # one build
    python bench/serve_compare.py measure --tiny --out /tmp/t.json               # CI: it runs

A build is a `convrisk` executable (another build lives in a virtualenv of its own; the table's
Reproduce lines say how the old one was made). Each is started as `convrisk serve --port 0` on
127.0.0.1 over a fresh SQLite file and driven with wrk (keep-alive, and `Connection: close` for
a new connection per request) for GET list (limit 10) and POST create at 1, 4 and 16
connections; `ab -k` (HTTP/1.0 keep-alive) must complete; and a request is timed while 1,000
idle TCP connections are open. `compare` runs both servers at once and interleaves them row by
row, `--rounds` times, keeping medians. `table` renders the two as one markdown section and
writes it to bench/serve_compare.md and into docs/performance.md (`python -m bench` keeps it).
Loopback only; every run is bounded in time. Needs `wrk` and `ab` (Debian: wrk, apache2-utils).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import machine, serving

ROOT = Path(__file__).resolve().parent.parent
SECTION = ROOT / "bench" / "serve_compare.md"
REPORT = ROOT / "docs" / "performance.md"
TOKEN = "serve-compare-token"
CLIENTS = (1, 4, 16)
IDLE_CONNECTIONS = 1000
IDLE_PROBES = 50
MARK_BEGIN = "<!-- serve-compare: begin (bench/serve_compare.py writes this section) -->"
MARK_END = "<!-- serve-compare: end -->"

_LUA = """
wrk.method = "{method}"
wrk.headers["Authorization"] = "Bearer {token}"
{body}
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '\\nRESULT {{"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,'
    .. '"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d}}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.connect, e.read, e.write, e.status, e.timeout))
end
"""
_CREATE_BODY = (
    'wrk.body = \'{"contact_id": "ct_bench"}\'\nwrk.headers["Content-Type"] = "application/json"'
)


def _wrk(url: str, lua: Path, clients: int, seconds: float, keep_alive: bool) -> dict[str, Any]:
    """One wrk run; its figures (requests/s, p50/p99 ms, errors)."""
    path = "/v1/conversations?limit=10" if "GET" in lua.read_text() else "/v1/conversations"
    argv = [
        "wrk",
        "-t",
        str(min(clients, 2)),
        "-c",
        str(clients),
        "-d",
        f"{max(1, round(seconds))}s",
    ]
    argv += ["--timeout", "10s", "-s", str(lua)]
    if not keep_alive:
        argv += ["-H", "Connection: close"]
    result = subprocess.run(
        [*argv, url + path], capture_output=True, text=True, timeout=seconds + 60, check=False
    )
    line = next((x for x in result.stdout.splitlines() if x.startswith("RESULT ")), None)
    if result.returncode != 0 or line is None:
        raise SystemExit(f"wrk failed ({result.returncode}): {result.stdout}{result.stderr}")
    raw = json.loads(line.removeprefix("RESULT "))
    errors = sum(raw[k] for k in ("connect", "read", "write", "status", "timeout"))
    return {
        "rps": raw["requests"] / (raw["duration_us"] / 1e6),
        "p50_ms": raw["p50_us"] / 1000,
        "p99_ms": raw["p99_us"] / 1000,
        "requests": raw["requests"],
        "errors": errors,
    }


def _ab_keep_alive(url: str, requests: int) -> dict[str, Any]:
    """`ab -k` (HTTP/1.0 with keep-alive): does it finish, and how fast."""
    argv = ["ab", "-k", "-q", "-n", str(requests), "-c", "1", "-s", "5"]
    argv += ["-H", f"Authorization: Bearer {TOKEN}", url + "/v1/conversations?limit=10"]
    started = time.perf_counter()
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except subprocess.TimeoutExpired:
        return {"completed": False, "seconds": time.perf_counter() - started}
    done = re.search(r"Complete requests:\s+(\d+)", result.stdout)
    failed = re.search(r"Failed requests:\s+(\d+)", result.stdout)
    ok = bool(done and int(done.group(1)) == requests and failed and failed.group(1) == "0")
    return {"completed": ok, "seconds": time.perf_counter() - started}


def _one_request(host: str, port: int) -> float:
    """Seconds for one GET list (limit 10) on a new connection, to the last byte of the answer."""
    request = (
        f"GET /v1/conversations?limit=10 HTTP/1.1\r\nHost: {host}\r\n"
        f"Authorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n"
    ).encode()
    started = time.perf_counter()
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    elapsed = time.perf_counter() - started
    if not data.startswith(b"HTTP/1.1 200"):
        raise SystemExit(f"the probe request failed: {data[:200]!r}")
    return elapsed


def _idle(url: str, idle: int, probes: int) -> dict[str, Any]:
    """A request timed alone, then while `idle` silent TCP connections are open."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    alone = [_one_request(host, int(port)) for _ in range(probes)]
    sockets: list[socket.socket] = []
    try:
        for _ in range(idle):
            sockets.append(socket.create_connection((host, int(port)), timeout=10))
        time.sleep(0.5)  # let the server accept them all
        loaded = [_one_request(host, int(port)) for _ in range(probes)]
        # Which idle connections the server still holds open (a closed one reads EOF).
        open_after = 0
        for sock in sockets:
            sock.setblocking(False)
            try:
                open_after += 0 if sock.recv(1) == b"" else 1
            except BlockingIOError:
                open_after += 1
            except OSError:
                pass
    finally:
        for sock in sockets:
            sock.close()
    return {
        "idle": idle,
        "alone_p50_ms": statistics.median(alone) * 1000,
        "alone_max_ms": max(alone) * 1000,
        "p50_ms": statistics.median(loaded) * 1000,
        "max_ms": max(loaded) * 1000,
        "still_open": open_after,
    }


def measure(convrisk: str, label: str, seconds: float, tiny: bool) -> dict[str, Any]:
    """Every row against one build of `convrisk serve`."""
    for tool in ("wrk", "ab"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is not installed (Debian: apt-get install wrk apache2-utils)")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    idle = 20 if tiny else IDLE_CONNECTIONS
    if soft < idle + 64:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, idle + 256), hard))
    rows: list[dict[str, Any]] = []
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="serve-cmp-")))
        url = stack.enter_context(serving([convrisk], workdir / "s.db", token=TOKEN))
        scripts = {}
        for op, method, body in (("list", "GET", ""), ("create", "POST", _CREATE_BODY)):
            scripts[op] = workdir / f"{op}.lua"
            scripts[op].write_text(_LUA.format(method=method, token=TOKEN, body=body))
        # Warm up (first connections, the schema, the page cache), then one run per row.
        _wrk(url, scripts["create"], 2, 1 if tiny else 2, True)
        _wrk(url, scripts["list"], 2, 1 if tiny else 2, True)
        for op in ("list", "create"):
            for keep_alive in (True, False):
                for clients in CLIENTS[:1] if tiny else CLIENTS:
                    figures = _wrk(url, scripts[op], clients, seconds, keep_alive)
                    rows.append({"op": op, "clients": clients, "keep_alive": keep_alive, **figures})
                    print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
        ab = _ab_keep_alive(url, 20 if tiny else 200)
        idle_figures = _idle(url, idle, 5 if tiny else IDLE_PROBES)
    return {
        "label": label,
        "convrisk": convrisk,
        "date": dt.date.today().isoformat(),
        "machine": machine(),
        "seconds": seconds,
        "rows": rows,
        "ab_keep_alive": ab,
        "idle": idle_figures,
    }


def compare(
    old: str, new: str, labels: tuple[str, str], seconds: float, rounds: int
) -> dict[str, Any]:
    """Both builds side by side: each row run on old then new, `rounds` times, medians kept.

    Interleaving row by row keeps a change in the machine's background load from favouring
    one build (the machine is shared); the median of the rounds drops the odd disturbed run.
    """
    for tool in ("wrk", "ab"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is not installed (Debian: apt-get install wrk apache2-utils)")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < IDLE_CONNECTIONS + 64:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, IDLE_CONNECTIONS + 256), hard))
    builds = {"old": old, "new": new}
    runs: dict[str, list[dict[str, Any]]] = {"old": [], "new": []}
    extra: dict[str, dict[str, Any]] = {}
    with ExitStack() as stack:
        urls = {}
        scripts = {}
        for name, exe in builds.items():
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="serve-cmp-")))
            urls[name] = stack.enter_context(serving([exe], workdir / "s.db", token=TOKEN))
        for op, method, body in (("list", "GET", ""), ("create", "POST", _CREATE_BODY)):
            scripts[op] = Path(stack.enter_context(tempfile.TemporaryDirectory())) / f"{op}.lua"
            scripts[op].write_text(_LUA.format(method=method, token=TOKEN, body=body))
        for name in builds:
            _wrk(urls[name], scripts["create"], 2, 2, True)
            _wrk(urls[name], scripts["list"], 2, 2, True)
        for op in ("list", "create"):
            for keep_alive in (True, False):
                for clients in CLIENTS:
                    samples: dict[str, list[dict[str, Any]]] = {"old": [], "new": []}
                    for _ in range(rounds):
                        for name in builds:
                            samples[name].append(
                                _wrk(urls[name], scripts[op], clients, seconds, keep_alive)
                            )
                    for name in builds:
                        row = {
                            "op": op,
                            "clients": clients,
                            "keep_alive": keep_alive,
                            "rps": statistics.median(x["rps"] for x in samples[name]),
                            "p99_ms": statistics.median(x["p99_ms"] for x in samples[name]),
                            "p50_ms": statistics.median(x["p50_ms"] for x in samples[name]),
                            "errors": sum(x["errors"] for x in samples[name]),
                            "samples": samples[name],
                        }
                        runs[name].append(row)
                        print(
                            name,
                            json.dumps({k: v for k, v in row.items() if k != "samples"}),
                            file=sys.stderr,
                            flush=True,
                        )
        for name in builds:
            extra[name] = {
                "ab_keep_alive": _ab_keep_alive(urls[name], 200),
                "idle": _idle(urls[name], IDLE_CONNECTIONS, IDLE_PROBES),
            }
    common = {
        "date": dt.date.today().isoformat(),
        "machine": machine(),
        "seconds": seconds,
        "rounds": rounds,
    }
    return {
        name: {
            "label": label,
            "convrisk": builds[name],
            **common,
            "rows": runs[name],
            **extra[name],
        }
        for name, label in zip(builds, labels, strict=True)
    }


def table(old: dict[str, Any], new: dict[str, Any]) -> str:
    """The markdown section: both measurements side by side, with a verdict per row."""
    lines = [
        "## 7. `convrisk serve`: the http.server build against the uvicorn build",
        "",
        f"Measured on {new['date']} on {new['machine']}, with wrk against `convrisk serve "
        "--port 0` on 127.0.0.1 over a fresh database (its access log on, read by the harness). "
        + (
            f"Each row ran {new['rounds']} times {new['seconds']:g} s on each build, interleaved "
            "(old, new, old, new...), and the median of the runs is shown: the machine is "
            "shared, and interleaving keeps a change in its load from favouring one build. "
            if new.get("rounds")
            else f"Each row ran {new['seconds']:g} s. "
        )
        + f"Old: `{old['label']}`; new: `{new['label']}`. requests/s higher is better, p99 "
        "lower is better; `keep-alive: no` sends `Connection: close` (a new TCP connection per "
        "request). POST create makes a conversation (no Idempotency-Key).",
        "",
        "| request | clients | keep-alive | old req/s | new req/s | old p99 ms | new p99 ms "
        "| old errors | new errors | req/s >= old | p99 <= old |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    olds = {(r["op"], r["clients"], r["keep_alive"]): r for r in old["rows"]}
    for row in new["rows"]:
        key = (row["op"], row["clients"], row["keep_alive"])
        before = olds.get(key)
        if before is None:
            continue
        request = "GET list (limit 10)" if row["op"] == "list" else "POST create"
        faster = row["rps"] >= before["rps"]
        steadier = row["p99_ms"] <= before["p99_ms"]
        lines.append(
            f"| {request} | {row['clients']} | {'yes' if row['keep_alive'] else 'no'} "
            f"| {before['rps']:,.0f} | {row['rps']:,.0f} "
            f"| {before['p99_ms']:.1f} | {row['p99_ms']:.1f} "
            f"| {before['errors']} | {row['errors']} "
            f"| {'yes' if faster else 'NO'} | {'yes' if steadier else 'NO'} |"
        )
    oa, na = old["ab_keep_alive"], new["ab_keep_alive"]
    oi, ni = old["idle"], new["idle"]

    def ab_text(ab: dict[str, Any]) -> str:
        if ab["completed"]:
            return f"completes ({ab['seconds']:.1f} s)"
        return f"**does not complete** (killed after {ab['seconds']:.0f} s)"

    lines += [
        "",
        "| check | old | new |",
        "|---|---|---|",
        f"| `ab -k -n 200` (HTTP/1.0 keep-alive) | {ab_text(oa)} | {ab_text(na)} |",
        f"| GET list, new connection, alone: p50 / max ms | {oi['alone_p50_ms']:.1f} / "
        f"{oi['alone_max_ms']:.1f} | {ni['alone_p50_ms']:.1f} / {ni['alone_max_ms']:.1f} |",
        f"| the same with {ni['idle']:,} idle TCP connections open: p50 / max ms "
        f"(target max <= 50) | {oi['p50_ms']:.1f} / {oi['max_ms']:.1f} "
        f"| {ni['p50_ms']:.1f} / {ni['max_ms']:.1f} |",
        f"| idle connections still open after the probes | {oi['still_open']:,} "
        f"| {ni['still_open']:,} |",
        "",
        "Reproduce (from the repository root, wrk and ab installed):",
        "",
        "```sh",
        "# the old build: the main branch before this change, in a virtualenv of its own",
        "mkdir -p /tmp/old/src && git archive 02ab829 | tar -x -C /tmp/old/src",
        "python3 -m venv /tmp/old/.venv && /tmp/old/.venv/bin/pip install /tmp/old/src",
        "python bench/serve_compare.py compare --old /tmp/old/.venv/bin/convrisk "
        f"--labels '{old['label']}' '{new['label']}' --seconds {new['seconds']:g} "
        f"--rounds {new.get('rounds', 1)} --out /tmp/cmp",
        "python bench/serve_compare.py table /tmp/cmp.old.json /tmp/cmp.new.json",
        "```",
    ]
    return "\n".join(lines) + "\n"


def write_section(text: str) -> None:
    """Write the section file, and put it into docs/performance.md between its markers."""
    SECTION.write_text(text)
    report = REPORT.read_text()
    block = f"{MARK_BEGIN}\n{text}{MARK_END}\n"
    if MARK_BEGIN in report and MARK_END in report:
        head, _, rest = report.partition(MARK_BEGIN)
        _, _, tail = rest.partition(MARK_END + "\n")
        report = head + block + tail
    else:
        head, sep, notes = report.partition("## Notes")
        report = head + block + "\n" + sep + notes
    REPORT.write_text(report)


def main(argv: list[str] | None = None) -> int:
    """Parse the command and run it."""
    parser = argparse.ArgumentParser(
        prog="python bench/serve_compare.py", description=__doc__.split("\n\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("measure", help="measure one build of convrisk serve")
    run.add_argument(
        "--convrisk",
        default=str(Path(sys.executable).with_name("convrisk")),
        help="the convrisk executable to serve with (default: this environment's)",
    )
    run.add_argument("--label", default="this checkout", help="its name in the table")
    run.add_argument("--seconds", type=int, default=5, help="seconds per row (default 5)")
    run.add_argument("--tiny", action="store_true", help="a few short rows: proves the script")
    run.add_argument("--out", type=Path, required=True, help="where to write the figures (JSON)")
    both = sub.add_parser("compare", help="measure two builds, interleaved row by row")
    both.add_argument("--old", required=True, help="the old build's convrisk executable")
    both.add_argument(
        "--new",
        default=str(Path(sys.executable).with_name("convrisk")),
        help="the new build's convrisk executable (default: this environment's)",
    )
    both.add_argument("--labels", nargs=2, default=("old", "new"), metavar=("OLD", "NEW"))
    both.add_argument("--seconds", type=int, default=5, help="seconds per run (default 5)")
    both.add_argument("--rounds", type=int, default=3, help="runs per row and build (default 3)")
    both.add_argument("--out", type=Path, required=True, help="prefix: OUT.old.json, OUT.new.json")
    show = sub.add_parser("table", help="render two measurements and write the section")
    show.add_argument("old", type=Path)
    show.add_argument("new", type=Path)
    show.add_argument("--print-only", action="store_true", help="print; write nothing")
    args = parser.parse_args(argv)
    if args.command == "measure":
        if not 1 <= args.seconds <= 60:
            parser.error("--seconds must be from 1 to 60")
        seconds = 1.0 if args.tiny else args.seconds
        data = measure(args.convrisk, args.label, seconds, args.tiny)
        args.out.write_text(json.dumps(data, indent=2) + "\n")
        print(json.dumps({k: data[k] for k in ("ab_keep_alive", "idle")}))
        return 0
    if args.command == "compare":
        if not 1 <= args.seconds <= 60 or not 1 <= args.rounds <= 9:
            parser.error("--seconds must be from 1 to 60 and --rounds from 1 to 9")
        data = compare(args.old, args.new, tuple(args.labels), args.seconds, args.rounds)
        for name, figures in data.items():
            Path(f"{args.out}.{name}.json").write_text(json.dumps(figures, indent=2) + "\n")
        return 0
    text = table(json.loads(args.old.read_text()), json.loads(args.new.read_text()))
    print(text)
    if not args.print_only:
        write_section(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
