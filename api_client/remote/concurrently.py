"""Calls on a few daemon threads sharing one stop signal: create_many's creates, an import's
read-backs of replayed records."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TypeVar, cast

from convrisk.api_client.errors import ConvriskError, NotSent, stops_every_request

T = TypeVar("T")
R = TypeVar("R")


def each_at_once(
    items: Sequence[T], call: Callable[[T, threading.Event], R], *, at_once: int
) -> list[R | NotSent]:
    """`call(item, stop)` for each item, `at_once` at a time, the results in the items' order.

    A worker takes the next item until none is left or the stop is set: by a result that is an
    error every request would meet (`stops_every_request`), or by the caller's interruption. The
    items not taken by then are NotSent. An exception `call` raises is raised here once the
    workers are done. The threads are daemons and an interruption (Ctrl-C) does not wait for
    them: a call still in flight is abandoned, and the process can exit at once.
    """
    untaken = object()  # not None: a call may answer None
    slots: list[R | object] = [untaken] * len(items)
    pending = iter(enumerate(items))
    taking = threading.Lock()
    stop = threading.Event()
    crashed: list[BaseException] = []

    def work() -> None:
        try:
            while not stop.is_set():
                with taking:
                    step = next(pending, None)
                if step is None:
                    return
                index, item = step
                result = call(item, stop)
                slots[index] = result
                if isinstance(result, ConvriskError) and stops_every_request(result):
                    stop.set()
        except BaseException as exc:  # handed to the caller's thread, raised there
            if not stop.is_set():
                crashed.append(exc)
            stop.set()

    workers = [
        threading.Thread(target=work, name=f"convrisk-worker-{n}", daemon=True)
        for n in range(min(at_once, len(items)))
    ]
    try:
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    finally:
        stop.set()
    if crashed:
        raise crashed[0]
    return [NotSent() if slot is untaken else cast("R", slot) for slot in slots]
