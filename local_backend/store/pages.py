"""The local side's one page maker (DESIGN 6.2): a list's page (api_client.page) from SQLite
rows made records, from the JSON text SQLite builds for each row (store.json_export), or from
the ids alone, and the page as the compact JSON text `serve` sends.

Each view is read by its own query: a JSON page never builds a record, an id page reads only
the ids. A view the caller did not read first is read by the same list again when asked for.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import Any, Generic, TypeVar, cast

from convrisk.api_client.errors import ServiceError
from convrisk.api_client.page import Page, View
from convrisk.api_client.records import Record
from convrisk.api_client.records import json_text as record_json
from convrisk.local_backend.store.database import Database
from convrisk.local_backend.store.json_export import json_agrees

M = TypeVar("M", bound=Record)

Row = tuple[Any, ...]
# The checked query of a list for a select (None: the record columns), with its arguments
# (the last one is limit + 1): the resource's `list_sql` with the filters and cursors given.
Query = Callable[[str | None], tuple[str, list[Any]]]

# A page as `serve` sends it: `{"has_more":...,"data":[...]}`, compact, non-ASCII kept.
_PAGE_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


class Pages(Generic[M]):
    """The pages of one table, in each view, from its list queries."""

    def __init__(
        self,
        db: Database,
        table: str,
        json_sql: str,
        record: Callable[[Row], M],
        fetch: Callable[[sqlite3.Connection, str], M],
    ) -> None:
        self._db = db
        # A row of the record columns -> the record; the record with an id, in a connection.
        self._record = record
        self._fetch = fetch
        self._select_json = f"SELECT id, {json_sql} FROM {table}"
        self._select_text = f"SELECT {json_sql} FROM {table}"
        self._select_ids = f"SELECT id FROM {table}"
        # Whether this SQLite writes JSON as Python does; checked on first use (json_agrees).
        self._agrees: bool | None = None

    def page(self, query: Query, view: View, backwards: bool) -> Page[M]:
        """The page of a list (its `query`) read for `view`; `backwards` (ending_before): the
        query walks up from the cursor and the page is turned to newest first."""

        def more(other: View) -> Page[M]:
            return self.page(query, other, backwards)

        if view == "ids":
            sql, args = query(self._select_ids)
            size = args[-1] - 1
            rows = self._db.read(lambda conn: conn.execute(sql, args).fetchall())
            ids = [row[0] for row in rows[:size]]
            if backwards:
                ids.reverse()
            return Page(len(rows) > size, ids=ids, more=more)
        if view == "json":
            sql, args = query(self._select_json)
            found = self._json_rows(sql, args)
            if found is not None:
                texts, ids, has_more = found
                if backwards:
                    texts.reverse()
                    ids.reverse()
                return Page(has_more, texts=texts, ids=ids, more=more)
        sql, args = query(None)
        size = args[-1] - 1
        rows = self._db.read(lambda conn: conn.execute(sql, args).fetchall())
        has_more = len(rows) > size
        rows = rows[:size]
        if backwards:
            rows.reverse()
        return Page(has_more, records=[self._record(row) for row in rows], more=more)

    def text(self, query: Query, backwards: bool) -> str:
        """The page as the compact JSON text `serve` sends (non-ASCII kept): the rows' JSON
        texts as SQLite writes them, joined; a page SQLite cannot write whole goes the way of
        the JSON view, or of the records and json.dumps."""
        sql, args = query(self._select_text)
        found = self._texts(sql, args)
        if found is None:
            sql, args = query(self._select_json)
            rows = self._json_rows(sql, args)
            if rows is None:
                page = self.page(query, "records", backwards)
                return _PAGE_ENCODER.encode(page.as_dict())
            found = rows[0], rows[2]
        texts, more = found
        if backwards:
            texts.reverse()
        return f'{{"has_more":{"true" if more else "false"},"data":[{",".join(texts)}]}}'

    def _json_rows(self, sql: str, args: list[Any]) -> tuple[list[str], list[str], bool] | None:
        """The JSON texts, ids and `has_more` of a page query of (id, JSON text or NULL) rows,
        or None where the records must make it: this SQLite writes JSON otherwise, or it fails
        on a value of the page (a BLOB, a non-finite number), which the records path names.

        A row whose JSON SQLite cannot be sure to write as Python would (see `json_object_sql`)
        is read again as a record in the same snapshot.
        """
        rows = self._rows(sql, args)
        if rows is None:
            return None
        size = args[-1] - 1
        ids, texts = _split(rows[:size])
        if None in texts:
            rows = self._db.snapshot(lambda conn: self._fill(conn, sql, args, size))
            ids, texts = _split(rows[:size])
        return cast("list[str]", texts), ids, len(rows) > size

    def _texts(self, sql: str, args: list[Any]) -> tuple[list[str], bool] | None:
        """The JSON texts of a page query of (JSON text or NULL) rows and whether more rows
        follow; None where `_json_rows` must make it: this SQLite writes JSON otherwise, it
        fails on a value of the page, or a row is left to Python."""
        rows = self._rows(sql, args)
        if rows is None:
            return None
        size = args[-1] - 1
        texts = [row[0] for row in rows[:size]]
        if None in texts:
            return None
        return cast("list[str]", texts), len(rows) > size

    def _rows(self, sql: str, args: list[Any]) -> list[Any] | None:
        """The rows of a page query, or None where this SQLite writes JSON otherwise or fails
        on a value of the page."""
        if self._agrees is None:
            self._agrees = self._db.read(json_agrees)
        if not self._agrees:
            return None
        try:
            rows: list[Any] = self._db.read(lambda conn: conn.execute(sql, args).fetchall())
        except ServiceError:
            return None
        return rows

    def _fill(
        self, conn: sqlite3.Connection, sql: str, args: list[Any], size: int
    ) -> list[tuple[str, str | None]]:
        """The JSON page again, the rows SQLite left to Python made from their records: only
        the page's first `size` rows (the row after them only tells that more follow, and is
        not read as a record: one that cannot be is no error of this page)."""
        rows: list[tuple[str, str | None]] = conn.execute(sql, args).fetchall()
        for index, (object_id, text) in enumerate(rows[:size]):
            if text is None:
                rows[index] = (object_id, record_json(self._fetch(conn, object_id)))
        return rows


def _split(rows: list[tuple[str, str | None]]) -> tuple[list[str], list[str | None]]:
    """(id, text) rows as a list of ids and a list of texts."""
    if not rows:
        return [], []
    ids, texts = zip(*rows, strict=True)
    return list(ids), list(texts)
