"""What `serve --proxy-to` adds to a request: one client, one request at a time, against a
`convrisk serve` directly and through a proxying `convrisk serve` in front of it.

    python bench/proxy_overhead.py                  # 5 rounds x 300 requests of each kind
    python bench/proxy_overhead.py --rounds 1 --requests 20   # tiny: proves the script runs

Rounds alternate direct and proxied (interleaved, so a busy moment hurts both alike). Printed per
kind (a page of 10 conversations, one conversation, a create): the median latency direct and
proxied in ms, and the difference, which is the proxy's overhead (a second loopback hop, the
forwarding, and the contract check of the request and the answer).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

CONVRISK = str(Path(sys.executable).parent / "convrisk")
TOKEN = "proxy-bench-token-0123"
READY_SECONDS = 30.0


@contextmanager
def serve(home: Path, *extra: str) -> Iterator[str]:
    """A `convrisk serve` on a free loopback port over a database in `home`: its URL."""
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONVRISK_")}
    env |= {"HOME": str(home), "XDG_CONFIG_HOME": str(home), "XDG_DATA_HOME": str(home)}
    args = ["serve", "--port", "0", "--token", TOKEN, "--db", str(home / "s.db"), *extra]
    proc = subprocess.Popen(
        [CONVRISK, *args],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    found: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:  # read all along: a full pipe would block the server
            if line.startswith("convrisk serve: listening on "):
                found.append(line.split()[-1])
                ready.set()
        ready.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        if not ready.wait(READY_SECONDS) or not found:
            raise SystemExit(f"convrisk serve {' '.join(extra)} did not start")
        yield found[0]
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        reader.join(timeout=10)


def timed(
    call: Callable[[httpx.Client], httpx.Response], client: httpx.Client, count: int
) -> list[float]:
    """Seconds each of `count` calls took; every answer must be a 200."""
    out = []
    for _ in range(count):
        started = time.perf_counter()
        response = call(client)
        out.append(time.perf_counter() - started)
        if response.status_code != 200:
            raise SystemExit(f"unexpected {response.status_code}: {response.text[:200]}")
    return out


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=300)
    options = parser.parse_args()
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with tempfile.TemporaryDirectory(prefix="proxy-bench-") as folder:
        root = Path(folder)
        with serve(root / "up") as upstream, serve(root / "px", "--proxy-to", upstream) as proxy:
            with httpx.Client(base_url=upstream, headers=auth, timeout=30) as seed:
                for number in range(30):
                    seed.post("/v1/conversations", json={"contact_id": f"c_{number}"})
                one = seed.get("/v1/conversations", params={"limit": 1}).json()["data"][0]["id"]
            kinds: dict[str, Callable[[httpx.Client], httpx.Response]] = {
                "list (10)": lambda c: c.get("/v1/conversations", params={"limit": 10}),
                "get": lambda c: c.get(f"/v1/conversations/{one}"),
                "create": lambda c: c.post("/v1/conversations", json={"contact_id": "c_x"}),
            }
            samples: dict[tuple[str, str], list[float]] = {
                (kind, way): [] for kind in kinds for way in ("direct", "proxied")
            }
            clients = {
                "direct": httpx.Client(base_url=upstream, headers=auth, timeout=30),
                "proxied": httpx.Client(base_url=proxy, headers=auth, timeout=30),
            }
            try:
                for _ in range(options.rounds):
                    for kind, call in kinds.items():
                        for way, client in clients.items():
                            samples[kind, way] += timed(call, client, options.requests)
            finally:
                for client in clients.values():
                    client.close()
    print(f"{'kind':<10} {'direct ms':>10} {'proxied ms':>11} {'overhead ms':>12}  (medians)")
    for kind in kinds:
        direct = statistics.median(samples[kind, "direct"]) * 1000
        proxied = statistics.median(samples[kind, "proxied"]) * 1000
        print(f"{kind:<10} {direct:>10.3f} {proxied:>11.3f} {proxied - direct:>12.3f}")


if __name__ == "__main__":
    main()
