"""Fixtures for the local backend tests: a real SQLite file per test and a clock we control."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator, Mapping
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


def rebuild_conversations(path: Path, defaults: Mapping[str, str], *, keep_rows: bool) -> None:
    """Rebuild the conversations table by hand, as the schema has it now (whatever fields the
    description holds) but with these columns' declared defaults (SQL text); its rows kept
    or not."""
    with sqlite3.connect(path) as conn:
        (sql,) = conn.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'conversations'"
        ).fetchone()
        names = [row[1] for row in conn.execute("PRAGMA table_info(conversations)")]
        sql = sql.replace("CREATE TABLE conversations", "CREATE TABLE c2", 1)
        for column, default in defaults.items():
            sql, found = re.subn(
                rf"^(\s*{column}\b[^,\n]*)", rf"\1 DEFAULT {default}", sql, count=1, flags=re.M
            )
            assert found, column
        columns = ", ".join(names)
        copy = f"INSERT INTO c2 ({columns}) SELECT {columns} FROM conversations;"
        copy = copy if keep_rows else ""
        conn.executescript(
            f"{sql};\n{copy}\nDROP TABLE conversations;\nALTER TABLE c2 RENAME TO conversations;"
        )
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
