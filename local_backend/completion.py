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
    if not path.is_file():
        return []
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=0.2)
        try:
            rows = db.execute(
                f"SELECT id FROM {table} WHERE id >= ? AND id < ? ORDER BY id DESC LIMIT ?",
                (prefix, prefix + _LAST, limit),
            ).fetchall()
        finally:
            db.close()
    except (sqlite3.Error, UnicodeError, ValueError):
        return []
    return [row[0] for row in rows if isinstance(row[0], str)]


def values_starting_with(
    path: Path, resource: str, column: str, prefix: str, limit: int = 50
) -> list[str]:
    """Up to `limit` distinct values of a filter's `column` starting with `prefix`, in order (an
    index range: `conv list --contact-id <TAB>`)."""
    table = TABLES[resource]
    if not column.isidentifier() or not path.is_file():
        return []
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=0.2)
        try:
            rows = db.execute(
                f"SELECT DISTINCT {column} FROM {table} WHERE {column} >= ? AND {column} < ?"
                f" ORDER BY {column} LIMIT ?",
                (prefix, prefix + _LAST, limit),
            ).fetchall()
        finally:
            db.close()
    except (sqlite3.Error, UnicodeError, ValueError):
        return []
    return [row[0] for row in rows if isinstance(row[0], str)]
