"""Benchmarks with targets: `python -m bench` prints a table and writes docs/performance.md.

Sections: cold start, page cost at scale, streaming export, parallel writers, remote --all.
`python -m bench --tiny` runs everything at a tiny size (CI does, so it never rots); it checks
that each section runs and writes nothing to docs/ unless `--write` is given.
"""

from __future__ import annotations

import argparse
import datetime as dt
import subprocess
import sys
import time
from pathlib import Path

from bench import common, sections

ROOT = Path(__file__).resolve().parent.parent
REPORT = ROOT / "docs" / "performance.md"


def _machine() -> str:
    """The machine (common.machine()) and the sqlite3 CLI's version."""
    sqlite = (
        subprocess.run(
            ["sqlite3", "--version"], capture_output=True, text=True, check=False
        ).stdout.split(" ")[:1]
        if common.have("sqlite3")
        else ["absent"]
    )
    return f"{common.machine()}, sqlite3 CLI {sqlite[0]}"


def summary(targets: list[common.Target], *, tiny: bool = False) -> str:
    """The figures that have a target, each with its verdict, as a Markdown table."""
    lines = [
        "## Targets\n",
        *(["(`--tiny`: sizes too small for the verdicts to mean anything.)\n"] if tiny else []),
        "| figure | target | measured | met? |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {t.figure} | {t.target} | {t.measured} | {'yes' if t.met else '**no**'} |"
        for t in targets
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the chosen sections and print (and optionally write) the report."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--tiny", action="store_true", help="tiny sizes: proves the code runs")
    parser.add_argument("--write", action="store_true", help="write docs/performance.md")
    parser.add_argument(
        "--baseline",
        metavar="REV",
        help="a git revision (main's build, say) measured in the same rounds where builds are "
        "compared: cold start, remote --all, -o id, import, serve's creates",
    )
    parser.add_argument(
        "--only",
        default="",
        help="comma-separated sections to run: " + ",".join(sections.SECTIONS),
    )
    args = parser.parse_args(argv)
    chosen = [s for s in args.only.split(",") if s] or list(sections.SECTIONS)
    unknown = [s for s in chosen if s not in sections.SECTIONS]
    if unknown:
        parser.error(f"unknown section(s): {', '.join(unknown)}")
    write = args.write or (not args.tiny and not args.only)

    started = time.perf_counter()
    parts: list[str] = []
    with common.Workspace(tiny=args.tiny, baseline=args.baseline) as ws:
        for name in chosen:
            print(f"== {name}", file=sys.stderr, flush=True)
            text = sections.SECTIONS[name](ws)
            print(text, flush=True)
            parts.append(text)
        print(summary(ws.targets, tiny=args.tiny), flush=True)
    took = time.perf_counter() - started
    print(f"(bench took {took:.0f} s)", file=sys.stderr)

    if write:
        header = (
            "# Performance\n\n"
            f"Measured on {dt.date.today().isoformat()} on {_machine()}, by `python -m bench"
            + (f" --baseline {args.baseline}" if args.baseline else "")
            + f"` (took {took:.0f} s). "
            + (
                f"The build of {args.baseline} (`--baseline`) was measured in the same rounds "
                "where the sections compare builds. "
                if args.baseline
                else ""
            )
            + "Reproduce: install the project (`pip install -e '.[test]'`), "
            "then `python -m bench` from the repository root; it installs the checkout as users "
            "do (not editable) into a venv of its own, measures, and rewrites this page. "
            "`python -m bench --only cold_start,export` runs some sections; `--tiny` runs "
            "everything at a tiny size (CI does, without writing this page).\n"
        )
        notes = (ROOT / "bench" / "notes.md").read_text()
        # The serve comparison is measured by bench/serve_compare.py (it needs wrk, ab and the
        # old build); a rewrite of this page keeps its last section.
        serve = ROOT / "bench" / "serve_compare.md"
        if serve.exists():
            from bench.serve_compare import MARK_BEGIN, MARK_END

            parts.append(f"{MARK_BEGIN}\n{serve.read_text()}{MARK_END}\n")
        REPORT.write_text(
            header
            + "\n"
            + summary(ws.targets, tiny=args.tiny)
            + "\n"
            + "\n".join(parts)
            + "\n"
            + notes
        )
        print(f"wrote {REPORT.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
