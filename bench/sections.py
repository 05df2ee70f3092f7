"""The five benchmark sections: each runs, measures and returns its part of the report."""

from __future__ import annotations

import multiprocessing
import shutil
import sqlite3
import sys
import time
from collections.abc import Callable

from bench import common
from bench.common import CONVRISK, Run, Workspace, median_seconds, run


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _verdict(ok: bool) -> str:
    return "met" if ok else "**missed**"


# -- 1. cold start ---------------------------------------------------------------------------------


def cold_start(ws: Workspace) -> str:
    """Median wall time of whole commands, each as a ratio to a bare `python -I -c pass`."""
    runs = 3 if ws.tiny else 15
    db = ws.dir / "cold.db"
    shutil.copy(ws.db(10), db)
    env = ws.env(CONVRISK_DB=str(db))
    cases: list[tuple[str, list[str], bool]] = [
        ("`python -I -c pass` (baseline)", [sys.executable, "-I", "-c", "pass"], False),
        ("`convrisk --version`", [CONVRISK, "--version"], False),
        ("`convrisk --help`", [CONVRISK, "--help"], False),
        (
            "`convrisk conv list -o json` (local, 10 rows)",
            [CONVRISK, "conv", "list", "-o", "json"],
            False,
        ),
        ("`convrisk conv list` (piped: TSV)", [CONVRISK, "conv", "list"], False),
        ("`convrisk conv list` (terminal: rich table)", [CONVRISK, "conv", "list"], True),
    ]
    results: dict[str, list[Run]] = {label: [] for label, _, _ in cases}
    for _label, argv, tty in cases:  # warm the page cache and .pyc files once
        run(argv, env=env, tty=tty)
    for _ in range(runs):  # interleaved, so drift in the machine's load hits every case alike
        for label, argv, tty in cases:
            results[label].append(run(argv, env=env, tty=tty))
    base = median_seconds(results[cases[0][0]])
    rows = []
    json_ratio = 0.0
    for label, _, _ in cases:
        med = median_seconds(results[label])
        ratio = med / base
        target = ""
        if "-o json" in label:
            json_ratio = ratio
            target = f"<= 8x: {_verdict(ratio <= 8)}"
        rows.append([label, f"{med * 1000:.0f}", f"{ratio:.1f}x", target])
    text = _table(["command", "median ms", "vs bare python", "target"], rows)
    return (
        f"## 1. Cold start\n\nMedian of {runs} runs each (interleaved, after one warm-up run), "
        "wall time of the whole process as started by a shell.\n\n"
        f"{text}\n\n`conv list -o json` costs {json_ratio:.1f}x a bare interpreter.\n"
    )


# -- 2. page cost ----------------------------------------------------------------------------------


def page_cost(ws: Workspace) -> str:
    """The cost of one page at growing table sizes, with each filter (bench/page_cost.py)."""
    from bench import page_cost as pc

    sizes = [100, 1000] if ws.tiny else [1000, 100_000, 1_000_000]
    runs = 5 if ws.tiny else 51
    return "## 2. Page cost at scale\n\n" + pc.report(sizes, cache=ws.cache, runs=runs) + "\n"


# -- 3. export -------------------------------------------------------------------------------------


def export(ws: Workspace) -> str:
    """`conv list --all -o jsonl` throughput against `sqlite3 -json`, and its peak memory."""
    small, large = (100, 2000) if ws.tiny else (1000, 100_000)
    runs = 1 if ws.tiny else 3
    rows: list[list[str]] = []
    measured: dict[int, tuple[float, int]] = {}
    for n in (small, large):
        db = ws.db(n)
        env = ws.env(CONVRISK_DB=str(db))
        out = ws.dir / f"export-{n}.jsonl"
        argv = [CONVRISK, "conv", "list", "--all", "-o", "jsonl"]
        results = []
        for _ in range(runs):
            with out.open("wb") as fh:
                results.append(run(argv, env=env, stdout=fh.fileno()))
        with out.open("rb") as fh:
            lines = sum(1 for _ in fh)
        if lines != n:
            raise RuntimeError(f"export of {n} rows printed {lines} lines")
        seconds = median_seconds(results)
        peak = max(r.max_rss_kib for r in results)
        measured[n] = (seconds, peak)
        rows.append(
            [
                f"{n:,}",
                "convrisk jsonl",
                f"{seconds:.2f}",
                f"{n / seconds:,.0f}",
                f"{peak / 1024:.1f}",
            ]
        )
        if common.have("sqlite3"):
            sql = "SELECT * FROM conversations ORDER BY id DESC"
            ref = [run(["sqlite3", "-json", str(db), sql]) for _ in range(runs)]
            ref_s = median_seconds(ref)
            rows.append(
                [
                    f"{n:,}",
                    "sqlite3 -json",
                    f"{ref_s:.2f}",
                    f"{n / ref_s:,.0f}",
                    f"{max(r.max_rss_kib for r in ref) / 1024:.1f}",
                ]
            )
            rows[-2].append(f"{seconds / ref_s:.1f}x sqlite3's time")
            rows[-1].append("")
        else:
            rows[-1].append("(no sqlite3 CLI)")
    mem_ratio = measured[large][1] / measured[small][1] if measured[small][1] else 0.0
    text = _table(["rows", "what", "seconds", "rows/s", "peak MiB", ""], rows)
    return (
        "## 3. Streaming export\n\n`convrisk conv list --all -o jsonl > file`, median of "
        f"{runs} run(s), peak resident memory of the process (GNU time's %M).\n\n{text}\n\n"
        f"Peak memory at {large:,} rows is {mem_ratio:.2f}x the peak at {small:,} rows "
        f"(target <= 1.3x: {_verdict(mem_ratio <= 1.3) if mem_ratio else 'unknown, no GNU time'})."
        "\n"
    )


# -- 4. parallel writers ---------------------------------------------------------------------------


def _writer(path: str, count: int, errors: multiprocessing.Queue[str]) -> None:
    from local_backend.store import LocalBackend

    with LocalBackend(path) as backend:
        for i in range(count):
            try:
                backend.conversations.create({"contact_id": f"ct_{i}"})
            except Exception as exc:  # counted, not raised: the figure is the error count
                errors.put(repr(exc))


def writers(ws: Workspace) -> str:
    """Four processes creating conversations at once on one database file."""
    procs_n, each = 4, (25 if ws.tiny else 1000)
    db = ws.dir / "writers.db"
    ctx = multiprocessing.get_context("spawn")
    errors: multiprocessing.Queue[str] = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(str(db), each, errors)) for _ in range(procs_n)]
    started = time.perf_counter()
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    seconds = time.perf_counter() - started
    failures = []
    while not errors.empty():
        failures.append(errors.get())
    with sqlite3.connect(db) as conn:
        (rows,) = conn.execute("SELECT count(*) FROM conversations").fetchone()
    expected = procs_n * each
    lost = expected - len(failures) - rows
    text = _table(
        ["processes", "creates each", "seconds", "creates/s", "errors", "rows lost"],
        [
            [
                str(procs_n),
                str(each),
                f"{seconds:.2f}",
                f"{expected / seconds:,.0f}",
                str(len(failures)),
                str(lost),
            ]
        ],
    )
    verdict = _verdict(not failures and lost == 0)
    return (
        "## 4. Parallel writers\n\nEach process opens its own `LocalBackend` on one file and "
        "creates conversations one by one (each its own `BEGIN IMMEDIATE` transaction); the time "
        f"includes starting the processes.\n\n{text}\n\nTarget 0 errors, 0 lost: {verdict}.\n"
    )


# -- 5. remote --all -------------------------------------------------------------------------------


def remote(ws: Workspace) -> str:
    """`conv list --all` through the remote backend against `serve` on loopback."""
    from local_backend.server import make_server
    from local_backend.store import LocalBackend

    n = 300 if ws.tiny else 10_000
    db = ws.dir / "remote.db"
    shutil.copy(ws.db(n), db)
    token = "bench-token"
    requests: list[str] = []
    backend = LocalBackend(db)
    server = make_server(backend, token=token, log=requests.append)
    try:
        with server.running():
            env = ws.env(CONVRISK_BASE_URL=server.url, CONVRISK_TOKEN=token)
            out = ws.dir / "remote.jsonl"
            with out.open("wb") as fh:
                result = run(
                    [CONVRISK, "conv", "list", "--all", "-o", "jsonl"],
                    env=env,
                    stdout=fh.fileno(),
                )
            lines = sum(1 for _ in out.open("rb"))
            # Counted where the server accepts them (uvicorn's protocol, once per connection).
            connections = server.connections.accepted
    finally:
        backend.close()
    if lines != n:
        raise RuntimeError(f"remote export of {n} rows printed {lines} lines")
    pages = len(requests)
    text = _table(
        ["rows", "pages (requests)", "seconds", "pages/s", "rows/s", "TCP connections"],
        [
            [
                f"{n:,}",
                str(pages),
                f"{result.seconds:.2f}",
                f"{pages / result.seconds:,.0f}",
                f"{n / result.seconds:,.0f}",
                str(connections),
            ]
        ],
    )
    return (
        "## 5. Remote `--all` over `convrisk serve`\n\n`convrisk conv list --all -o jsonl` with "
        "`CONVRISK_BASE_URL` pointing at the server on loopback (pages of 100); connections "
        f"counted where the server accepts them.\n\n{text}\n\nTarget 1 connection: "
        f"{_verdict(connections == 1)}.\n"
    )


SECTIONS: dict[str, Callable[[Workspace], str]] = {
    "cold_start": cold_start,
    "page_cost": page_cost,
    "export": export,
    "writers": writers,
    "remote": remote,
}
