"""The benchmark sections: each runs, measures and returns its part of the report."""

from __future__ import annotations

import json
import multiprocessing
import os
import shlex
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench import common
from bench.common import (
    SERVE_TOKEN,
    Run,
    Workspace,
    median_cpu,
    median_seconds,
    peak_rss_kib,
    run,
    serving,
)
from bench.serve_create import section as serve_create
from bench.serve_memory import section as serve_memory


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _verdict(ok: bool) -> str:
    return "met" if ok else "**missed**"


def _over(a: float, b: float) -> float:
    """a / b, infinite when b is 0 (a CPU time below the clock's tick at tiny sizes)."""
    return a / b if b else float("inf")


# -- 1. cold start ---------------------------------------------------------------------------------

# Remote cold `conv get` against the local one (issue 21: the HTTP exchange is 3 ms of it).
REMOTE_GET_TARGET = 2.2


@dataclass
class Case:
    """One command of the cold-start table and its target, if it has one."""

    label: str
    args: list[str]
    target: float | None = None
    tty: bool = False


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


# Packages whose cost is one figure: pydantic's own dependencies are counted with it.
_ALIASES = {
    "pydantic_core": "pydantic",
    "annotated_types": "pydantic",
    "typing_inspection": "pydantic",
}
_STDLIB = frozenset(sys.stdlib_module_names) | {"sitecustomize", "__main__"}


@dataclass
class _Imported:
    depth: int
    name: str
    self_us: int


def _import_owners(stderr: str) -> dict[str, float]:
    """Milliseconds of import time per owner, from one `python -X importtime` run's stderr.

    A module's own time goes to its top-level package, pydantic's dependencies to pydantic. A
    standard-library module goes to the nearest package above it in the import tree (what
    `httpx` costs includes the `ssl` it imports); one imported by the interpreter's own start-up
    (`site`, `encodings`) goes to "the interpreter".
    """
    modules: list[_Imported] = []
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "imported package" in line:
            continue
        head, _, name = line.split("|", 2)
        depth = (len(name) - len(name.lstrip(" ")) - 1) // 2
        modules.append(_Imported(depth, name.strip(), int(head.split(":")[-1])))
    owners: dict[str, float] = {}
    # importtime prints a module after what it imported (post-order): reversed, a parent comes
    # before its children, so a stack of open ancestors gives each module's importer.
    stack: list[tuple[_Imported, str]] = []
    for module in reversed(modules):
        while stack and stack[-1][0].depth >= module.depth:
            stack.pop()
        top = module.name.split(".")[0]
        if top not in _STDLIB:
            owner = _ALIASES.get(top, top)
        elif stack:
            owner = stack[-1][1]
        else:
            owner = "the interpreter (`site`, `encodings`, ...)"
        stack.append((module, owner))
        owners[owner] = owners.get(owner, 0.0) + module.self_us / 1000
    return owners


@dataclass
class ImportCosts:
    """Medians over several runs of one command under `python -X importtime`."""

    runs: int
    whole_ms: float
    imports_ms: float
    rest_ms: float
    owners: dict[str, float]


def _import_costs(
    python: str, convrisk: str, args: list[str], env: dict[str, str], runs: int
) -> ImportCosts:
    """Run the installed console script under `-X importtime` `runs` times; take medians."""
    per_owner: dict[str, list[float]] = {}
    wholes, imports, rests = [], [], []
    for i in range(runs):
        started = time.perf_counter()
        done = subprocess.run(
            [python, "-X", "importtime", convrisk, *args],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            check=True,
        )
        whole = (time.perf_counter() - started) * 1000
        owners = _import_owners(done.stderr)
        for owner in per_owner.keys() | owners.keys():
            # an owner absent from earlier runs counts 0 there
            per_owner.setdefault(owner, [0.0] * i).append(owners.get(owner, 0.0))
        wholes.append(whole)
        imports.append(sum(owners.values()))
        rests.append(whole - imports[-1])
    return ImportCosts(
        runs,
        statistics.median(wholes),
        statistics.median(imports),
        statistics.median(rests),
        {owner: statistics.median(ms) for owner, ms in per_owner.items()},
    )


def _import_text(what: str, costs: ImportCosts, bare_ms: float, shown: int = 12) -> str:
    ranked = sorted(costs.owners.items(), key=lambda kv: kv[1], reverse=True)
    rows = [[f"`{name}`" if " " not in name else name, f"{ms:.1f}"] for name, ms in ranked[:shown]]
    rest = sum(ms for _, ms in ranked[shown:])
    if rest:
        rows.append([f"{len(ranked) - shown} other packages", f"{rest:.1f}"])
    rows.append(["all imports (median of the runs' sums)", f"{costs.imports_ms:.1f}"])
    rows.append(
        ["not importing: interpreter start-up and exit, the command's work", f"{costs.rest_ms:.1f}"]
    )
    return (
        f"Where {what} spends its time: the installed console script run under "
        f"`python -X importtime` ({costs.runs} runs, medians). Each module's own import time "
        "goes to its package; a standard-library module to the package that imported it first. "
        "`-X importtime` slows what it measures: read the shares, not the milliseconds "
        f"(the whole process took {costs.whole_ms:.0f} ms under it, "
        f"{costs.whole_ms / bare_ms:.1f}x the bare interpreter's median above).\n\n"
        + _table(["owner", "ms"], rows)
        + "\n"
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
    with serving([convrisk], ws.dir / "served.db", env=env) as url:
        remote = Case(
            "`convrisk --base-url URL conv get ID -o json` (`serve` on loopback)",
            [convrisk, "--base-url", url, "conv", "get", an_id, "-o", "json"],
        )
        cases.append(remote)
        base_bin = ws.baseline()
        if base_bin is not None:  # the baseline's local and remote get, in the same rounds
            old = str(base_bin / "convrisk")
            old_get = Case(
                f"baseline ({ws.baseline_ref}) `conv get ID -o json`", [old, *get.args[1:]]
            )
            old_remote = Case(
                f"baseline ({ws.baseline_ref}) `--base-url URL conv get ID -o json`",
                [old, *remote.args[1:]],
            )
            cases += [old_get, old_remote]
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
        local_costs = _import_costs(python, convrisk, ["conv", "list", "-o", "json"], env, rounds)
        remote_costs = _import_costs(python, convrisk, remote.args[1:], env, rounds)
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
            met = med / base <= case.target
            target = f"<= {case.target:g}x: {_verdict(met)}"
            ws.target(
                f"cold {case.label}, ratio to `python -I -c pass`",
                f"<= {case.target:g}x",
                f"{med / base:.2f}x",
                met,
            )
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
    ws.target(
        "remote cold `conv get ID -o json` over `serve` on loopback, ratio to the local one",
        f"<= {REMOTE_GET_TARGET:g}x",
        f"{remote_ratio:.2f}x",
        remote_ratio <= REMOTE_GET_TARGET,
    )
    baseline_line = ""
    if base_bin is not None:
        old_ratio = median_seconds(results[old_remote.label]) / median_seconds(
            results[old_get.label]
        )
        old_cpu = median_cpu(results[old_remote.label]) / median_cpu(results[old_get.label])
        baseline_line = (
            f" The baseline build ({ws.baseline_ref}), in the same rounds: {old_ratio:.2f}x "
            f"(CPU {old_cpu:.2f}x)."
        )
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
        f"(CPU {remote_cpu:.2f}x; target <= {REMOTE_GET_TARGET:g}x: "
        f"{_verdict(remote_ratio <= REMOTE_GET_TARGET)}).{baseline_line}\n\n"
        + _import_text("`conv list -o json`", local_costs, base * 1000)
        + "\n"
        + _import_text("remote `conv get ID -o json`", remote_costs, base * 1000)
    )


# -- 2. page cost ----------------------------------------------------------------------------------


def page_cost(ws: Workspace) -> str:
    """The cost of one page at growing table sizes, with each filter (bench/page_cost.py)."""
    from bench import page_cost as pc

    sizes = [100, 1000] if ws.tiny else [1000, 100_000, 1_000_000]
    runs = 5 if ws.tiny else 51
    return "## 2. Page cost at scale\n\n" + pc.report(sizes, cache=ws.cache, runs=runs) + "\n"


# -- 3. export -------------------------------------------------------------------------------------

EXPORT_SQL = "SELECT * FROM conversations ORDER BY id DESC"


def _export_commands(convrisk: str) -> dict[str, list[str]]:
    """The commands compared, the database given by CONVRISK_DB (sqlite3 gets it appended)."""
    return {
        "`convrisk conv list --all -o jsonl`": [convrisk, "conv", "list", "--all", "-o", "jsonl"],
        "`convrisk conv list --all -o json`": [convrisk, "conv", "list", "--all", "-o", "json"],
        "`sqlite3 -json`": ["sqlite3", "-json"],
    }


def _check_export(argv: list[str], env: dict[str, str], out: Path, n: int) -> None:
    """Run the export once into a file: it must print `n` JSON lines, newest first."""
    with out.open("wb") as fh:
        run(argv, env=env, stdout=fh.fileno())
    with out.open("rb") as fh:
        first = json.loads(fh.readline())
        lines = 1 + sum(1 for _ in fh)
    if lines != n or not isinstance(first, dict) or "id" not in first:
        raise RuntimeError(f"export of {n} rows printed {lines} lines (first: {first!r:.80})")
    out.unlink()


def export(ws: Workspace) -> str:
    """`conv list --all -o jsonl` against `sqlite3 -json` on the same table, and its memory."""
    if ws.tiny:
        sizes, rounds, small, mem_runs = [300, 2000], {300: 2, 2000: 2}, 100, 1
    else:
        sizes, rounds, small, mem_runs = (
            [100_000, 1_000_000],
            {100_000: 15, 1_000_000: 7},
            1000,
            3,
        )
    have_sqlite = common.have("sqlite3")
    convrisk = str(ws.installed() / "convrisk")
    names = list(_export_commands(convrisk))
    jsonl, ref = names[0], names[-1]
    load_before = os.getloadavg()
    rows: list[list[str]] = []
    ratios: dict[int, float] = {}
    for n in sizes:
        db = ws.db(n)
        env = ws.env(CONVRISK_DB=str(db))
        commands = _export_commands(convrisk)
        commands[ref] = [*commands[ref], str(db), EXPORT_SQL]
        if not have_sqlite:
            del commands[ref]
        _check_export(commands[jsonl], env, ws.dir / "export-check.jsonl", n)
        results: dict[str, list[Run]] = {name: [] for name in commands}
        for argv in commands.values():  # warm the page cache and the .pyc files once
            run(argv, env=env)
        for _ in range(rounds[n]):  # interleaved: drift in the machine's load hits each alike
            for name, argv in commands.items():
                results[name].append(run(argv, env=env))
        ref_wall = median_seconds(results[ref]) if have_sqlite else 0.0
        ref_cpu = median_cpu(results[ref]) if have_sqlite else 0.0
        for name, runs_ in results.items():
            wall, cpu = median_seconds(runs_), median_cpu(runs_)
            vs = f"{wall / ref_wall:.2f}x" if ref_wall else "-"
            vs_cpu = f"{cpu / ref_cpu:.2f}x" if ref_cpu else "-"
            rows.append(
                [f"{n:,}", name, f"{wall:.3f}", f"{n / wall:,.0f}", vs, f"{cpu:.3f}", vs_cpu]
            )
        if ref_wall:
            ratios[n] = median_seconds(results[jsonl]) / ref_wall
    load_after = os.getloadavg()
    peaks: dict[int, int] = {}
    for n in (small, sizes[-1]):  # memory in runs of their own, under GNU time
        env = ws.env(CONVRISK_DB=str(ws.db(n)))
        peaks[n] = peak_rss_kib(_export_commands(convrisk)[jsonl], env=env, runs=mem_runs)
    mem_ratio = peaks[sizes[-1]] / peaks[small] if peaks[small] else 0.0

    targets = dict(zip(sizes, (3.0, 2.0), strict=True))
    lines = []
    for n in sizes:
        if n in ratios:
            ok = ratios[n] <= targets[n]
            ws.target(
                f"`conv list --all -o jsonl` time at {n:,} rows, ratio to `sqlite3 -json`",
                f"<= {targets[n]:g}x",
                f"{ratios[n]:.2f}x",
                ok,
            )
            lines.append(
                f"At {n:,} rows `-o jsonl` takes {ratios[n]:.2f}x the time of `sqlite3 -json` "
                f"(target <= {targets[n]:g}x: {_verdict(ok)})."
            )
        else:
            lines.append(f"At {n:,} rows: no sqlite3 command-line shell, no ratio.")
    if mem_ratio:
        ok = mem_ratio <= 1.2
        ws.target(
            f"export peak memory, {sizes[-1]:,} rows against {small:,}",
            "<= 1.2x",
            f"{mem_ratio:.2f}x",
            ok,
        )
        lines.append(
            f"Peak memory of `-o jsonl`: {peaks[small] / 1024:.1f} MiB at {small:,} rows, "
            f"{peaks[sizes[-1]] / 1024:.1f} MiB at {sizes[-1]:,} rows: {mem_ratio:.2f}x "
            f"(target <= 1.2x: {_verdict(ok)})."
        )
    else:
        lines.append("Peak memory: unknown (no GNU time).")
    text = _table(
        ["rows", "command", "wall s", "rows/s", "wall vs sqlite3", "CPU s", "CPU vs sqlite3"],
        rows,
    )
    rounds_text = ", ".join(f"{rounds[n]} at {n:,} rows" for n in sizes)
    return (
        "## 3. Streaming export\n\n"
        "The same table (the regular install's `convrisk`, `CONVRISK_DB` pointing at it) exported "
        f"by convrisk and by `sqlite3 -json DB '{EXPORT_SQL}'`, each started directly (nothing "
        "around either, stdout /dev/null), after one warm-up run each, in interleaved rounds "
        f"({rounds_text}): medians. Before timing, one `-o jsonl` run is checked to print one "
        "JSON object per row. Peak memory comes from separate runs under GNU time (`%M`, the "
        f"largest of {mem_runs}). Load average {load_before[0]:.2f} before, "
        f"{load_after[0]:.2f} after.\n\n{text}\n\n" + "\n".join(lines) + "\n"
    )


# -- 4. parallel writers ---------------------------------------------------------------------------


def _writer(path: str, count: int, errors: multiprocessing.Queue[str]) -> None:
    from convrisk.local_backend.backend import LocalBackend

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
    ws.target(
        f"parallel writers ({procs_n} processes): errors, rows lost",
        "0, 0",
        f"{len(failures)}, {lost}",
        not failures and lost == 0,
    )
    return (
        "## 4. Parallel writers\n\nEach process opens its own `LocalBackend` on one file and "
        "creates conversations one by one (each its own `BEGIN IMMEDIATE` transaction); the time "
        f"includes starting the processes.\n\n{text}\n\nTarget 0 errors, 0 lost: {verdict}.\n"
    )


# -- 5. remote --all -------------------------------------------------------------------------------


def remote(ws: Workspace) -> str:
    """`conv list --all` through the remote backend against `serve` on loopback."""
    from convrisk.local_backend.backend import LocalBackend
    from convrisk.local_backend.serve.server import make_server

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
                convrisk = str(ws.installed() / "convrisk")
                result = run(
                    [convrisk, "conv", "list", "--all", "-o", "jsonl"], env=env, stdout=fh.fileno()
                )
            lines = sum(1 for _ in out.open("rb"))
            # Each log line names its client as host:port: one port per TCP connection.
            connections = len({line.split()[1] for line in requests})
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
    ws.target(
        f"remote `--all` of {n:,} rows: TCP connections", "1", str(connections), connections == 1
    )
    return (
        "## 5. Remote `--all` over `convrisk serve`\n\n`convrisk conv list --all -o jsonl` with "
        "`CONVRISK_BASE_URL` pointing at the server on loopback (pages of 100); connections "
        "counted from the server's log (the client ports it names)."
        f"\n\n{text}\n\nTarget 1 connection: {_verdict(connections == 1)}.\n\n"
        + _remote_throughput(ws)
    )


# Remote `--all -o jsonl` rows/s on loopback, and the client's CPU against serve's (issue 21).
REMOTE_ROWS_TARGET = 150_000


def _remote_throughput(ws: Workspace) -> str:
    """`--all -o jsonl` and `-o id` at 100,000 rows, each build against its own serve."""
    from bench import remote_all

    n, rounds = (500, 1) if ws.tiny else (100_000, 5)
    bins = [ws.installed()]
    names = {bins[0]: "this build"}
    base_bin = ws.baseline()
    if base_bin is not None:
        bins.append(base_bin)
        names[base_bin] = f"baseline ({ws.baseline_ref})"
    work = ws.dir / "remote-all"
    work.mkdir()
    load_before = os.getloadavg()[0]
    floors = ["httpcore", "http.client"]
    figures, floor_figures = remote_all.measure(
        bins, ws.db(n), work, rounds=rounds, outputs=["jsonl", "id"], serve="own", floors=floors
    )
    load_after = os.getloadavg()[0]
    for output in ("jsonl", "id"):
        if not remote_all.same_bytes(figures, output):
            raise RuntimeError(f"remote --all -o {output}: the builds or runs printed other bytes")
    rows = [
        [
            names[bin_dir],
            f"`-o {output}`",
            f"{f.seconds:.3f}",
            f"{n / f.seconds:,.0f}",
            f"{f.client_cpu:.3f}",
            f"{f.serve_cpu:.3f}",
            f"{_over(f.client_cpu, f.serve_cpu):.2f}",
        ]
        for (bin_dir, output), f in figures.items()
    ]
    rows += [
        [
            f"{name} alone",
            "nothing",
            f"{f.seconds:.3f}",
            f"{n / f.seconds:,.0f}",
            f"{f.client_cpu:.3f}",
            f"{f.serve_cpu:.3f}",
            f"{_over(f.client_cpu, f.serve_cpu):.2f}",
        ]
        for name, f in floor_figures.items()
    ]
    mine = figures[bins[0], "jsonl"]
    rate, cpu_ratio = n / mine.seconds, _over(mine.client_cpu, mine.serve_cpu)
    ws.target(
        f"remote `conv list --all -o jsonl` of {n:,} rows over `serve` on loopback, rows/s",
        f">= {REMOTE_ROWS_TARGET:,}",
        f"{rate:,.0f}",
        rate >= REMOTE_ROWS_TARGET,
    )
    ws.target(
        f"remote `--all -o jsonl` of {n:,} rows: client CPU against serve's",
        "<= 1x",
        f"{cpu_ratio:.2f}x",
        cpu_ratio <= 1,
    )
    ids = figures[bins[0], "id"]
    return (
        f"At {n:,} rows, each build's client against its own `convrisk serve` on loopback (on "
        f"copies of one database), {rounds} interleaved rounds, medians; every run of one `-o` "
        "printed the same bytes. CPU is the client's own (wait4) and serve's while it answered "
        "(/proc). For scale, in the same rounds against this build's serve: an HTTP client "
        "alone walking the same pages, one at a time, with no check and no output (a whole "
        "process of bench/remote_floor.py: `httpcore`, the layer convrisk's list GETs go "
        "through, and the standard library's `http.client`). "
        f"Load average {load_before:.2f} before, {load_after:.2f} after.\n\n"
        + _table(
            ["build", "output", "seconds", "rows/s", "client CPU s", "serve CPU s", "client/serve"],
            rows,
        )
        + f"\n\n`-o jsonl`: {rate:,.0f} rows/s (target >= {REMOTE_ROWS_TARGET:,}: "
        f"{_verdict(rate >= REMOTE_ROWS_TARGET)}); the client's CPU {cpu_ratio:.2f}x serve's "
        f"(target <= 1x: {_verdict(cpu_ratio <= 1)}). `-o id` took {ids.seconds:.3f} s against "
        f"`-o jsonl`'s {mine.seconds:.3f} s.\n"
    )


# -- 6. --jq ---------------------------------------------------------------------------------------


def jq(ws: Workspace) -> str:
    """`--jq .id` against `-o id` and the memory of --jq (bench/jq_bench.py)."""
    from bench import jq_bench

    return jq_bench.section(ws)


# -- 7. import -------------------------------------------------------------------------------------


def bulk_import(ws: Workspace) -> str:
    """`risk import` local (100,000) and remote over serve (10,000) (bench/import_bench.py)."""
    from bench import import_bench

    return import_bench.import_section(ws)


SECTIONS: dict[str, Callable[[Workspace], str]] = {
    "cold_start": cold_start,
    "page_cost": page_cost,
    "export": export,
    "writers": writers,
    "remote": remote,
    "jq": jq,
    "import": bulk_import,
    "serve_create": serve_create,
    "serve_memory": serve_memory,
}
