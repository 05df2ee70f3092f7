"""Fixtures for the local backend tests: a real SQLite file per test and a clock we control."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from convrisk.local_backend.backend import LocalBackend

START = 1_700_000_000.0


class FakeClock:
    """A clock that stands still until a test moves it."""

    def __init__(self, now: float = START) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        """Move the time forward."""
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    """A stopped clock at START."""
    return FakeClock()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """Where the test's database lives (not created yet, nor its folder)."""
    return tmp_path / "data" / "convrisk.db"


@pytest.fixture
def backend(db_path: Path, clock: FakeClock) -> Iterator[LocalBackend]:
    """A LocalBackend on a fresh file, closed after the test."""
    store = LocalBackend(db_path, clock=clock)
    yield store
    store.close()


def dump(path: Path) -> list[str]:
    """Every row and every schema object of the file, as SQL, read by a separate connection."""
    conn = sqlite3.connect(path)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def risk_body(**overrides: object) -> Any:
    """A valid risk-profile create body, with some fields replaced."""
    body: dict[str, object] = {
        "customer_id": "cus_1",
        "profile_type": "moderate",
        "score": 50,
        "details": {"horizon_years": 10},
    }
    body.update(overrides)
    return body


def rebuild_with_defaults(path: Path, table: str, defaults: dict[str, str]) -> None:
    """Rebuild `table` by hand, as someone with the sqlite3 shell might: the schema it has, each
    column of `defaults` given that DEFAULT (SQL text), its rows copied across."""
    with sqlite3.connect(path) as conn:
        (schema,) = conn.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
        ).fetchone()
        for column, default in defaults.items():
            # A column of the schema is a line of its own, its definition up to the comma.
            schema, found = re.subn(
                rf"^(\s*{column}\b[^,\n]*)", rf"\1 DEFAULT {default}", schema, count=1, flags=re.M
            )
            assert found == 1, f"{table}.{column} is not a line of {schema}"
        columns = ", ".join(row[1] for row in conn.execute(f"PRAGMA table_info({table})"))
        rebuilt = schema.replace(f"CREATE TABLE {table}", "CREATE TABLE rebuilt", 1)
        conn.executescript(
            f"""
            {rebuilt};
            INSERT INTO rebuilt ({columns}) SELECT {columns} FROM {table};
            DROP TABLE {table};
            ALTER TABLE rebuilt RENAME TO {table};
            """
        )
    conn.close()
