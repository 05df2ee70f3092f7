"""The request journal of `convrisk serve`: what each request sent, in memory, bounded.

The oldest entries are dropped (and counted) beyond JOURNAL_SIZE. Recording costs a tuple and a
slice per request; the work of showing an entry (decoding, removing the token, the date) is done
when it is listed (local_backend.sandbox.routes, `GET /__sandbox/requests`).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple

from convrisk.api_client.endpoint import Scrubber

# The admin routes (local_backend.sandbox.routes); requests to paths under PREFIX are not recorded.
PREFIX = "/__sandbox/"
REQUESTS_PATH = "/__sandbox/requests"
RESET_PATH = "/__sandbox/reset"
SNAPSHOT_PATH = "/__sandbox/snapshot"
RESTORE_PATH = "/__sandbox/restore"
FAULTS_PATH = "/__sandbox/faults"
# Requests kept; beyond, the oldest is dropped (and counted).
JOURNAL_SIZE = 10_000
# Bytes of a body kept in an entry.
BODY_CUT = 4096
# The rules a violation on an entry can name (`serve --proxy-to`; local_backend.sandbox.contract).
VIOLATION_RULES = (
    "status",
    "content-type",
    "body",
    "page",
    "error-shape",
    "request",
    "redirect",
    "size",
    "upstream",
)

Headers = Sequence[tuple[str, str]]


class Entry(NamedTuple):
    """One request as received; shown by `entry_json`."""

    seq: int
    time: float
    method: str
    path: str
    query: str
    status: int | None
    idempotency_key: str | None
    # The body's first bytes: BODY_CUT and room to find a token that crosses the cut.
    body: bytes | None
    body_length: int
    fault: str | None
    duration: float
    # How the request or its answer broke the OpenAPI document (`serve --proxy-to` only).
    violations: tuple[dict[str, str], ...] = ()
    # The id of the aimed fault rule that fired on it (local_backend.sandbox.fault_rules).
    fault_rule: int | None = None


class Journal:
    """The last `size` requests, oldest first, and how many older ones were dropped."""

    def __init__(self, token: str, size: int = JOURNAL_SIZE) -> None:
        self._entries: deque[Entry] = deque(maxlen=size)
        self._size = size
        self._seq = 0
        self.dropped = 0
        self._scrubber = Scrubber(token)
        # Room beyond the cut: a token there, in any form the scrubber finds, is removed whole.
        self._keep = BODY_CUT + 6 * len(token)

    def record(
        self,
        method: str,
        path: str,
        query: str,
        headers: Headers,
        body: bytes | None,
        status: int | None,
        fault: str | None,
        duration: float,
        violations: tuple[dict[str, str], ...] = (),
        fault_rule: int | None = None,
    ) -> None:
        """Keep one request (O(1): the body is sliced, not copied whole)."""
        key = None
        for name, value in headers:
            if name == "idempotency-key":
                key = value.strip() or None
        self._seq += 1
        if len(self._entries) == self._size:
            self.dropped += 1
        kept = None if body is None else body[: self._keep]
        self._entries.append(
            Entry(
                self._seq,
                time.time(),
                method,
                path,
                query,
                status,
                key,
                kept,
                0 if body is None else len(body),
                fault,
                duration,
                violations,
                fault_rule,
            )
        )

    def clear(self) -> int:
        """Forget every entry (the dropped count too); how many there were."""
        count = len(self._entries)
        self._entries.clear()
        self.dropped = 0
        return count

    def entries(self) -> list[Entry]:
        """The entries kept, oldest first."""
        return list(self._entries)

    def entry_json(self, entry: Entry) -> dict[str, Any]:
        """An entry as the admin route shows it: text decoded, the token nowhere."""
        scrub = self._scrubber.text
        key = entry.idempotency_key
        body: str | None = None
        if entry.body is not None and entry.body_length:
            cut = self._scrubber.bytes(entry.body)[:BODY_CUT]
            body = cut.decode("utf-8", errors="replace")
        stamp = datetime.fromtimestamp(entry.time, UTC).isoformat(timespec="milliseconds")
        return {
            "seq": entry.seq,
            "time": stamp.replace("+00:00", "Z"),
            "method": scrub(entry.method),
            "path": scrub(entry.path),
            "query": scrub(entry.query),
            "status": entry.status,
            "idempotency_key": None if key is None else scrub(key),
            "body": body,
            "body_truncated": entry.body_length > BODY_CUT,
            "fault": entry.fault,
            "fault_rule": entry.fault_rule,
            "duration_ms": round(entry.duration * 1000, 3),
            "violations": [
                {name: scrub(text) for name, text in found.items()} for found in entry.violations
            ],
        }
