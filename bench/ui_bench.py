"""`convrisk ui`: time to first rows on a pty (a 1,000,000-row local database, and `serve` over it
on loopback), and memory while scrolling 10,000 rows; medians, printed with the load average.

    .venv/bin/python bench/ui_bench.py [--rows 1000000] [--runs 7] [--scroll 10000] [--memory-only]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.fill import fill
from convrisk.local_backend.backend import LocalBackend
from tests.e2e.both_backends import serving
from tests.e2e.screen import Terminal

ALTERNATE_SCREEN = b"\x1b[?1049h"  # Textual's first output: the screen is being drawn


def first_rows(env: dict[str, str]) -> tuple[float, float]:
    """ms from exec to Textual's first output, and to the first conversation id on screen."""
    started = time.perf_counter()
    term = Terminal(env, ["ui"], columns=120, lines=40)
    term.read_until(ALTERNATE_SCREEN)
    drawn = time.perf_counter()
    term.read_until(b"conv_")
    rows = time.perf_counter()
    term.send(b"q")
    assert term.finish() == 0, term.output[-500:]
    return (drawn - started) * 1000, (rows - started) * 1000


def report(name: str, env: dict[str, str], runs: int) -> None:
    """The medians of `runs` starts."""
    times = [first_rows(env) for _ in range(runs)]
    drawn = statistics.median(t[0] for t in times)
    rows = statistics.median(t[1] for t in times)
    after = statistics.median(t[1] - t[0] for t in times)
    print(
        f"{name}: first rows {rows:.0f} ms after exec, {after:.0f} ms after the first draw "
        f"(first draw {drawn:.0f} ms); median of {runs}"
    )


def rss_mib() -> int:
    """This process's resident memory now, in MiB (Linux)."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * resource.getpagesize() // (1 << 20)


def scrolled_memory(env: dict[str, str], rows: int) -> list[tuple[int, int]]:
    """(rows scrolled past, RSS in MiB) as the pilot scrolls to `rows` rows, in this process."""
    os.environ.update(env)
    from convrisk.cli.context import AppContext
    from convrisk.cli.ui.browser import Browser

    run = AppContext()
    app = Browser(run)
    seen: list[tuple[int, int]] = []

    async def go() -> None:
        async with app.run_test(size=(120, 40)) as pilot:
            view = app.view()
            for _ in range(rows // 10):  # bounded: at most 10 presses a page
                if view.seen >= rows:
                    break
                before = view.seen
                await pilot.press("ctrl+end")
                for _ in range(200):  # each page within 10 s
                    if view.seen > before or not view.has_more:
                        break
                    await pilot.pause(0.05)
                if view.seen % 1000 < 50:
                    seen.append((view.seen, rss_mib()))
            await pilot.press("q")

    asyncio.run(go())
    run.close()
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--scroll", type=int, default=10_000)
    parser.add_argument("--memory-only", action="store_true", help="only the scrolled memory")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder)
        env = {
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / "config"),
            "XDG_DATA_HOME": str(home / "data"),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            "CONVRISK_JOURNAL": "off",
        }
        db = home / "serve.db"  # serving() serves home/serve.db
        backend = LocalBackend(db)
        fill(backend, "conversations", args.scroll + 100 if args.memory_only else args.rows)
        backend.close()
        print(f"load average {os.getloadavg()[0]:.1f} (shared machine)")
        if not args.memory_only:
            report(f"local, {args.rows:,} rows", {**env, "CONVRISK_DB": str(db)}, args.runs)
            with serving(home) as served:
                remote = {**env, "CONVRISK_BASE_URL": served.url, "CONVRISK_TOKEN": served.token}
                report(f"serve on loopback, {args.rows:,} rows", remote, args.runs)
        for loaded, mib in scrolled_memory({**env, "CONVRISK_DB": str(db)}, args.scroll):
            print(f"scrolled to {loaded:,} rows: RSS {mib} MiB")
        print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
