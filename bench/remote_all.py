"""Remote `conv list --all` at 100,000 rows over one `convrisk serve` on loopback, several
installs interleaved: wall time, rows/s, and the CPU of the client and of serve per run.

    python bench/remote_all.py BIN [BIN ...] [--rounds 5] [--rows 100000] [--output jsonl id]
                               [--serve first|own|SERVE_BIN]

Each BIN is a folder with `convrisk` (a venv's bin; a regular install, as bench/compare.py
says). `--serve` says whose `convrisk serve` answers: `first` (the default) the first BIN's, one
for every run; `own` each BIN's own, so that builds of serve are compared with their own
clients (each serve on a copy of the same database, all started before the first run); or the
`convrisk serve` of the bin folder SERVE_BIN, for every run. A serve's CPU per run is read from
/proc before and after. In every round each install runs each output once, in turn, so the
machine's load drifts over every column alike. Every run of one output must print the same
bytes (checked by their digest). Printed: a Markdown table of medians, and the load average.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import shutil
import statistics
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import SERVE_TOKEN, run, serving
from bench.page_cost import fill

FLOOR = Path(__file__).resolve().parent / "remote_floor.py"


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Figures:
    """The runs of one build and one `-o`: (wall s, client CPU s, serve CPU s) each, and the
    digests of what they printed."""

    runs: list[tuple[float, float, float]] = field(default_factory=list)
    digests: set[str] = field(default_factory=set)

    @property
    def seconds(self) -> float:
        """Median wall seconds."""
        return statistics.median(r[0] for r in self.runs)

    @property
    def client_cpu(self) -> float:
        """Median CPU seconds of the client."""
        return statistics.median(r[1] for r in self.runs)

    @property
    def serve_cpu(self) -> float:
        """Median CPU seconds serve spent answering it."""
        return statistics.median(r[2] for r in self.runs)


def measure(
    bins: list[Path],
    source: Path,
    work: Path,
    *,
    rounds: int,
    outputs: list[str],
    serve: str = "first",
    floors: Sequence[str] = (),
) -> tuple[dict[tuple[Path, str], Figures], dict[str, Figures]]:
    """Every (build, `-o`) `rounds` times, interleaved, against the serve `serve` names (see
    the module's doc) on copies of the database `source`; in the same rounds, each client of
    bench/remote_floor.py in `floors` walking the first build's serve (its own figures)."""
    if serve == "first":
        serve_of = {b: bins[0] for b in bins}
    elif serve == "own":
        serve_of = {b: b for b in bins}
    else:
        serve_of = {b: Path(serve) for b in bins}
    cases = [(b, o) for o in outputs for b in bins]
    figures = {c: Figures() for c in cases}
    floor_figures = {name: Figures() for name in floors}
    with contextlib.ExitStack() as stack:
        # Each serve bin folder: its base URL and the pid whose CPU is read.
        servers: dict[Path, tuple[str, int]] = {}
        for number, serve_bin in enumerate(dict.fromkeys(serve_of.values())):
            db = work / f"serve-{number}.db"
            shutil.copy(source, db)
            url = stack.enter_context(serving([str(serve_bin / "convrisk")], db))
            servers[serve_bin] = (url, _serve_pid(db))
        out = work / "out"
        for _ in range(rounds):
            for bin_dir, output in cases:
                url, serve_pid = servers[serve_of[bin_dir]]
                env = {k: v for k, v in os.environ.items() if not k.startswith("CONVRISK_")}
                env |= {"CONVRISK_BASE_URL": url, "CONVRISK_TOKEN": SERVE_TOKEN, "HOME": str(work)}
                before = cpu_seconds(serve_pid)
                with out.open("wb") as fh:
                    argv_ = [str(bin_dir / "convrisk"), "conv", "list", "--all", "-o", output]
                    done = run(argv_, env=env, stdout=fh.fileno())
                served = cpu_seconds(serve_pid) - before
                figures[bin_dir, output].runs.append((done.seconds, done.cpu_seconds, served))
                figures[bin_dir, output].digests.add(hashlib.sha256(out.read_bytes()).hexdigest())
            url, serve_pid = servers[serve_of[bins[0]]]
            for name in floors:
                before = cpu_seconds(serve_pid)
                floor = [str(bins[0] / "python"), str(FLOOR), name, url, SERVE_TOKEN]
                done = run(floor, env={"HOME": str(work), "PATH": os.environ.get("PATH", "")})
                served = cpu_seconds(serve_pid) - before
                floor_figures[name].runs.append((done.seconds, done.cpu_seconds, served))
    return figures, floor_figures


def same_bytes(figures: dict[tuple[Path, str], Figures], output: str) -> bool:
    """Whether every run of `-o output`, of every build, printed the same bytes."""
    return len(set().union(*(f.digests for (_, o), f in figures.items() if o == output))) == 1


def main(argv: list[str] | None = None) -> int:
    """Measure and print the table."""
    parser = argparse.ArgumentParser(prog="python bench/remote_all.py", description=__doc__)
    parser.add_argument("bins", nargs="+", type=Path, help="bin folders with convrisk")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    parser.add_argument("--rows", type=int, default=100_000, help="rows (default 100,000)")
    parser.add_argument("--output", nargs="+", default=["jsonl", "id"], help="-o formats")
    parser.add_argument(
        "--serve",
        default="first",
        help="whose serve answers: first (the first BIN's), own (each BIN's), or a bin folder",
    )
    parser.add_argument(
        "--floor",
        nargs="*",
        default=[],
        choices=["httpcore", "http.client"],
        help="HTTP clients alone walking the same pages (bench/remote_floor.py), for scale",
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="convrisk-remote-all-") as tmp:
        figures, floor_figures = measure(
            args.bins,
            fill(args.rows),
            Path(tmp),
            rounds=args.rounds,
            outputs=args.output,
            serve=args.serve,
            floors=args.floor,
        )
    if args.serve != "first":
        print(f"serve: {args.serve}")
    print("| build | -o | seconds | rows/s | client CPU s | serve CPU s | client/serve |")
    print("|---|---|---|---|---|---|---|")
    for (bin_dir, output), f in figures.items():
        print(
            f"| {bin_dir} | {output} | {f.seconds:.3f} | {args.rows / f.seconds:,.0f} | "
            f"{f.client_cpu:.3f} | {f.serve_cpu:.3f} | {f.client_cpu / f.serve_cpu:.2f} |"
        )
    for name, f in floor_figures.items():
        print(
            f"| {name} alone (bench/remote_floor.py) | - | {f.seconds:.3f} | "
            f"{args.rows / f.seconds:,.0f} | {f.client_cpu:.3f} | {f.serve_cpu:.3f} | "
            f"{f.client_cpu / f.serve_cpu:.2f} |"
        )
    for output in args.output:
        print(
            f"-o {output}: {'the same bytes' if same_bytes(figures, output) else 'OUTPUTS DIFFER'}"
        )
    print(f"load average {os.getloadavg()}")
    return 0


def _serve_pid(db: Path) -> int:
    """The pid of the `convrisk serve` process serving `db`."""
    pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    found = [p for p in pids if str(db) in _cmdline(p) and "serve" in _cmdline(p)]
    if not found:
        raise SystemExit(f"could not find the serve process of {db}")
    return max(found)


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")
    except OSError:
        return ""


if __name__ == "__main__":
    raise SystemExit(main())
