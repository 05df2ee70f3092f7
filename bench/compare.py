"""Cold start of several convrisk installs side by side, in one interleaved pass.

    python -m bench.compare BEFORE_BIN AFTER_BIN [--rounds 31] [--remote]

Each BIN is a folder with `python` and `convrisk` (a venv's bin; a regular install, not an
editable one, or its import finder is timed too). In every round each command of each install
runs right after a bare `python -I -c pass` of the first install, all started directly (nothing
around them), so the machine's load drifts over every column alike. Printed: a Markdown table of
median wall ms, its ratio to the bare interpreter, and the median CPU ratio. `--remote` adds
`conv get ID -o json` over `convrisk serve` on 127.0.0.1 (the first install's, one server for
all).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.common import SERVE_TOKEN, Run, run, serving

COMMANDS = [
    ("--version", ["--version"]),
    ("--help", ["--help"]),
    ("conv list -o json", ["conv", "list", "-o", "json"]),
    ("conv get ID -o json", ["conv", "get", "{id}", "-o", "json"]),
    ("conv create --contact-id c_1 -o id", ["conv", "create", "--contact-id", "c_1", "-o", "id"]),
]


def main(argv: list[str] | None = None) -> int:
    """Measure and print the table."""
    parser = argparse.ArgumentParser(prog="python -m bench.compare", description=__doc__)
    parser.add_argument("bins", nargs="+", type=Path, help="bin folders with python and convrisk")
    parser.add_argument("--rounds", type=int, default=31, help="interleaved rounds (default 31)")
    parser.add_argument("--remote", action="store_true", help="add a remote conv get")
    args = parser.parse_args(argv)
    if not 1 <= args.rounds <= 1000:
        parser.error("--rounds must be from 1 to 1000")
    bins = [b.resolve() for b in args.bins]
    with tempfile.TemporaryDirectory(prefix="convrisk-compare-") as home:
        env = {k: v for k, v in os.environ.items() if not k.startswith("CONVRISK_")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.update(HOME=home, XDG_CONFIG_HOME=f"{home}/c", XDG_DATA_HOME=f"{home}/d")
        first = str(bins[0] / "convrisk")
        made = [
            subprocess.run(
                [first, "conv", "create", "--contact-id", f"c{i}", "-o", "id"],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
            for i in range(10)
        ]
        bare = [str(bins[0] / "python"), "-I", "-c", "pass"]
        commands = list(COMMANDS)
        with contextlib.ExitStack() as stack:
            if args.remote:
                db = Path(home, "d", "convrisk", "convrisk.db")
                url = stack.enter_context(serving([first], db, env=env))
                env["CONVRISK_TOKEN"] = SERVE_TOKEN
                commands.append(
                    ("--base-url URL conv get ID -o json", ["--base-url", url, *COMMANDS[3][1]])
                )
            cases = [
                (f"`convrisk {label}` ({b.parent.name or b})", [str(b / "convrisk"), *words])
                for label, words in commands
                for b in bins
            ]
            cases = [(label, [w.format(id=made[0]) for w in cmd]) for label, cmd in cases]
            for _, cmd in [("bare", bare), *cases]:  # warm the page cache and the .pyc files
                run(cmd, env=env)
            bare_runs: list[Run] = []
            runs: dict[str, list[Run]] = {label: [] for label, _ in cases}
            for _ in range(args.rounds):
                for label, cmd in cases:
                    bare_runs.append(run(bare, env=env))
                    runs[label].append(run(cmd, env=env))
    base = statistics.median(r.seconds for r in bare_runs)
    base_cpu = statistics.median(r.cpu_seconds for r in bare_runs)
    print(f"{args.rounds} interleaved rounds; load average now {os.getloadavg()[0]:.2f}\n")
    print("| command (install) | wall ms | vs bare | CPU vs bare |\n|---|---|---|---|")
    print(f"| `python -I -c pass` | {base * 1000:.1f} | 1.0x | 1.0x |")
    for label, results in runs.items():
        wall = statistics.median(r.seconds for r in results)
        cpu = statistics.median(r.cpu_seconds for r in results)
        print(f"| {label} | {wall * 1000:.1f} | {wall / base:.1f}x | {cpu / base_cpu:.1f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
