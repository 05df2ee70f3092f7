"""serve's memory as a whole: budgets shared by every connection, and memory given back.

Two budgets: the request heads not yet complete (bytes held by the HTTP parsers) share
HEAD_BUDGET, and the bodies held at once (requests being read or answered, the upstream's
answers in proxy mode) share one body budget. A request that would go past either is answered
503 (local_backend.serve.uvicorn_protocols, asgi_app, proxy).

Freed memory is given back to the system after connections close: glibc's malloc keeps what
Python frees in its heaps (a request head is tens of KiB, under malloc's mmap threshold) and
returns it only on `malloc_trim`, which is called (through ctypes) at most once per TRIM_SECONDS,
after connections have closed. Without glibc nothing is called.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable

# Incomplete request heads, all connections together (a head alone: api_client.params).
HEAD_BUDGET = 64 * 1024 * 1024
# Bodies held at once, all requests together (a request body alone is at most MAX_BODY_BYTES);
# in proxy mode at least the cap of one upstream answer (max_response_mb).
BODY_BUDGET = 256 * 1024 * 1024
# What a client refused for want of memory is told to wait, in seconds (Retry-After).
RETRY_AFTER = 1
# After a connection closes (or a head is refused), memory is given back this much later,
# and no more often.
TRIM_SECONDS = 1.0


class Budget:
    """Bytes shared by many holders: at most `limit` held at once."""

    def __init__(self, name: str, limit: int) -> None:
        self.name = name
        self.limit = limit
        self.used = 0

    def take(self, size: int) -> bool:
        """Hold `size` more bytes, if that stays within the limit; whether it did."""
        if self.used + size > self.limit:
            return False
        self.used += size
        return True

    def give(self, size: int) -> None:
        """Let go of `size` bytes taken before."""
        self.used = max(0, self.used - size)

    def mib(self) -> str:
        """The limit in words, e.g. `64 MiB`."""
        return f"{self.limit / (1024 * 1024):g} MiB"


class Hold:
    """What one request holds of a budget, let go of all at once when it is done."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.size = 0

    def take(self, size: int) -> bool:
        """Hold `size` more bytes of the budget, if it has them; whether it did."""
        if not self.budget.take(size):
            return False
        self.size += size
        return True

    def release(self) -> None:
        """Let go of everything held."""
        self.budget.give(self.size)
        self.size = 0


def _malloc_trim() -> Callable[[], None] | None:
    """glibc's `malloc_trim(0)` (returns the free pages of every heap), or None elsewhere."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        # The process's own symbols: libc is loaded already (no library search at run time).
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None  # not glibc (musl has no malloc_trim)
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int

    def call() -> None:
        trim(0)

    return call


class Memory:
    """serve's memory: the shared budgets, and memory given back once connections close."""

    def __init__(self, body_budget: int = BODY_BUDGET) -> None:
        self.heads = Budget("incomplete request heads", HEAD_BUDGET)
        self.bodies = Budget("bodies", max(BODY_BUDGET, body_budget))
        # Looked up now: at the first close, the descriptors may all be taken (an import opens
        # a file).
        self._trim = _malloc_trim()
        self._due: asyncio.TimerHandle | None = None

    def released(self, loop: asyncio.AbstractEventLoop) -> None:
        """A connection has closed, or let go of a head refused: give memory back within
        TRIM_SECONDS (once for a burst)."""
        if self._trim is None or self._due is not None:
            return
        self._due = loop.call_later(TRIM_SECONDS, self._give_back)

    def _give_back(self) -> None:
        self._due = None
        if self._trim is not None:
            self._trim()
