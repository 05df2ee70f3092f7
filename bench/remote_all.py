"""Remote `conv list --all` at 100,000 rows over one `convrisk serve` on loopback, several
installs interleaved: wall time, rows/s, and the CPU of the client and of serve per run.

    python bench/remote_all.py BIN [BIN ...] [--rounds 5] [--rows 100000] [--output jsonl id]

Each BIN is a folder with `convrisk` (a venv's bin; a regular install, as bench/compare.py
says). The server is the first BIN's `convrisk serve`, one for every run; its CPU per run is
read from /proc before and after. In every round each install runs each output once, in turn,
so the machine's load drifts over every column alike. Every run of one output must print the
same bytes (checked by their digest). Printed: a Markdown table of medians, and the load average.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import SERVE_TOKEN, run, serving
from bench.page_cost import fill


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main(argv: list[str] | None = None) -> int:
    """Measure and print the table."""
    parser = argparse.ArgumentParser(prog="python bench/remote_all.py", description=__doc__)
    parser.add_argument("bins", nargs="+", type=Path, help="bin folders with convrisk")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    parser.add_argument("--rows", type=int, default=100_000, help="rows (default 100,000)")
    parser.add_argument("--output", nargs="+", default=["jsonl", "id"], help="-o formats")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="convrisk-remote-all-") as tmp:
        work = Path(tmp)
        db = work / "serve.db"
        shutil.copy(fill(args.rows), db)
        cases = [(b, o) for o in args.output for b in args.bins]
        runs: dict[tuple[Path, str], list[tuple[float, float, float]]] = {c: [] for c in cases}
        digests: dict[tuple[Path, str], set[str]] = {c: set() for c in cases}
        with serving([str(args.bins[0] / "convrisk")], db) as url:
            pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
            serve_pid = max(
                (p for p in pids if str(db) in _cmdline(p) and "serve" in _cmdline(p)),
                default=0,
            )
            if not serve_pid:
                raise SystemExit("could not find the serve process")
            env = {k: v for k, v in os.environ.items() if not k.startswith("CONVRISK_")}
            env |= {"CONVRISK_BASE_URL": url, "CONVRISK_TOKEN": SERVE_TOKEN, "HOME": tmp}
            out = work / "out"
            for _ in range(args.rounds):
                for bin_dir, output in cases:
                    before = cpu_seconds(serve_pid)
                    with out.open("wb") as fh:
                        argv_ = [str(bin_dir / "convrisk"), "conv", "list", "--all", "-o", output]
                        done = run(argv_, env=env, stdout=fh.fileno())
                    served = cpu_seconds(serve_pid) - before
                    runs[bin_dir, output].append((done.seconds, done.cpu_seconds, served))
                    digests[bin_dir, output].add(hashlib.sha256(out.read_bytes()).hexdigest())
    print("| build | -o | seconds | rows/s | client CPU s | serve CPU s | client/serve |")
    print("|---|---|---|---|---|---|---|")
    for case in cases:
        wall = statistics.median(r[0] for r in runs[case])
        client = statistics.median(r[1] for r in runs[case])
        serve = statistics.median(r[2] for r in runs[case])
        print(
            f"| {case[0]} | {case[1]} | {wall:.3f} | {args.rows / wall:,.0f} | {client:.3f} | "
            f"{serve:.3f} | {client / serve:.2f} |"
        )
    for output in args.output:
        seen = set().union(*(digests[b, output] for b in args.bins))
        print(f"-o {output}: {'the same bytes' if len(seen) == 1 else 'OUTPUTS DIFFER'}")
    print(f"load average {os.getloadavg()}")
    return 0


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")
    except OSError:
        return ""


if __name__ == "__main__":
    raise SystemExit(main())
