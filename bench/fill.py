"""Fills for benchmarks and tests: many realistic rows written straight into a database file, in
a few large transactions, with valid ids whose time part is each row's `created_at`."""

from __future__ import annotations

import itertools
import sqlite3
import time
from collections.abc import Iterable
from typing import Any, Literal

from convrisk.local_backend.backend import LocalBackend
from convrisk.local_backend.store import conversations, ids, risk_profiles

Resource = Literal["conversations", "risk_profiles"]
_MODULES = {"conversations": conversations, "risk_profiles": risk_profiles}
DAY = 86_400


def fill(
    backend: LocalBackend,
    resource: Resource,
    n: int,
    *,
    start: int | None = None,
    end: int | None = None,
    seed: int = 0,
    chunk: int = 50_000,
) -> int:
    """Add `n` realistic rows of `resource` created evenly between `start` and `end` (by
    default the year up to now); the number added. See each module's `sample_rows` for the mix.
    """
    end = int(time.time()) if end is None else end
    start = end - 365 * DAY if start is None else start
    module = _MODULES[resource]
    rows = module.sample_rows(n, start=start, end=end, seed=seed)
    return insert_rows(backend, resource, rows, chunk=chunk)


def insert_rows(
    backend: LocalBackend, resource: Resource, rows: Iterable[dict[str, Any]], *, chunk: int
) -> int:
    """Insert rows (column values with `created_at`, without id; oldest first), each with a fresh
    id above the largest of the table, strictly increasing in the order given.

    The id watermark is left alone: a create reads the largest id of the table too.
    """
    spec = _MODULES[resource].SPEC
    backend.conversations.list(limit=1)  # the file made and migrated by the backend
    total = 0
    conn = sqlite3.connect(backend.path, timeout=30, isolation_level=None)
    try:
        batches = iter(rows)
        while batch := list(itertools.islice(batches, chunk)):
            names = ("id", *batch[0])
            sql = (
                f"INSERT INTO {spec.table} ({', '.join(names)}) "
                f"VALUES ({', '.join('?' for _ in names)})"
            )
            conn.execute("BEGIN IMMEDIATE")
            (largest,) = conn.execute(f"SELECT max(id) FROM {spec.table}").fetchone()
            last = ids.parse(spec.prefix, largest) if largest else None
            values = []
            for row in batch:
                last = ids.next_number(int(row["created_at"]) * 1000, last)
                values.append((spec.prefix + ids.encode(last), *row.values()))
            conn.executemany(sql, values)
            conn.execute("COMMIT")
            total += len(batch)
    finally:
        conn.close()
    return total
