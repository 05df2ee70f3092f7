"""Walking a list page by page: the cursor loop, guarded against a service paging in a circle."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from convrisk.api_client.errors import ServiceError
from convrisk.api_client.page import Page
from convrisk.api_client.records import Record

if TYPE_CHECKING:
    import queue

# Cursors remembered exactly to catch a service that pages in a circle; past this many pages
# (a million items at pages of 100) the guard keeps memory flat (see CursorGuard).
MAX_REMEMBERED_CURSORS = 10_000

R = TypeVar("R", bound=Record)


class CursorGuard:
    """Says whether a cursor was already seen, in bounded memory.

    The first `capacity` cursors are remembered exactly, so a repeat among them is caught at
    once. Beyond that, Brent's cycle detection (one checkpoint moved at doubling distances)
    still catches a service that pages in a circle, within a few turns of that circle.
    """

    def __init__(self, capacity: int = MAX_REMEMBERED_CURSORS) -> None:
        self._seen: set[str] = set()
        self._capacity = capacity
        self._checkpoint: str | None = None
        self._distance = 1
        self._steps = 0

    def repeated(self, cursor: str) -> bool:
        """True if `cursor` was seen before; otherwise remember it and return False."""
        if cursor in self._seen or cursor == self._checkpoint:
            return True
        if len(self._seen) < self._capacity:
            self._seen.add(cursor)
            return False
        self._steps += 1
        if self._steps >= self._distance:
            self._checkpoint = cursor
            self._distance *= 2
            self._steps = 0
        return False


T = TypeVar("T")


def paginate(
    fetch: Callable[[int, str | None], Page[R]],
    limit: int | None,
    start: str | None,
    per_page: int,
) -> Iterator[Page[R]]:
    """Pages from `fetch(size, cursor)` until `limit` items (None: all), guarded against loops.

    `start` is the first cursor (starting_after, or ending_before for a backward walk)."""
    remaining = limit
    cursor = start
    guard = CursorGuard()
    if start is not None:
        guard.repeated(start)
    while remaining is None or remaining > 0:
        size = per_page if remaining is None else min(per_page, remaining)
        page = fetch(size, cursor)
        count = len(page)
        if count > size:
            page.cut(size)
            count = size
        # Both faults are caught before the page is handed out, so no item is shown twice.
        if page.has_more and not count:
            raise ServiceError("The service said more items exist but sent an empty page.")
        last = page.cursor
        if last is not None and guard.repeated(last):
            raise ServiceError(
                "The service sent a page that makes no progress: its last item "
                f"{last} was already a cursor of this listing; stopped instead of looping."
            )
        yield page
        if remaining is not None:
            remaining -= count
        if not page.has_more:
            return
        cursor = last


class Ahead(Generic[T]):
    """One call made on a thread ahead of its need (the next page of a list, asked for while
    this one is checked and printed): its result, or its error, is taken later.

    One daemon thread makes every such call, one at a time: a caller that stops (Ctrl-C) never
    waits for it at exit, and a request on it ends by its own timeout.
    """

    def __init__(self, make: Callable[[Callable[[], None]], T]) -> None:
        import threading

        self._make = make
        self._sent = threading.Event()
        self._done = threading.Event()
        self._result: tuple[bool, Any] = (False, None)
        _worker().put(self._run)
        # Until the call says its request is sent (`make(sent)` calls `sent()`), or ends: else
        # this thread, holding the interpreter, would check and print this page before the
        # worker could even send the next request, and nothing would overlap.
        self._sent.wait(SENDING_SECONDS)

    def _run(self) -> None:
        try:
            self._result = (True, self._make(self._sent.set))
        except BaseException as exc:  # raised again by take(), in the caller's thread
            self._result = (False, exc)
        self._sent.set()
        self._done.set()

    def take(self) -> T:
        """The call's result once it is made, or its error raised here."""
        self._done.wait()
        made, value = self._result
        if not made:
            assert isinstance(value, BaseException)
            raise value
        result: T = value
        return result

    def drop(self) -> None:
        """Wait for the call to end and forget it, whatever its outcome (its connection is back
        in the pool afterwards, for the next request)."""
        self._done.wait()


# How long the caller waits at most for a call's request to be sent before it goes on.
SENDING_SECONDS = 1.0

_jobs: queue.SimpleQueue[Callable[[], None]] | None = None


def _worker() -> queue.SimpleQueue[Callable[[], None]]:
    """The queue of the thread that makes the calls read ahead, started on first use."""
    global _jobs
    if _jobs is None:
        import queue
        import threading

        jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()

        def work() -> None:
            while True:  # a daemon: it waits for work until the process ends
                jobs.get()()

        threading.Thread(target=work, name="convrisk-ahead", daemon=True).start()
        _jobs = jobs
    return _jobs


# A scan reads at most this many pages (ten million items at pages of 100) before giving up.
MAX_SCAN_PAGES = 100_000


def scan_page(
    fetch: Callable[[str | None], Page[R]],
    keep: Callable[[R], bool],
    limit: int,
    *,
    backwards: bool,
    start: str | None,
    report: Callable[[int, int], None] | None = None,
) -> Page[R]:
    """One page of a list filtered on the client: the first `limit` items that `keep` keeps,
    read from pages of the unfiltered list (`fetch(cursor)`, newest first) from `start` on.

    What a list with a filter the service lacks returns (DESIGN 5.2): the same page a service
    with that filter would, newest first. Backwards (`ending_before`), each page's items are
    read oldest first and the matches are the `limit` just newer than `start`. It stops after
    `limit` matches; `has_more` is true when the list goes on past the last match (more may
    match). `report(scanned, matched)` follows each page. Guarded as `paginate` is.
    """
    matched: list[R] = []
    scanned = 0
    cursor = start
    guard = CursorGuard()
    if start is not None:
        guard.repeated(start)
    for _ in range(MAX_SCAN_PAGES):
        page = fetch(cursor)
        items = page.records
        if page.has_more and not items:
            raise ServiceError("The service said more items exist but sent an empty page.")
        walk = list(reversed(items)) if backwards else items
        for index, item in enumerate(walk):
            if keep(item):
                matched.append(item)
                if len(matched) == limit:
                    rest = walk[index + 1 :]
                    has_more = page.has_more or any(keep(later) for later in rest)
                    return _scanned(matched, has_more, backwards, report, scanned + index + 1)
        scanned += len(items)
        if report is not None:
            report(scanned, len(matched))
        if not page.has_more:
            return _scanned(matched, False, backwards, None, scanned)
        last: str = walk[-1]["id"]
        if guard.repeated(last):
            raise ServiceError(
                "The service sent a page that makes no progress: its last item "
                f"{last} was already a cursor of this scan; stopped instead of looping."
            )
        cursor = last
    raise ServiceError(
        f"Stopped scanning after {MAX_SCAN_PAGES:,} pages ({scanned:,} items) without reaching "
        "the end of the list."
    )


def _scanned(
    matched: list[R],
    has_more: bool,
    backwards: bool,
    report: Callable[[int, int], None] | None,
    scanned: int,
) -> Page[R]:
    """The page of matches, newest first."""
    if report is not None:
        report(scanned, len(matched))
    if backwards:
        matched.reverse()
    return Page(has_more, records=matched)
