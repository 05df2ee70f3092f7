"""The five benchmark sections: each runs, measures and returns its part of the report."""

from __future__ import annotations

import contextlib
import itertools
import json
import multiprocessing
import os
import shlex
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import common
from bench.common import (
    Run,
    Workspace,
    median_cpu,
    median_seconds,
    peak_rss_kib,
    run,
)


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _verdict(ok: bool) -> str:
    return "met" if ok else "**missed**"


# -- 1. cold start ---------------------------------------------------------------------------------

SERVE_TOKEN = "bench-token-0123456789"


@dataclass
class Case:
    """One command of the cold-start table and its target, if it has one."""

    label: str
    args: list[str]
    target: float | None = None
    tty: bool = False


@contextlib.contextmanager
def _serving(convrisk: str, db: Path, env: dict[str, str]) -> Iterator[str]:
    """`convrisk serve --port 0` on 127.0.0.1 in a child process; yields its base URL."""
    proc = subprocess.Popen(
        [convrisk, "serve", "--port", "0", "--db", str(db), "--token", SERVE_TOKEN],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 30
        url = ""
        while not url and time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line:
                raise RuntimeError(f"convrisk serve exited {proc.wait(5)} before listening")
            if "listening on " in line:
                url = line.split("listening on ", 1)[1].strip()
        if not url:
            raise RuntimeError("convrisk serve did not listen within 30 s")
        # The access log must not fill the pipe and block the server: read it away.
        threading.Thread(target=proc.stderr.read, daemon=True).start()
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


def _hyperfine(commands: list[list[str]], env: dict[str, str], rounds: int) -> list[float]:
    """Median seconds of each command by `hyperfine -N`, in `rounds` rounds of 3 runs each
    (hyperfine runs one command's runs back to back; rounds spread each over the whole pass)."""
    times: list[list[float]] = [[] for _ in commands]
    with tempfile.TemporaryDirectory(prefix="bench-hyperfine-") as tmp:
        out = Path(tmp) / "h.json"
        for _ in range(rounds):
            subprocess.run(
                ["hyperfine", "-N", "--style", "none", "--runs", "3", "--export-json", str(out)]
                + [shlex.join(c) for c in commands],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=True,
            )
            for i, result in enumerate(json.loads(out.read_text())["results"]):
                times[i].extend(result["times"])
    return [statistics.median(t) for t in times]


@dataclass
class Stage:
    """One step of a command's run, timed on its own; `part2`: issue 10's part 2 removes it."""

    label: str
    code: str
    part2: bool = False


_RUN = (
    "import os, sys\nsys.stdout = open(os.devnull, 'w')\n"
    "os.environ.setdefault('PYDANTIC_DISABLE_PLUGINS', '__all__')\n"
    "assert cli.app.main({args!r}) == 0\n"
    "import gc; gc.freeze()  # as cli/__main__.py does before the exit"
)
_COMMON = [
    Stage("import click", "import click"),
    Stage("import typer", "import typer, typer.main"),
    Stage("import convrisk's cli modules (`cli.app` and what it imports)", "import cli.app"),
    Stage("import pydantic (`BaseModel`)", "from pydantic import BaseModel", part2=True),
    Stage(
        "import importlib.metadata (pydantic's plugin loader imports it at the first model, "
        "plugins disabled or not)",
        "import importlib.metadata",
        part2=True,
    ),
    Stage("import api_client.models (class definitions)", "import api_client.models", part2=True),
    Stage(
        "build the schemas of the models used (`Conversation`, `Page[Conversation]`)",
        "from api_client.models import Conversation, Page\n"
        "Conversation.model_rebuild(); Page[Conversation].model_rebuild()",
        part2=True,
    ),
]


def local_stages() -> list[Stage]:
    """`conv list -o json` on the local database, stage by stage."""
    return [
        *_COMMON,
        Stage("import local_backend", "import local_backend.store, local_backend.conversations"),
        Stage(
            "the command: parse, open SQLite, query, print JSON",
            _RUN.format(args=["conv", "list", "-o", "json"]),
        ),
    ]


def remote_stages(url: str, an_id: str) -> list[Stage]:
    """`conv get ID -o json` against `serve` on loopback, stage by stage."""
    return [
        *[Stage(s.label, s.code) for s in _COMMON[:3]],
        Stage("import pydantic (`BaseModel`)", _COMMON[3].code),
        Stage(_COMMON[4].label, _COMMON[4].code),
        Stage(_COMMON[5].label, _COMMON[5].code),
        Stage(
            "import rich and pygments: `import httpx` imports its command-line client "
            "(`httpx._main`: click, rich, pygments) whenever click is installed",
            "import rich.console, rich.markup, rich.progress, rich.syntax, rich.table\n"
            "import pygments.lexers, pygments.util",
        ),
        Stage("import httpx (the rest)", "import httpx"),
        Stage(
            "`httpx.Client()` for an http:// URL (it builds a TLS context, loads the CA bundle)",
            f"httpx.Client(base_url={url!r}).close()",
            part2=True,
        ),
        Stage("import api_client.http", "import api_client.http"),
        Stage(
            "the command: parse, connect, GET, print JSON",
            _RUN.format(args=["--base-url", url, "conv", "get", an_id, "-o", "json"]),
        ),
    ]


def _breakdown(
    python: str, env: dict[str, str], runs: int, stages: list[Stage]
) -> tuple[list[float], float, float, float]:
    """Median seconds of: interpreter start-up, each stage, interpreter exit, over `runs` fresh
    interpreters; the median of each whole process, and of each less its `part2` stages; the
    median of a bare interpreter run right before each (the ratios' baseline in this pass).

    The child reads the same monotonic clock (perf_counter) as this process, so start-up is from
    the spawn to the child's first line, and exit from its last stage to its reaping."""
    lines = ["import time", "_t = [time.perf_counter()]"]
    for stage in stages:
        lines += [stage.code, "_t.append(time.perf_counter())"]
    lines.append("print(*_t, file=__import__('sys').stderr)")
    probe = "\n".join(lines)
    samples, whole, without, bare = [], [], [], []
    for _ in range(runs):
        bare.append(run([python, "-I", "-c", "pass"], env=env).seconds)
        started = time.perf_counter()
        done = subprocess.run(
            [python, "-c", probe],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=True,
        )
        ended = time.perf_counter()
        marks = [started, *(float(x) for x in done.stderr.split()), ended]
        sample = [b - a for a, b in itertools.pairwise(marks)]
        samples.append(sample)
        whole.append(ended - started)
        removed = sum(sample[1 + i] for i, stage in enumerate(stages) if stage.part2)
        without.append(ended - started - removed)
    medians = [statistics.median(sample[i] for sample in samples) for i in range(len(samples[0]))]
    return (
        medians,
        statistics.median(whole),
        statistics.median(without),
        statistics.median(bare),
    )


def _breakdown_text(
    what: str,
    stages: list[Stage],
    measured: tuple[list[float], float, float, float],
    runs: int,
) -> str:
    medians, whole, without, bare = measured
    labels = [
        "interpreter start-up (spawn to the first line of `python -c`)",
        *(stage.label + (" **[part 2]**" if stage.part2 else "") for stage in stages),
        "interpreter exit (last stage to reaped)",
    ]
    rows = [[label, f"{sec * 1000:.1f}"] for label, sec in zip(labels, medians, strict=True)]
    return (
        f"Where {what} spends its time: each stage timed with `time.perf_counter` inside the "
        f"installed interpreter (`python -c` with the same steps, not the console script), "
        f"median of {runs} fresh processes, each run right after a bare interpreter.\n\n"
        + _table(["stage", "ms"], rows)
        + f"\n\nThe whole process: {whole * 1000:.0f} ms, {whole / bare:.1f}x the bare "
        f"interpreter in this pass ({bare * 1000:.1f} ms). Without the rows marked [part 2]: "
        f"{without * 1000:.0f} ms, {without / bare:.1f}x (each process's wall time less those "
        "rows).\n"
    )


def _versions() -> str:
    from importlib.metadata import version

    return ", ".join(f"{name} {version(name)}" for name in ("typer", "click", "pydantic", "rich"))


def cold_start(ws: Workspace) -> str:
    """Whole commands from a regular install, each as a ratio to a bare `python -I -c pass`."""
    rounds = 3 if ws.tiny else 31
    bin_dir = ws.installed()
    python, convrisk = str(bin_dir / "python"), str(bin_dir / "convrisk")
    db, create_db = ws.dir / "cold.db", ws.dir / "cold-create.db"
    shutil.copy(ws.db(10), db)
    shutil.copy(ws.db(10), create_db)
    with sqlite3.connect(db) as conn:
        (an_id,) = conn.execute("SELECT id FROM conversations ORDER BY id LIMIT 1").fetchone()
    env = ws.env(CONVRISK_DB=str(db), CONVRISK_TOKEN=SERVE_TOKEN)
    bare = Case("`python -I -c pass` (the baseline)", [python, "-I", "-c", "pass"])
    get = Case("`convrisk conv get ID -o json`", [convrisk, "conv", "get", an_id, "-o", "json"], 9)
    cases = [
        Case("`convrisk --version`", [convrisk, "--version"], 2),
        Case("`convrisk --help`", [convrisk, "--help"], 6),
        Case("`convrisk conv list -o json`", [convrisk, "conv", "list", "-o", "json"], 9),
        get,
        Case(
            "`convrisk conv create --contact-id c_1 -o id`",
            [convrisk, "--db", str(create_db), "conv", "create", "--contact-id", "c_1", "-o", "id"],
            9,
        ),
        Case("`convrisk conv list` (piped: TSV)", [convrisk, "conv", "list"]),
        Case("`convrisk conv list` (terminal: table)", [convrisk, "conv", "list"], tty=True),
    ]
    load_before = os.getloadavg()
    shutil.copy(db, ws.dir / "served.db")  # served from a copy: the same rows, its own file
    with _serving(convrisk, ws.dir / "served.db", env) as url:
        remote = Case(
            "`convrisk --base-url URL conv get ID -o json` (`serve` on loopback)",
            [convrisk, "--base-url", url, "conv", "get", an_id, "-o", "json"],
        )
        cases.append(remote)
        results: dict[str, list[Run]] = {c.label: [] for c in [bare, *cases]}
        for case in [bare, *cases]:  # warm the page cache and the .pyc files once
            run(case.args, env=env, tty=case.tty)
        for _ in range(rounds):  # interleaved: drift in the machine's load hits every case alike
            for case in cases:
                results[bare.label].append(run(bare.args, env=env))
                results[case.label].append(run(case.args, env=env, tty=case.tty))
        by_label: dict[str, float] = {}  # hyperfine's medians
        if common.have("hyperfine"):
            plain = [c for c in [bare, *cases] if not c.tty]
            medians = _hyperfine([c.args for c in plain], env, max(1, rounds // 3))
            by_label = dict(zip([c.label for c in plain], medians, strict=True))
        local_breakdown = _breakdown(python, env, rounds, local_stages())
        remote_breakdown = _breakdown(python, env, rounds, remote_stages(url, an_id))
        peaks = {
            c.label: peak_rss_kib(c.args, env=env, runs=1 if ws.tiny else 3)
            for c in [bare, *cases]
            if not c.tty
        }
    load_after = os.getloadavg()
    base, base_cpu = median_seconds(results[bare.label]), median_cpu(results[bare.label])
    h_base = by_label.get(bare.label, 0.0)
    rows = []
    for case in [bare, *cases]:
        med, cpu = median_seconds(results[case.label]), median_cpu(results[case.label])
        target = ""
        if case.target is not None:
            target = f"<= {case.target:g}x: {_verdict(med / base <= case.target)}"
        h = ""
        if case.label in by_label:
            h = f"{by_label[case.label] * 1000:.1f} ({by_label[case.label] / h_base:.1f}x)"
        peak = peaks.get(case.label, 0)
        rows.append(
            [
                case.label,
                f"{med * 1000:.1f}",
                f"{med / base:.1f}x",
                f"{cpu * 1000:.1f} ({cpu / base_cpu:.1f}x)",
                h or "-",
                f"{peak / 1024:.1f}" if peak else "-",
                target,
            ]
        )
    remote_ratio = median_seconds(results[remote.label]) / median_seconds(results[get.label])
    remote_cpu = median_cpu(results[remote.label]) / median_cpu(results[get.label])
    text = _table(
        ["command", "wall ms", "vs bare", "CPU ms (vs bare)", "hyperfine ms", "peak MiB", "target"],
        rows,
    )
    return (
        "## 1. Cold start\n\n"
        "Every command is a regular (non-editable) install of this checkout in a fresh venv, "
        "started directly by the benchmark exactly as the bare interpreter is (no shell, no "
        "GNU time or anything else around either; stdin, stdout and stderr /dev/null, the rich "
        "table on a pseudo-terminal); local commands on a 10-row database. "
        f"{rounds} rounds after one warm-up run; in each round every command runs right after a "
        "run of the bare interpreter, so drift in the machine's load hits both alike; the "
        "figures are medians and ratios of medians. CPU is the child's own user + system time "
        "(wait4), which other load on the machine moves less than wall time. "
        + (
            f"hyperfine (`hyperfine -N`, {max(1, rounds // 3)} rounds of 3 runs of each "
            "command) is a second ruler. "
            if by_label
            else "(hyperfine is not installed: no second ruler.) "
        )
        + "Peak memory is taken in separate runs under GNU time (`%M`). "
        f"Load average {load_before[0]:.2f} before, {load_after[0]:.2f} after. {_versions()}.\n\n"
        f"{text}\n\n"
        f"Remote `conv get` over `serve` on loopback costs {remote_ratio:.2f}x the local one "
        f"(CPU {remote_cpu:.2f}x; target <= 1.15x: {_verdict(remote_ratio <= 1.15)}).\n\n"
        "Rows marked [part 2] below are what issue 10's part 2 takes off these paths (records as "
        "plain dicts inside, pydantic only at the edges; no TLS set-up for http://).\n\n"
        + _breakdown_text("`conv list -o json`", local_stages(), local_breakdown, rounds)
        + "\n"
        + _breakdown_text(
            "remote `conv get ID -o json`",
            remote_stages(url, an_id),
            remote_breakdown,
            rounds,
        )
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
        argv = [str(ws.installed() / "convrisk"), "conv", "list", "--all", "-o", "jsonl"]
        results = []
        for _ in range(runs):
            with out.open("wb") as fh:
                results.append(run(argv, env=env, stdout=fh.fileno()))
        with out.open("wb") as fh:  # memory in a run of its own, under GNU time
            peak = peak_rss_kib(argv, env=env, stdout=fh.fileno())
        with out.open("rb") as fh:
            lines = sum(1 for _ in fh)
        if lines != n:
            raise RuntimeError(f"export of {n} rows printed {lines} lines")
        seconds = median_seconds(results)
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
            ref_peak = peak_rss_kib(["sqlite3", "-json", str(db), sql])
            rows.append(
                [
                    f"{n:,}",
                    "sqlite3 -json",
                    f"{ref_s:.2f}",
                    f"{n / ref_s:,.0f}",
                    f"{ref_peak / 1024:.1f}",
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
        f"{runs} run(s) started directly (nothing around them); peak resident memory of the "
        f"process from a separate run under GNU time (`%M`).\n\n{text}\n\n"
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
    connections = 0
    lock = threading.Lock()

    backend = LocalBackend(db)
    server = make_server(backend, token=token, log=requests.append)
    original = server.get_request

    def counting_get_request() -> tuple[socket.socket, Any]:
        nonlocal connections
        with lock:
            connections += 1
        return original()

    server.get_request = counting_get_request  # type: ignore[method-assign]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        env = ws.env(CONVRISK_BASE_URL=server.url, CONVRISK_TOKEN=token)
        out = ws.dir / "remote.jsonl"
        with out.open("wb") as fh:
            convrisk = str(ws.installed() / "convrisk")
            result = run(
                [convrisk, "conv", "list", "--all", "-o", "jsonl"], env=env, stdout=fh.fileno()
            )
        lines = sum(1 for _ in out.open("rb"))
    finally:
        server.shutdown()
        server.server_close()
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
