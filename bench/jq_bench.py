"""`--jq` cost: `conv list --all -o jsonl --jq .id` against `conv list --all -o id` (target: at
most 2x the time), and the memory of `--jq` streamed (-o jsonl) and over the whole document.

    python bench/jq_bench.py --rows 100000 --runs 7   # the real measure
    python bench/jq_bench.py --rows 1000 --runs 1     # tiny: proves it runs

Every command is the installed console script, started the same way (bench.common.run: a child
process under GNU time, stdout to /dev/null, nothing else around it), interleaved run by run so
that a change in the machine's load weighs on all of them. Reported: median wall seconds and
CPU seconds (user + system: steadier than wall time on a shared machine), their ratios to
`-o id`, and the peak resident memory of each. Before timing, the `--jq .id` output is
checked to be exactly the `-o id` output. Databases come from bench/page_cost.py's cache.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import CONVRISK, Run, Workspace, peak_rss_kib, run

TARGET = 2.0
BASELINE = "baseline"


def commands(convrisk: str = CONVRISK, baseline: str | None = None) -> dict[str, list[str]]:
    """The commands compared, by name (the first is the reference); with a `baseline`
    convrisk, its `-o id` and `-o jsonl` too."""
    base = [convrisk, "conv", "list", "--all"]
    named = {
        "-o id": [*base, "-o", "id"],
        "-o jsonl --jq .id": [*base, "-o", "jsonl", "--jq", ".id"],
        "-o jsonl": [*base, "-o", "jsonl"],
        "--jq length": [*base, "--jq", "length"],  # the whole document: every record kept
    }
    if baseline is not None:
        named[f"-o id ({BASELINE})"] = [baseline, *named["-o id"][1:]]
        named[f"-o jsonl ({BASELINE})"] = [baseline, *named["-o jsonl"][1:]]
    return named


@dataclass
class Figure:
    """One command's runs: median wall seconds and peak memory (KiB, 0 when unknown)."""

    name: str
    argv: list[str]
    runs: list[Run]
    cpu: list[float]
    peak_kib: int = 0  # from a separate run under GNU time (bench.common.peak_rss_kib)

    @property
    def seconds(self) -> float:
        """Median wall time."""
        return statistics.median(r.seconds for r in self.runs)

    @property
    def cpu_seconds(self) -> float:
        """Median CPU time (user + system) of the process."""
        return statistics.median(self.cpu)


def check_same_output(rows: int, env: dict[str, str], argv: dict[str, list[str]]) -> None:
    """`--jq .id` prints exactly what `-o id` prints, and `--jq length` the row count."""

    def out(name: str) -> bytes:
        return subprocess.run(
            argv[name], env=env, stdin=subprocess.DEVNULL, capture_output=True, check=True
        ).stdout

    ids = out("-o id")
    if out("-o jsonl --jq .id") != ids or len(ids.splitlines()) != rows:
        raise RuntimeError("--jq .id did not print the -o id output")
    if out("--jq length").strip() != str(rows).encode():
        raise RuntimeError("--jq length did not print the row count")


def measure(
    db: Path, env: dict[str, str], rows: int, runs: int, argv: dict[str, list[str]] | None = None
) -> list[Figure]:
    """Every command (`commands()` by default) `runs` times, interleaved; the figures in their
    order."""
    env = {**env, "CONVRISK_DB": str(db)}
    argv = argv or commands()
    check_same_output(rows, env, argv)
    figures = [Figure(name, args, [], []) for name, args in argv.items()]
    for _ in range(runs):
        for figure in figures:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            figure.runs.append(run(figure.argv, env=env))
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            figure.cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    for figure in figures:
        figure.peak_kib = peak_rss_kib(figure.argv, env=env)
    return figures


def report(figures: list[Figure], rows: int, runs: int) -> str:
    """A Markdown table and the verdict on the target."""
    ref, ref_cpu = figures[0].seconds, figures[0].cpu_seconds
    lines = [
        "| command | median s | x `-o id` | rows/s | CPU s | CPU x | peak MiB |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for figure in figures:
        lines.append(
            f"| `convrisk conv list --all {figure.name}` | {figure.seconds:.2f} | "
            f"{figure.seconds / ref:.2f} | {rows / figure.seconds:,.0f} | "
            f"{figure.cpu_seconds:.2f} | {figure.cpu_seconds / ref_cpu:.2f} | "
            f"{figure.peak_kib / 1024:.1f} |"
        )
    ratio = figures[1].seconds / ref
    cpu_ratio = figures[1].cpu_seconds / ref_cpu
    verdict = "met" if ratio <= TARGET else "**missed**"
    id_ratio = ref / figures[2].seconds
    return (
        f"{rows:,} conversations, median of {runs} interleaved run(s) each.\n\n"
        + "\n".join(lines)
        + f"\n\n`-o jsonl --jq .id` takes {ratio:.2f}x the time of `-o id` "
        f"(target <= {TARGET:.0f}x: {verdict}; {cpu_ratio:.2f}x its CPU time). `-o id` takes "
        f"{id_ratio:.2f}x the time of `-o jsonl` (target: no slower, <= 1x: "
        f"{'met' if id_ratio <= 1 else '**missed**'}).\n"
    )


def targets(ws: Workspace, figures: list[Figure], rows: int) -> None:
    """Record the section's targets: `--jq .id` against `-o id`, `-o id` against `-o jsonl`."""
    ratio = figures[1].seconds / figures[0].seconds
    ws.target(
        f"`conv list --all -o jsonl --jq .id` against `-o id`, {rows:,} rows (section 6)",
        f"<= {TARGET:g}x",
        f"{ratio:.2f}x",
        ratio <= TARGET,
    )
    id_ratio = figures[0].seconds / figures[2].seconds
    ws.target(
        f"`conv list --all -o id` against `-o jsonl`, {rows:,} rows (section 6)",
        "<= 1x",
        f"{id_ratio:.2f}x",
        id_ratio <= 1,
    )


def section(ws: Workspace) -> str:
    """The `jq` section of `python -m bench`."""
    rows, runs = (1000, 1) if ws.tiny else (100_000, 5)
    base_bin = ws.baseline()
    argv = commands(
        str(ws.installed() / "convrisk"),
        None if base_bin is None else str(base_bin / "convrisk"),
    )
    figures = measure(ws.db(rows), ws.env(), rows, runs, argv)
    targets(ws, figures, rows)
    return (
        "## 6. `--jq` and `-o id`\n\nbench/jq_bench.py: each command is a regular install's "
        "console script, started the same way (a child, stdout to /dev/null, nothing around it), "
        "interleaved run by run"
        + (f"; {BASELINE} is the build of {ws.baseline_ref}" if base_bin is not None else "")
        + ". CPU is user + system time of the process.\n\n"
        + report(figures, rows, runs)
    )


def main(argv: list[str] | None = None) -> None:
    """Measure and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args(argv)
    with Workspace(tiny=False) as ws:
        print(
            report(measure(ws.db(args.rows), ws.env(), args.rows, args.runs), args.rows, args.runs)
        )


if __name__ == "__main__":
    main()
