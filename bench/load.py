"""Load on `convrisk serve`: N concurrent clients listing and creating over loopback for a set time.

    python bench/load.py                         # 8 clients x 10 s (the measure)
    python bench/load.py --seconds 1 --clients 2 # tiny: proves the script runs (CI)

The server is a real `convrisk serve --port 0` subprocess over a fresh SQLite file (`--server
thread` runs `make_server` inside this process instead). Each client thread has its own
HTTPBackend (one keep-alive connection, no retries, so no failure is hidden) and loops until the
time is up: one create (a conversation or a risk profile, in turn, each with an Idempotency-Key)
for every `--list-per-create` lists of a first page (limit 10, now and then filtered). Printed:
requests/s, p50/p99 latency in ms overall and per kind, errors (must be 0), and the rows in the
database after a clean stop against the creates acknowledged (must be equal). Exit code 1 when
either check fails.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import serving
from convrisk.api_client import Client, ConvriskError
from convrisk.api_client.remote.http import HTTPBackend
from convrisk.local_backend.backend import LocalBackend
from convrisk.local_backend.serve.server import make_server

TOKEN = "load-bench-token"
MAX_SECONDS = 600.0
MAX_CLIENTS = 256


@dataclass
class Tally:
    """What one client did: latencies in seconds per kind, creates acknowledged, errors."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: {"list": [], "create": []})
    created: dict[str, int] = field(default_factory=lambda: {"conversations": 0, "risk": 0})
    errors: list[str] = field(default_factory=list)


def _client_loop(url: str, index: int, deadline: float, list_per_create: int, tally: Tally) -> None:
    """One client: its own HTTPBackend, lists and creates until the deadline."""
    backend = HTTPBackend(url, TOKEN, timeout=30.0, max_retries=0)
    client = Client(backend)
    n = 0
    try:
        while time.monotonic() < deadline:
            n += 1
            started = time.perf_counter()
            try:
                if n % (list_per_create + 1) == 0:
                    kind = "create"
                    key = str(uuid.uuid4())
                    if (n // (list_per_create + 1)) % 2:
                        client.conversations.create(
                            {"contact_id": f"ct_{index}_{n}"}, idempotency_key=key
                        )
                        tally.created["conversations"] += 1
                    else:
                        client.risk_profiles.create(
                            {
                                "customer_id": f"cus_{index % 4}",
                                "profile_type": "moderate",
                                "score": n % 100,
                                "details": {"client": index, "n": n},
                            },
                            idempotency_key=key,
                        )
                        tally.created["risk"] += 1
                else:
                    kind = "list"
                    if n % 3 == 0:
                        client.conversations.list({"muted": False}, limit=10)
                    elif n % 3 == 1:
                        client.conversations.list(limit=10)
                    else:
                        client.risk_profiles.list({"customer_id": f"cus_{index % 4}"}, limit=10)
            except ConvriskError as exc:
                tally.errors.append(f"{type(exc).__name__}: {exc}")
                continue
            tally.latencies[kind].append(time.perf_counter() - started)
    finally:
        client.close()


@contextmanager
def _thread_server(db_path: Path) -> Iterator[str]:
    backend = LocalBackend(db_path)
    try:
        with make_server(backend, token=TOKEN).running() as server:
            yield server.url
    finally:
        backend.close()


@contextmanager
def _process_server(db_path: Path) -> Iterator[str]:
    exe = Path(sys.executable).with_name("convrisk")
    command = [str(exe)] if exe.exists() else [sys.executable, "-m", "convrisk.cli.app"]
    with serving(command, db_path, token=TOKEN, clean_stop=True) as url:
        yield url


def _count_rows(db_path: Path) -> dict[str, int]:
    """Rows in the database, counted through the local backend (after the server stopped)."""
    with Client(LocalBackend(db_path)) as client:
        return {
            "conversations": sum(1 for _ in client.conversations.iterate()),
            "risk": sum(1 for _ in client.risk_profiles.iterate()),
        }


def _ms(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0] * 1000
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1] * 1000


def run(
    *,
    clients: int,
    seconds: float,
    list_per_create: int,
    server: str,
    out: Callable[[str], None] = print,
) -> bool:
    """Run the load, print the figures, and say whether both checks passed."""
    with tempfile.TemporaryDirectory(prefix="convrisk-load-") as tmp:
        db_path = Path(tmp) / "load.db"
        start_server = _process_server if server == "process" else _thread_server
        tallies = [Tally() for _ in range(clients)]
        with start_server(db_path) as url:
            deadline = time.monotonic() + seconds
            threads = [
                threading.Thread(
                    target=_client_loop, args=(url, i, deadline, list_per_create, tallies[i])
                )
                for i in range(clients)
            ]
            began = time.perf_counter()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            elapsed = time.perf_counter() - began
        rows = _count_rows(db_path)

    lists = [v for t in tallies for v in t.latencies["list"]]
    creates = [v for t in tallies for v in t.latencies["create"]]
    every = lists + creates
    errors = [e for t in tallies for e in t.errors]
    acked = {k: sum(t.created[k] for t in tallies) for k in ("conversations", "risk")}
    rows_ok = rows == acked
    out(
        f"load: {clients} clients x {seconds:g} s against convrisk serve ({server}) on loopback, "
        f"1 create per {list_per_create} lists"
    )
    out(
        f"requests: {len(every)} in {elapsed:.1f} s = {len(every) / elapsed:.0f} requests/s "
        f"({len(lists)} lists, {len(creates)} creates)"
    )
    out(
        f"latency ms: all p50 {_ms(every, 50):.1f} p99 {_ms(every, 99):.1f} | "
        f"list p50 {_ms(lists, 50):.1f} p99 {_ms(lists, 99):.1f} | "
        f"create p50 {_ms(creates, 50):.1f} p99 {_ms(creates, 99):.1f}"
    )
    out(f"errors: {len(errors)}" + (f" (first: {errors[0]})" if errors else ""))
    out(
        f"rows created: {rows['conversations']} conversations + {rows['risk']} risk profiles; "
        f"creates acknowledged: {acked['conversations']} + {acked['risk']} -> "
        + ("equal" if rows_ok else "NOT EQUAL")
    )
    return not errors and rows_ok and bool(every)


def main(argv: list[str] | None = None) -> int:
    """Parse the options, run the load, exit 1 if a check failed."""
    parser = argparse.ArgumentParser(
        prog="python bench/load.py", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients (default 8)")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long to run (default 10)")
    parser.add_argument(
        "--list-per-create", type=int, default=4, help="lists for each create (default 4)"
    )
    parser.add_argument(
        "--server",
        choices=("process", "thread"),
        default="process",
        help="a `convrisk serve` subprocess (default) or make_server in this process",
    )
    args = parser.parse_args(argv)
    if not 1 <= args.clients <= MAX_CLIENTS:
        parser.error(f"--clients must be from 1 to {MAX_CLIENTS}")
    if not 0 < args.seconds <= MAX_SECONDS:
        parser.error(f"--seconds must be above 0 and at most {MAX_SECONDS:g}")
    if args.list_per_create < 0:
        parser.error("--list-per-create must be 0 or more")
    ok = run(
        clients=args.clients,
        seconds=args.seconds,
        list_per_create=args.list_per_create,
        server=args.server,
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
