"""Ids and filter values for shell completion: a read-only look at the database file with
plain sqlite3.

Nothing else of the backend is imported (no schema check, no migration, no models), so a
completion answers in the time Python takes to start; a file that cannot be read gives none.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

TABLES = {"conversations": "conversations", "risk_profiles": "risk_profiles"}
# Past the last character: every id starting with a prefix sorts below prefix + this.
_LAST = "\U0010ffff"


def ids_starting_with(path: Path, resource: str, prefix: str, limit: int = 50) -> list[str]:
    """Up to `limit` ids of `resource` starting with `prefix`, newest first (an index range)."""
    table = TABLES[resource]
    sql = f"SELECT id FROM {table} WHERE id >= ? AND id < ? ORDER BY id DESC LIMIT ?"
    return _texts(path, sql, prefix, limit)


def values_starting_with(
    path: Path, resource: str, column: str, prefix: str, limit: int = 50
) -> list[str]:
    """Up to `limit` distinct values of a filter's `column` starting with `prefix`, in order (an
    index range: `conv list --contact-id <TAB>`)."""
    table = TABLES[resource]
    if not column.isidentifier():
        return []
    sql = (
        f"SELECT DISTINCT {column} FROM {table} WHERE {column} >= ? AND {column} < ?"
        f" ORDER BY {column} LIMIT ?"
    )
    return _texts(path, sql, prefix, limit)


def _texts(path: Path, sql: str, prefix: str, limit: int) -> list[str]:
    """The text values a prefix range query finds, read-only; none when the file cannot be read."""
    if not path.is_file():
        return []
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=0.2)
        try:
            rows = db.execute(sql, (prefix, prefix + _LAST, limit)).fetchall()
        finally:
            db.close()
    except (sqlite3.Error, UnicodeError, ValueError):
        return []
    return [row[0] for row in rows if isinstance(row[0], str)]
