"""Import benchmark (issue 13): `convrisk risk import` of JSON lines, local and remote.

- local: 100,000 records into a fresh SQLite file; records/s (target >= 35,000) and the peak
  resident memory against an import of 1,000 records in a separate run (target: within 1.2x).
- remote: 10,000 records through `convrisk serve` (a subprocess on 127.0.0.1); records/s
  (target >= 1,000).

Each figure is the median of a few runs, each on a fresh database; the memory is GNU time's %M
of the convrisk process alone. `import_section(ws)` has the signature of the sections of
`python -m bench`; run this file alone to print the section:

    .venv/bin/python bench/import_bench.py            # full sizes
    .venv/bin/python bench/import_bench.py --tiny     # proves it runs
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import CONVRISK, GNU_TIME, Workspace

TOKEN = "bench-import-token-5e1f"
TYPES = ("conservative", "moderate", "aggressive")
LOCAL_TARGET = 35_000  # records/s at 100,000 records (issue 21; 10,000 before it)


def write_records(path: Path, n: int) -> Path:
    """`n` risk profiles to create, as JSON lines (about 140 bytes each)."""
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            record = {
                "customer_id": f"cus_{i:08d}",
                "profile_type": TYPES[i % 3],
                "score": i % 101 if i % 2 else (i % 1000) / 10,
                "details": {"horizon_years": i % 40, "source": "questionnaire"},
            }
            out.write(json.dumps(record) + "\n")
    return path


@dataclass
class Run:
    """One finished import: wall seconds, CPU seconds (user + system) and peak memory (KiB) of
    the convrisk process (0 when GNU time is not installed)."""

    seconds: float
    cpu_seconds: float
    max_rss_kib: int
    # The CPU time (user + system) `convrisk serve` spent meanwhile (remote runs on Linux).
    server_cpu_seconds: float | None = None


def _import(
    ws: Workspace, path: Path, db: Path | None, convrisk: str = CONVRISK, **extra: str
) -> Run:
    """One `convrisk risk import FILE` into a fresh `db`, or the remote service in `extra`."""
    if db is not None:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        extra["CONVRISK_DB"] = str(db)
    argv = [convrisk, "risk", "import", str(path), "-o", "id"]
    with tempfile.NamedTemporaryFile(prefix="bench-time-", mode="r") as measured:
        prefix = [GNU_TIME, "-f", "%U %S %M", "-o", measured.name] if GNU_TIME else []
        started = time.perf_counter()
        done = subprocess.run(
            [*prefix, *argv],
            env=ws.env(**extra),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=3600,
            check=False,
        )
        seconds = time.perf_counter() - started
        figures = (measured.read().strip().splitlines() or [""])[-1].split()
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr[-500:]!r}")
    if len(figures) == 3:
        return Run(seconds, float(figures[0]) + float(figures[1]), int(figures[2]))
    return Run(seconds, 0.0, 0)


class Serve:
    """`convrisk serve` in a subprocess on loopback, its log in a file (never a full pipe)."""

    def __init__(self, ws: Workspace, db: Path, convrisk: str = CONVRISK) -> None:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        self.log = ws.dir / "serve.log"
        self._log_file = self.log.open("w")
        self.proc = subprocess.Popen(
            [convrisk, "serve", "--port", "0", "--db", str(db), "--token", TOKEN],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._log_file,
            env=ws.env(),
        )
        deadline = time.monotonic() + 30
        self.url = ""
        while not self.url:
            found = re.search(r"listening on (http://\S+)", self.log.read_text())
            if found:
                self.url = found.group(1)
            elif self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"convrisk serve did not start: {self.log.read_text()[-500:]}")
            else:
                time.sleep(0.05)

    def cpu_seconds(self) -> float | None:
        """The server's CPU time so far (user + system), where /proc tells it."""
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            return None
        # utime and stime: fields 14 and 15 of stat(5), 12 and 13 after the command's name.
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        """SIGTERM, then wait (bounded)."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self._log_file.close()


def import_section(ws: Workspace) -> str:
    """The import figures as a section of docs/performance.md."""
    big, small, remote_n, runs = (2_000, 100, 500, 1) if ws.tiny else (100_000, 1_000, 10_000, 3)
    files = ws.dir / "import"
    files.mkdir(exist_ok=True)
    big_file = write_records(files / f"{big}.jsonl", big)
    small_file = write_records(files / f"{small}.jsonl", small)
    remote_file = write_records(files / f"{remote_n}.jsonl", remote_n)
    db = files / "import.db"
    convrisk = str(ws.installed() / "convrisk")
    base_bin = ws.baseline()

    local_big: list[Run] = []
    baseline_big: list[Run] = []
    for _ in range(runs):  # with a baseline build, interleaved with it
        local_big.append(_import(ws, big_file, db, convrisk))
        if base_bin is not None:
            baseline_big.append(_import(ws, big_file, db, str(base_bin / "convrisk")))
    local_small = [_import(ws, small_file, db, convrisk) for _ in range(runs)]
    remote_runs: list[Run] = []
    for _ in range(runs):
        served = Serve(ws, files / "serve.db", convrisk)
        try:
            before = served.cpu_seconds()
            run = _import(
                ws,
                remote_file,
                None,
                convrisk,
                CONVRISK_BASE_URL=served.url,
                CONVRISK_TOKEN=TOKEN,
            )
            after = served.cpu_seconds()
            if before is not None and after is not None:
                run.server_cpu_seconds = after - before
            remote_runs.append(run)
        finally:
            served.stop()
    for where, n in ((db, small), (files / "serve.db", remote_n)):
        stored = _count(where)
        if stored != n:
            raise RuntimeError(f"{where} holds {stored} risk profiles after the import, not {n}")

    def rate(results: list[Run], n: int) -> float:
        return n / statistics.median(r.seconds for r in results)

    def rss(results: list[Run]) -> float:
        return statistics.median(r.max_rss_kib for r in results) / 1024

    def per_cpu_second(results: list[Run], n: int) -> str:
        cpu = statistics.median(r.cpu_seconds for r in results)
        return f"{n / cpu:,.0f}" if cpu else "unknown"

    server_cpu = [r.server_cpu_seconds for r in remote_runs if r.server_cpu_seconds is not None]
    server_line = ""
    if server_cpu:
        server_line = (
            f"`convrisk serve` itself used {statistics.median(server_cpu):.2f} s of CPU for the "
            f"{remote_n:,} remote records (median), "
            f"{1e6 * statistics.median(server_cpu) / remote_n:,.0f} µs a record.\n"
        )
    local_rate = rate(local_big, big)
    remote_rate = rate(remote_runs, remote_n)
    big_rss, small_rss = rss(local_big), rss(local_small)
    ratio = big_rss / small_rss if small_rss else float("nan")
    rows = [
        [
            f"local, {big:,} records",
            f"{statistics.median(r.seconds for r in local_big):.2f}",
            f"{local_rate:,.0f}",
            per_cpu_second(local_big, big),
            f"{big_rss:.1f}",
            f">= {LOCAL_TARGET:,}/s: {_verdict(local_rate >= LOCAL_TARGET)}",
        ],
        *(
            [
                [
                    f"local, {big:,} records, baseline ({ws.baseline_ref})",
                    f"{statistics.median(r.seconds for r in baseline_big):.2f}",
                    f"{rate(baseline_big, big):,.0f}",
                    per_cpu_second(baseline_big, big),
                    f"{rss(baseline_big):.1f}",
                    "",
                ]
            ]
            if baseline_big
            else []
        ),
        [
            f"local, {small:,} records",
            f"{statistics.median(r.seconds for r in local_small):.2f}",
            f"{rate(local_small, small):,.0f}",
            per_cpu_second(local_small, small),
            f"{small_rss:.1f}",
            "",
        ],
        [
            f"remote (`serve` on loopback), {remote_n:,} records",
            f"{statistics.median(r.seconds for r in remote_runs):.2f}",
            f"{remote_rate:,.0f}",
            per_cpu_second(remote_runs, remote_n),
            f"{rss(remote_runs):.1f}",
            f">= 1,000/s: {_verdict(remote_rate >= 1_000)}",
        ],
    ]
    ws.target(
        f"local `risk import` of {big:,} records (JSON lines), records/s (section 8)",
        f">= {LOCAL_TARGET:,}",
        f"{local_rate:,.0f}",
        local_rate >= LOCAL_TARGET,
    )
    ws.target(
        f"local `risk import` peak memory, {big:,} records against {small:,} (section 8)",
        "<= 1.2x",
        f"{ratio:.2f}x",
        ratio <= 1.2,
    )
    ws.target(
        f"remote `risk import` of {remote_n:,} records over `serve` on loopback, records/s "
        "(section 8)",
        ">= 1,000",
        f"{remote_rate:,.0f}",
        remote_rate >= 1_000,
    )
    load = "unknown"
    if hasattr(os, "getloadavg"):
        load = f"{os.getloadavg()[0]:.1f}"
    lines = [
        "| import | seconds | records/s | records per CPU second of convrisk | peak MiB | target |",
        "|---|---|---|---|---|---|",
    ]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return (
        "## 8. Import\n\n"
        f"`convrisk risk import FILE -o id` of JSON-lines risk profiles into a fresh database "
        f"(median of {runs} run(s), each a whole process from start to exit; CPU time (user + "
        "system) and peak resident memory of the convrisk process by GNU time: the CPU figure "
        "shows what the machine's other load takes from the wall-clock one; for the remote "
        "import the server's CPU is not counted in it); a regular install of this checkout"
        + (
            f", its local runs interleaved with the build of {ws.baseline_ref}"
            if base_bin is not None
            else ""
        )
        + ".\n\n"
        + "\n".join(lines)
        + f"\n\nPeak memory at {big:,} records is {ratio:.2f}x the peak at {small:,} records "
        f"(target <= 1.2x: {_verdict(ratio <= 1.2)}).\n"
        + server_line
        + f"Load average (1 minute) at the end: {load} on {os.cpu_count()} cores.\n"
    )


def _count(db: Path) -> int:
    """How many risk profiles a database holds (read-only)."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        (count,) = conn.execute("SELECT count(*) FROM risk_profiles").fetchone()
    return int(count)


def _verdict(ok: bool) -> str:
    return "met" if ok else "**missed**"


def main(argv: list[str] | None = None) -> int:
    """Print the import section."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="tiny sizes: proves the code runs")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    with Workspace(tiny=args.tiny) as ws:
        print(import_section(ws), flush=True)
    print(f"(import bench took {time.perf_counter() - started:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
