"""The behaviours the suite covers, counted: a behaviour is a test function, whatever its
parameters, wherever it lives; a subprocess one is marked e2e. `python -m tests.behaviours`
prints the counts; `--save FILE` keeps the list; `--compare FILE` names every behaviour of FILE
that no test covers any more (exit 1 if one is lost)."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def collected(*marker: str) -> list[str]:
    """Node ids pytest collects (optionally `-m MARKER`), in file order."""
    shown = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:randomly", *marker],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    return [line for line in shown.stdout.splitlines() if "::" in line]


def behaviour(node: str) -> str:
    """A node id without its parameters: `tests/x/test_y.py::test_z`."""
    return re.sub(r"\[.*\]$", "", node)


def name_of(node: str) -> str:
    """A behaviour's test name alone (a test moved to another module keeps it)."""
    return behaviour(node).rsplit("::", 1)[-1]


def survey() -> dict[str, object]:
    """Tests, behaviours and which of them run the installed script (e2e)."""
    every = collected()
    e2e = set(collected("-m", "e2e"))
    names = sorted({name_of(node) for node in every})
    in_e2e = sorted({name_of(node) for node in every if node in e2e})
    return {
        "tests": len(every),
        "e2e_tests": len(e2e),
        "behaviours": len(names),
        "e2e_behaviours": len(in_e2e),
        "by_folder": dict(
            Counter(node.split("/")[1] if node.count("/") > 1 else "tests" for node in every)
        ),
        "names": names,
        "e2e_names": in_e2e,
    }


def main(argv: list[str] | None = None) -> int:
    """Print the survey; save it, or compare it with a saved one."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--save", type=Path)
    parser.add_argument("--compare", type=Path)
    args = parser.parse_args(argv)
    now = survey()
    print(
        f"{now['tests']} tests ({now['e2e_tests']} e2e), "
        f"{now['behaviours']} behaviours ({now['e2e_behaviours']} with an e2e test)"
    )
    if args.save:
        args.save.write_text(json.dumps(now, indent=1) + "\n", encoding="utf-8")
    if args.compare:
        before = json.loads(args.compare.read_text(encoding="utf-8"))
        names: list[str] = now["names"]  # type: ignore[assignment]
        lost = sorted(set(before["names"]) - set(names))
        print(
            f"before: {before['tests']} tests ({before['e2e_tests']} e2e), "
            f"{before['behaviours']} behaviours ({before['e2e_behaviours']} with an e2e test)"
        )
        for name in lost:
            print(f"lost: {name}")
        return 1 if lost else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
