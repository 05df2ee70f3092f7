"""The window a remote undo leaves open: per record, the time from the read that checks it to the
write that puts it back (a service without conditional writes cannot close it).

    python bench/undo_window.py [--records N]

Starts the installed `convrisk serve` on loopback, makes N conversations, then times, per
record, a GET alone, a PUT alone, and the conditional update `undo` sends (the client's
`update(id, fields, expect=...)`: GET, compare, PUT). Prints the medians. Another writer's
change to the same fields between serve reading the record for the GET and serve applying the
PUT is overwritten: that window is at most the check and write, and about one round trip.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import cast

from bench.common import SERVE_TOKEN, machine, serving


def _median_ms(calls: list[Callable[[], object]]) -> float:
    """The median time of the calls, in milliseconds."""
    times = []
    for call in calls:
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main(argv: list[str]) -> None:
    """Measure and print the medians."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--records", type=int, default=500)
    args = parser.parse_args(argv)
    from convrisk.api_client.client import Client
    from convrisk.api_client.params import ConversationUpdateParams
    from convrisk.api_client.remote.http import HTTPBackend
    from convrisk.api_client.resources import CONVERSATIONS

    flag = next(f.name for f in CONVERSATIONS.updatable() if f.type == "boolean")
    on = cast(ConversationUpdateParams, {flag: True})
    off = cast(ConversationUpdateParams, {flag: False})

    convrisk = str(Path(sys.executable).parent / "convrisk")
    with tempfile.TemporaryDirectory() as folder, serving([convrisk], Path(folder) / "w.db") as url:
        client = Client(HTTPBackend(url, SERVE_TOKEN, allow_insecure_http=True))
        convs = client.conversations
        ids = [convs.create({"contact_id": f"c_{n}"})["id"] for n in range(args.records)]
        get = _median_ms([partial(convs.retrieve, i) for i in ids])
        put = _median_ms([partial(convs.update, i, on) for i in ids])
        checked = _median_ms([partial(convs.update, i, off, expect=dict(on)) for i in ids])
        client.close()
    print(f"machine: {machine()}")
    print(f"records: {args.records:,}, convrisk serve on loopback, medians")
    print(f"GET alone (the check's read): {get:.2f} ms")
    print(f"PUT alone (the write): {put:.2f} ms")
    print(f"check and write (GET, compare, PUT): {checked:.2f} ms")


if __name__ == "__main__":
    main(sys.argv[1:])
