"""Export throughput: `convrisk conv list --all -o jsonl` (and `-o json`) against `sqlite3 -json`.

    python bench/export_compare.py --sizes 100000,1000000 --runs 5   # the real measure
    python bench/export_compare.py --sizes 1000 --runs 1             # tiny: proves it runs

Both commands read the same table and are started the same way (`subprocess.run` from this
process, stdout to /dev/null, nothing wrapped around either), interleaved run by run so that a
change in the machine's load weighs on both. Reported: the median wall time and its ratio to
`sqlite3 -json`, rows per second, and the median CPU time (user + system) and its ratio. Peak
memory is taken in separate runs under GNU time (`%M`), 1,000 rows against the largest size.
Databases come from bench/page_cost.py's cache (bench/out/), filled once.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.page_cost import CACHE, fill

CONVRISK = str(Path(sys.executable).parent / "convrisk")
SQL = "SELECT * FROM conversations ORDER BY id DESC"


def _commands(db: Path) -> dict[str, list[str]]:
    base = [CONVRISK, "--db", str(db), "conv", "list", "--all", "-o"]
    return {
        "convrisk -o jsonl": [*base, "jsonl"],
        "convrisk -o json": [*base, "json"],
        "sqlite3 -json": ["sqlite3", "-json", str(db), SQL],
    }


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run, stdout to /dev/null."""
    import time

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, env=env, check=True, timeout=600)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu


def _peak_kib(argv: list[str], env: dict[str, str]) -> int:
    """Peak resident memory of one run, from GNU time (0 when it is not installed)."""
    if not os.access("/usr/bin/time", os.X_OK):
        return 0
    with tempfile.NamedTemporaryFile("r", prefix="export-rss-") as out:
        subprocess.run(
            ["/usr/bin/time", "-f", "%M", "-o", out.name, *argv],
            stdout=subprocess.DEVNULL,
            env=env,
            check=True,
            timeout=600,
        )
        return int(out.read().split()[-1])


def main(argv: list[str] | None = None) -> None:
    """Measure and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    if shutil.which("sqlite3") is None:
        sys.exit("the sqlite3 command-line shell is needed (apt-get install sqlite3)")
    sizes = sorted(int(size) for size in args.sizes.split(","))
    with tempfile.TemporaryDirectory(prefix="export-home-") as home:
        # PYTHONDONTWRITEBYTECODE would make every start compile our modules from source.
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("CONVRISK_") and k != "PYTHONDONTWRITEBYTECODE"
        }
        env.update(HOME=home, XDG_CONFIG_HOME=f"{home}/config", XDG_DATA_HOME=f"{home}/data")
        print("| rows | command | wall s (median) | rows/s | x sqlite3 | CPU s | CPU x |")
        print("|---:|---|---:|---:|---:|---:|---:|")
        for size in sizes:
            commands = _commands(fill(size, CACHE))
            walls: dict[str, list[float]] = {name: [] for name in commands}
            cpus: dict[str, list[float]] = {name: [] for name in commands}
            for _ in range(args.runs):
                for name, command in commands.items():
                    wall, cpu = _timed(command, env)
                    walls[name].append(wall)
                    cpus[name].append(cpu)
            ref_wall = statistics.median(walls["sqlite3 -json"])
            ref_cpu = statistics.median(cpus["sqlite3 -json"])
            for name in commands:
                wall, cpu = statistics.median(walls[name]), statistics.median(cpus[name])
                print(
                    f"| {size:,} | `{name}` | {wall:.3f} | {size / wall:,.0f} | "
                    f"{wall / ref_wall:.2f} | {cpu:.3f} | {cpu / ref_cpu:.2f} |"
                )
        small = _peak_kib(_commands(fill(1000, CACHE))["convrisk -o jsonl"], env)
        large = _peak_kib(_commands(fill(sizes[-1], CACHE))["convrisk -o jsonl"], env)
        if small and large:
            print(
                f"\nPeak memory of `-o jsonl`: {small / 1024:.1f} MiB at 1,000 rows, "
                f"{large / 1024:.1f} MiB at {sizes[-1]:,} ({large / small:.2f}x)."
            )


if __name__ == "__main__":
    main()
