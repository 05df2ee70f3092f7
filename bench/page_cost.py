"""Page cost at scale: one page of conversations at growing table sizes, with each filter alone.

    python bench/page_cost.py --sizes 1000,1000000     # the real measure (fills once, ~1 min)
    python bench/page_cost.py --sizes 100              # tiny: proves the script runs (CI)

For each size it fills a database of realistic conversations (cached in bench/out/ and reused),
then times `backend.conversations.list(...)` through LocalBackend, as the CLI calls it: the first
page (limit 10) and a deep page (`starting_after` an id about 90% of the way down the list), with
no filter and with each filter alone. Each figure is the median of several runs, in microseconds.
The target (DESIGN 1.1): a page at 1,000,000 rows costs no more than about twice the page at 1,000.
"""

from __future__ import annotations

import argparse
import functools
import sqlite3
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "bench" / "out"
# Rows are created evenly over three years from here (the same data whoever fills the cache).
START = 1_600_000_000
SPAN_SECONDS = 3 * 365 * 86400
TARGET_RATIO = 2.0
DEEP = 0.9

FILTERS: tuple[tuple[str, Any], ...] = (
    ("none", None),
    ("muted", {"muted": True}),
    ("archived", {"archived": True}),
    ("pinned", {"pinned": True}),
    ("group_id", {"group_id": "grp_busy"}),
)
PAGES = ("first", "deep")


@dataclass(frozen=True)
class PageCost:
    """One measured case: table size, which page, which filter, items returned, median time."""

    size: int
    page: str
    filter: str
    items: int
    median_us: float


def fill(size: int, cache: Path = CACHE) -> Path:
    """A database of `size` realistic conversations, made once in `cache` and reused after."""
    from bench.fill import fill as fill_rows
    from convrisk.local_backend.backend import LocalBackend

    path = cache / f"conversations-{size}.db"
    if path.exists():
        try:
            with sqlite3.connect(path) as conn:
                (count,) = conn.execute("SELECT count(*) FROM conversations").fetchone()
            if count == size:
                return path
        except sqlite3.Error:
            pass
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with LocalBackend(path) as backend:
        fill_rows(backend, "conversations", size, start=START, end=START + SPAN_SECONDS)
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    took = time.perf_counter() - started
    print(f"filled {path} with {size:,} conversations in {took:.1f} s", file=sys.stderr)
    return path


def _deep_cursor(backend: Any) -> str:
    """An id about 90% of the way down the newest-first list (it need not exist)."""
    from convrisk.local_backend.store import ids

    newest = backend.conversations.list(limit=1)["data"][0]["created_at"]
    before_all = ids.id_at("conv_", 0)  # the smallest id there can be
    oldest = backend.conversations.list(limit=1, ending_before=before_all)["data"][0]["created_at"]
    seconds = newest - DEEP * (newest - oldest)
    return ids.id_at("conv_", int(seconds * 1000))


def run(sizes: Sequence[int], *, cache: Path = CACHE, runs: int = 51) -> list[PageCost]:
    """Fill (or reuse) a database per size and time every page x filter case on each.

    The sizes take turns call by call within each case, so a change in the machine's load
    while the bench runs weighs on every size alike and the ratios stay fair.
    """
    from convrisk.local_backend.backend import LocalBackend

    sizes = sorted(set(sizes))
    backends = [LocalBackend(fill(size, cache)) for size in sizes]
    rows: list[PageCost] = []
    try:
        cursors = [_deep_cursor(backend) for backend in backends]
        for page in PAGES:
            for name, filters in FILTERS:
                calls = [
                    functools.partial(
                        backend.conversations.list,
                        filters,
                        limit=10,
                        starting_after=cursor if page == "deep" else None,
                    )
                    for backend, cursor in zip(backends, cursors, strict=True)
                ]
                # Warm the page cache and the statement cache, and count the items.
                items = [len(call()["data"]) for call in calls for _ in range(3)][::3]
                times: list[list[int]] = [[] for _ in calls]
                for _ in range(runs):
                    for call, spent in zip(calls, times, strict=True):
                        started = time.perf_counter_ns()
                        call()
                        spent.append(time.perf_counter_ns() - started)
                for size, count, spent in zip(sizes, items, times, strict=True):
                    rows.append(PageCost(size, page, name, count, statistics.median(spent) / 1000))
    finally:
        for backend in backends:
            backend.close()
    return rows


def ratios(rows: Sequence[PageCost]) -> dict[tuple[str, str], float]:
    """Per (page, filter): the time at the largest size over the time at the smallest.

    Only cases whose pages hold as many items at both sizes are compared: a tiny table may not
    fill a filtered deep page, and a shorter page is cheaper for a reason that is not the size.
    """
    sizes = sorted({row.size for row in rows})
    by_case = {(row.page, row.filter, row.size): row for row in rows}
    out: dict[tuple[str, str], float] = {}
    for page in PAGES:
        for name, _ in FILTERS:
            small = by_case.get((page, name, sizes[0]))
            large = by_case.get((page, name, sizes[-1]))
            if small is not None and large is not None and small.items == large.items:
                out[(page, name)] = large.median_us / small.median_us
    return out


def table(rows: Sequence[PageCost]) -> str:
    """A Markdown table: one line per page x filter, one column per size, then the ratio."""
    sizes = sorted({row.size for row in rows})
    by_case = {(row.page, row.filter, row.size): row for row in rows}
    header = ["page", "filter"] + [f"{size:,} rows: µs (items)" for size in sizes]
    if len(sizes) > 1:
        header.append(f"ratio {sizes[-1]:,} / {sizes[0]:,}")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    factor = ratios(rows)
    for page in PAGES:
        for name, _ in FILTERS:
            cells = [page, name]
            for size in sizes:
                case = by_case[(page, name, size)]
                cells.append(f"{case.median_us:,.0f} ({case.items})")
            if len(sizes) > 1 and (page, name) in factor:
                ratio = factor[(page, name)]
                verdict = "ok" if ratio <= TARGET_RATIO else "OVER TARGET"
                cells.append(f"{ratio:.2f} {verdict}")
            elif len(sizes) > 1:
                cells.append("n/a (pages of different lengths)")
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def report(sizes: Sequence[int], *, cache: Path = CACHE, runs: int = 51) -> str:
    """Run the measure and describe it in Markdown: the table and the worst ratio."""
    rows = run(sizes, cache=cache, runs=runs)
    text = (
        f"Median of {runs} calls of `conversations.list(limit=10)` on LocalBackend (in-process, "
        "warm cache), first page and a deep page (`starting_after` an id ~90% down), with no "
        "filter and each filter alone.\n\n" + table(rows) + "\n"
    )
    factor = ratios(rows)
    if factor and len(set(sizes)) > 1:
        worst = max(factor, key=lambda case: factor[case])
        text += (
            f"\nWorst ratio: {factor[worst]:.2f} ({worst[0]} page, filter {worst[1]}); "
            f"target: at most about {TARGET_RATIO:g}.\n"
        )
    return text


def main(argv: Sequence[str] | None = None) -> int:
    """Parse --sizes / --runs, then print the report."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes", default="1000,1000000", help="comma-separated table sizes (default %(default)s)"
    )
    parser.add_argument("--runs", type=int, default=51, help="timed calls per case")
    parser.add_argument("--cache", type=Path, default=CACHE, help="where filled databases live")
    args = parser.parse_args(argv)
    try:
        sizes = [int(part.replace("_", "")) for part in args.sizes.split(",") if part.strip()]
    except ValueError:
        parser.error(f"--sizes must be comma-separated integers, not {args.sizes!r}")
    if not sizes or min(sizes) < 1:
        parser.error("--sizes needs at least one size of 1 or more")
    print(report(sizes, cache=args.cache, runs=args.runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
