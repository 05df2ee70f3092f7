"""One table-backed resource: the five operations, shared by conversations and risk profiles.

What differs between the two resources (table, columns, input rules, how a row becomes a record)
is a small `ResourceSpec`; the table's rows and queries (keyset paging, ids, not-found) are here,
idempotency keys in store.idempotency and the pages of a list in store.pages. Records are
plain dicts made straight from the rows (no model).
"""

from __future__ import annotations

import builtins
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from convrisk.api_client.errors import ChangedSince, ConvriskError, NotFoundError, ServiceError
from convrisk.api_client.page import Page, View
from convrisk.api_client.params import (
    DEFAULT_LIMIT,
    ResourceName,
    check_filters,
    check_id,
    check_idempotency_key,
    check_paging,
)
from convrisk.api_client.records import (
    Change,
    Created,
    Deleted,
    Record,
    Removal,
    differs,
)
from convrisk.api_client.records import json_text as record_json
from convrisk.local_backend.store import ids
from convrisk.local_backend.store.column_values import (
    KEPT,
    UNKNOWN,
    affinity_of,
    json_text,
    literal,
)
from convrisk.local_backend.store.database import IN_CHUNK, Database, first_line
from convrisk.local_backend.store.idempotency import Checked, IdempotencyKeys
from convrisk.local_backend.store.pages import Pages, Query

M = TypeVar("M", bound=Record)
C = TypeVar("C")
U = TypeVar("U")
F = TypeVar("F")

Row = tuple[Any, ...]
Columns = dict[str, Any]


@dataclass(frozen=True)
class ResourceSpec(Generic[M]):
    """What one resource's table looks like and how its input becomes column values."""

    name: ResourceName
    noun: str
    table: str
    prefix: str
    columns: tuple[str, ...]
    # filter name -> column; a boolean filter compares the column with 1 or 0.
    filter_columns: Mapping[str, str]
    # Untrusted body -> the column values it sets (raises InvalidRequestError naming the param).
    create_values: Callable[[object], Columns]
    update_values: Callable[[object], Columns]
    # A row of `columns` -> the record (ValueError when the row cannot be one).
    to_record: Callable[[Row], M]
    # SQL giving a row's JSON text as `records.json_text(to_record(row))` would, or NULL when
    # it cannot be sure to (the row then goes through to_record); see `json_object_sql`.
    json_sql: str
    # Whether the table has an updated_at column, refreshed by every non-empty update.
    has_updated_at: bool = False
    # Columns holding JSON text: their keys are sorted for the idempotency fingerprint.
    json_columns: tuple[str, ...] = ()
    # Columns holding a boolean as 0 or 1.
    flags: tuple[str, ...] = ()
    # A plain create body -> what create_values gives and the value of each JSON column, told
    # at once, each JSON column holding its object (its text made as it is inserted); None
    # when it cannot tell (create_values then checks the body).
    quick_create: Callable[[object], tuple[Columns, dict[str, Any]] | None] | None = None


class TableResource(Generic[M, C, U, F]):
    """The five operations of one resource over one SQLite table."""

    def __init__(
        self,
        spec: ResourceSpec[M],
        db: Database,
        clock: Callable[[], float],
        id_source: ids.IdSource = ids.SYSTEM,
        stamps: Callable[[], float] | None = None,
    ) -> None:
        self._spec = spec
        self._db = db
        # `clock` is read once per write; `stamps`, when given (a sandbox clock, which moves at
        # each reading), is read once per object created or changed, so that how concurrent
        # creates are batched cannot change their times.
        self._clock = clock
        self._stamps = stamps
        self._ids = id_source
        self._select = f"SELECT {', '.join(spec.columns)} FROM {spec.table}"
        self._keys = IdempotencyKeys(spec.name, spec.table, spec.json_columns, spec.flags)
        # The table's column affinities and defaults (see _columns) and the schema version they
        # were read at: read again when the schema changes (a table altered by hand meanwhile).
        self._column_info: dict[str, tuple[str, object]] | None = None
        self._column_info_version: int | None = None
        # The last id issued here and its number (see _id_number).
        self._last_issued: tuple[str, int] | None = None
        self._pages = Pages(db, spec.table, spec.json_sql, self._record, self._fetch)
        self._cut = _object_cut(spec)

    # -- the five operations --------------------------------------------------------------------

    def list(
        self,
        filters: F | None = None,
        *,
        limit: int = DEFAULT_LIMIT,
        starting_after: str | None = None,
        ending_before: str | None = None,
        view: View = "records",
    ) -> Page[M]:
        """One page, newest first; cursors are ids (the id need not still exist). Read for
        `view` (store.pages): JSON text built by SQLite where it can be, ids alone."""
        query = self._query(filters, limit, starting_after, ending_before)
        return self._pages.page(query, view, ending_before is not None)

    def list_text(
        self,
        filters: F | None = None,
        *,
        limit: int = DEFAULT_LIMIT,
        starting_after: str | None = None,
        ending_before: str | None = None,
    ) -> str:
        """The page `list` returns as the compact JSON text `serve` sends (store.pages)."""
        query = self._query(filters, limit, starting_after, ending_before)
        return self._pages.text(query, ending_before is not None)

    def _query(
        self,
        filters: F | None,
        limit: int,
        starting_after: str | None,
        ending_before: str | None,
    ) -> Query:
        """The checked queries of one list, for any select (its arguments checked now)."""
        first = self.list_sql(
            filters, limit=limit, starting_after=starting_after, ending_before=ending_before
        )

        def query(select: str | None) -> tuple[str, builtins.list[Any]]:
            if select is None:
                return first
            return self.list_sql(
                filters,
                limit=limit,
                starting_after=starting_after,
                ending_before=ending_before,
                select=select,
            )

        return query

    def list_sql(
        self,
        filters: object = None,
        *,
        limit: object = DEFAULT_LIMIT,
        starting_after: object = None,
        ending_before: object = None,
        select: str | None = None,
    ) -> tuple[str, builtins.list[Any]]:
        """The checked query a list runs, with its arguments (the last one is limit + 1).

        Keyset paging: newest first is `id DESC`; `starting_after` keeps ids below the cursor,
        `ending_before` walks up from the cursor (`id ASC`) and the caller flips the page.
        """
        spec = self._spec
        checked = check_filters(spec.name, filters)
        size, after, before = check_paging(spec.name, limit, starting_after, ending_before)
        where: builtins.list[str] = []
        args: builtins.list[Any] = []
        for name, value in checked.items():
            where.append(f"{spec.filter_columns[name]} = ?")
            args.append(int(value) if isinstance(value, bool) else value)
        order = "DESC"
        if before is not None:
            where.append("id > ?")
            args.append(before)
            order = "ASC"
        elif after is not None:
            where.append("id < ?")
            args.append(after)
        sql = self._select if select is None else select
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += f" ORDER BY id {order} LIMIT ?"
        args.append(size + 1)
        return sql, args

    def scanned_filters(self, filters: F | None) -> tuple[str, ...]:
        """None: every filter is a query of the table."""
        return ()

    def watch_scan(self, report: Callable[[int, int], None] | None) -> None:
        """Nothing to watch: no list reads every record."""

    def read_ahead(self, on: bool) -> None:
        """Nothing to read ahead: a page of the file is read when it is asked for."""

    def create(self, params: C, *, idempotency_key: str | None = None) -> M:
        """Create an object; a repeated idempotency key replays the first answer."""
        checked = self._checked_create(params, idempotency_key)
        (result,) = self._db.write(lambda conn: self._create_batch(conn, [checked], False))
        if isinstance(result, ConvriskError):
            raise result
        return result.record

    def create_many(
        self,
        items: Sequence[tuple[C, str | None]],
        *,
        stop_on_error: bool = False,
    ) -> builtins.list[Created[M] | ConvriskError]:
        """Create several objects in one transaction; one result per item, in order (the
        object, replayed or new, or the item's error).

        Each item is checked alone: a refused item (bad input, an idempotency key used with
        other parameters) is its error and the others are still created. With `stop_on_error`
        the list ends at the first error and nothing after it is written. A failure of the
        database itself rolls the whole batch back and is raised.
        """
        checked: builtins.list[Checked | ConvriskError] = []
        for params, idempotency_key in items:
            try:
                checked.append(self._checked_create(params, idempotency_key))
            except ConvriskError as exc:
                checked.append(exc)
                if stop_on_error:
                    break

        return self._db.write(lambda conn: self._create_batch(conn, checked, stop_on_error))

    def replays(self, items: Sequence[tuple[C, str | None]]) -> builtins.list[M | None]:
        """Read-only: the stored answer each create would replay (None: it would be new, or
        be refused, which the caller's own checks tell)."""
        checked: builtins.list[Checked | None] = []
        for params, key in items:
            try:
                checked.append(self._checked_create(params, key) if key is not None else None)
            except ConvriskError:
                checked.append(None)
        keyed = [item for item in checked if item is not None]
        if not keyed:
            return [None] * len(checked)
        now = int(self._clock())
        found = iter(self._db.read(lambda conn: self._keys.lookup(conn, keyed, now)))
        return [None if item is None else cast("M | None", next(found)) for item in checked]

    def _create_batch(
        self,
        conn: sqlite3.Connection,
        checked: builtins.list[Checked | ConvriskError],
        stop_on_error: bool,
    ) -> builtins.list[Created[M] | ConvriskError]:
        """The inside of a create's transaction, in a few statements per batch: the keys looked
        up at once, the ids issued at once, the rows inserted at once.

        Each new object's JSON text is encoded once, here: it is the answer stored for its key
        and goes on with the object (`Created.text`), for the journal to write as it is.
        """
        moment = self._clock()
        now = int(moment)
        results, fresh = self._keys.plan(conn, checked, now, stop_on_error=stop_on_error)
        if fresh:
            made, texts = self._insert(conn, [(item[0], item[3]) for _, item in fresh], moment)
            as_given = texts is not None
            answers: builtins.list[tuple[str, str, str]] = []
            for index, ((position, item), obj) in enumerate(zip(fresh, made, strict=True)):
                text = texts[index] if texts is not None else None
                if text is None:
                    text = self._answer_text(obj)
                results[position] = Created(obj, False, text)
                if item[1] is not None:
                    answers.append((item[1], self._keys.stored_fingerprint(item, as_given), text))
            if answers:
                self._keys.save(conn, answers, now)
        for index, result in enumerate(results):
            if isinstance(result, int):  # the same request as an earlier item: its answer
                earlier = results[result]
                assert isinstance(earlier, Created)
                results[index] = Created(earlier.record, True)
        return cast("builtins.list[Created[M] | ConvriskError]", results)

    def _insert(
        self,
        conn: sqlite3.Connection,
        new: builtins.list[tuple[Columns, dict[str, Any]]],
        moment: float,
    ) -> tuple[builtins.list[M], builtins.list[str | None] | None]:
        """Insert new objects created at `moment`, or each at a stamp of its own when the
        resource has `stamps` (ids issued in order); the objects, and when they were made from
        the values given (not read back) the JSON text of those whose text was made here.

        Each object is the row as written (see `_written`), read back from the table only when
        the table may have stored a value otherwise than it was given. A JSON column given as
        its object (`quick_create`) is stored as its text, made with the object's (`_object_cut`).
        """
        spec = self._spec
        stamps = self._stamps
        moments = [moment] * len(new) if stamps is None else [stamps() for _ in new]
        issued = self._issue_ids(conn, [int(at * 1000) for at in moments])
        rows: builtins.list[dict[str, Any]] = []
        for object_id, (values, _), at in zip(issued, new, moments, strict=True):
            row = {"id": object_id, **values, "created_at": int(at)}
            if spec.has_updated_at:
                row["updated_at"] = int(at)
            rows.append(row)
        names = tuple(rows[0])
        if len(rows) > 1 and any(tuple(row) != names for row in rows):
            raise ServiceError(f"The {spec.noun}s of one batch do not set the same columns.")
        texts = self._object_texts(rows, names)
        conn.executemany(
            f"INSERT INTO {spec.table} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
            [tuple(row.values()) for row in rows],
        )
        written = self._written(conn, rows, [parsed for _, parsed in new])
        if written is not None:
            return written, texts
        by_id: dict[str, Row] = {}
        for start in range(0, len(issued), IN_CHUNK):
            chunk = issued[start : start + IN_CHUNK]
            marks = ", ".join("?" * len(chunk))
            for found in conn.execute(f"{self._select} WHERE id IN ({marks})", chunk):
                by_id[found[0]] = found
        return [self._record(by_id[object_id]) for object_id in issued], None

    def _object_texts(
        self, rows: builtins.list[dict[str, Any]], names: tuple[str, ...]
    ) -> builtins.list[str | None]:
        """Put each JSON column given as its object (`quick_create`: certain to encode) in its
        row as its text; the JSON text of each object whose record's text was made for it."""
        texts: builtins.list[str | None] = [None] * len(rows)
        cut = self._cut if names == self._spec.columns else None
        for index, row in enumerate(rows):
            for name in self._spec.json_columns:
                value = row.get(name)
                if type(value) is not dict:
                    continue
                if cut is None:
                    row[name] = json_text(value, name)
                    continue
                # The row is the record (its columns in order, no flag): its text holds the
                # object's, which is cut out of it instead of encoding the object twice.
                text = record_json(row)
                start = text.index(cut[0]) + len(cut[0])
                row[name] = text[start : text.rindex(cut[1]) if cut[1] else len(text) - 1]
                texts[index] = text
        return texts

    def _written(
        self,
        conn: sqlite3.Connection,
        rows: builtins.list[dict[str, Any]],
        parsed: builtins.list[dict[str, Any]],
    ) -> builtins.list[M] | None:
        """The objects these inserted rows hold, made from the values given (a column left out
        takes its declared default), without reading them back; None when the table may have
        changed a value as it stored it (a column's type affinity, a default that is an
        expression): the caller then reads the rows back.

        Values were checked on the way in, objects' depth included, so they need no walk here.
        """
        columns = self._columns(conn)
        if columns is None:
            return None
        spec = self._spec
        # Each column of the record: its name, whether the rows set it, the types its affinity
        # keeps as they are, its default, and what a record makes of it.
        plan: builtins.list[tuple[str, bool, frozenset[type], object, str]] = []
        for name in spec.columns:
            affinity, default = columns.get(name, ("?", UNKNOWN))
            given = name in rows[0]
            if not given and default is UNKNOWN:
                return None
            kind = "object" if name in spec.json_columns else "flag" if name in spec.flags else ""
            plan.append((name, given, KEPT.get(affinity, frozenset()), default, kind))
        if tuple(rows[0]) == spec.columns:
            # Every column given, in the record's order (the rows of a batch set the same
            # columns): checked a column at a time, and each row becomes its record.
            for name, _, kept, _, kind in plan:
                if not {type(row[name]) for row in rows} <= kept:
                    return None
                if kind == "object" and not all(name in objects for objects in parsed):
                    return None
            for row, objects in zip(rows, parsed, strict=True):
                for name in spec.json_columns:
                    row[name] = objects[name]
                for name in spec.flags:
                    row[name] = bool(row[name])
            return cast("builtins.list[M]", rows)
        made: builtins.list[M] = []
        for row, objects in zip(rows, parsed, strict=True):
            record: dict[str, Any] = {}
            for name, given, kept, default, kind in plan:
                value = default
                if given:
                    value = row[name]
                    if type(value) not in kept:
                        return None
                if kind == "object":
                    if name not in objects:
                        return None
                    value = objects[name]
                elif kind == "flag":
                    value = bool(value)
                record[name] = value
            made.append(cast(M, record))
        return made

    def _columns(self, conn: sqlite3.Connection) -> dict[str, tuple[str, object]] | None:
        """Each column's type affinity (`affinity_of`) and declared default value (`UNKNOWN`
        when it is not a plain literal), read again only when the schema changed; None when a
        trigger may change a row as it is inserted (the rows are then read back)."""
        version = conn.execute("PRAGMA schema_version").fetchone()[0]
        if version != self._column_info_version:
            table = self._spec.table
            triggered = conn.execute(
                "SELECT 1 FROM sqlite_master"
                " WHERE type = 'trigger' AND tbl_name = ? COLLATE NOCASE",
                (table,),
            ).fetchone()
            info: dict[str, tuple[str, object]] | None = None
            if triggered is None:
                info = {}
                for _, name, declared, _, default, _ in conn.execute(f"PRAGMA table_info({table})"):
                    affinity = affinity_of(declared)
                    info[name] = (affinity, literal(default, affinity))
            self._column_info = info
            self._column_info_version = version
        return self._column_info

    def _checked_create(self, params: object, idempotency_key: str | None) -> Checked:
        """The column values of a create, its checked key, "" for the fingerprint of its
        parameters (made only where it is compared or stored: see IdempotencyKeys) and its JSON
        columns parsed."""
        quick = self._spec.quick_create
        told = quick(params) if quick is not None else None
        if told is None:
            values = self._spec.create_values(params)
            parsed = self._keys.parsed(values)
        else:
            values, parsed = told
        return values, check_idempotency_key(idempotency_key), "", parsed

    def retrieve(self, id: str) -> M:
        """The object with this id, or NotFoundError."""
        object_id = self._check_id(id)
        return self._db.read(lambda conn: self._fetch(conn, object_id))

    def update(self, id: str, params: U) -> M:
        """Change the supplied attributes; an empty params returns the object unchanged."""
        spec = self._spec
        # The body first, as the remote client checks it before it sends anything: a bad body
        # is the same error on both backends, whatever the id (DESIGN 5.2, docs/design/records.md).
        values = spec.update_values(params)
        object_id = self._check_id(id)
        if not values:
            return self.retrieve(object_id)

        def work(conn: sqlite3.Connection) -> M:
            if (
                spec.has_updated_at
                and self._stamps is not None
                and not self._exists(conn, object_id)
            ):
                # The sandbox clock steps per record changed: none for a record not there.
                raise self._not_found(object_id)
            if self._set(conn, object_id, values) == 0:
                raise self._not_found(object_id)
            return self._fetch(conn, object_id)

        return self._db.write(work)

    def change(self, id: str, params: U, *, expect: Mapping[str, Any] | None = None) -> Change[M]:
        """Update, with the record before it read in the write's own transaction; with
        `expect`, compared there too (ChangedSince, nothing written)."""
        values = self._spec.update_values(params)  # the body first, as `update`
        object_id = self._check_id(id)

        def work(conn: sqlite3.Connection) -> Change[M]:
            before = self._fetch(conn, object_id)
            self._compare(object_id, before, expect)
            if not values:
                return Change(before, before)
            self._set(conn, object_id, values)
            return Change(before, self._fetch(conn, object_id))

        return self._db.write(work)

    def _set(self, conn: sqlite3.Connection, object_id: str, values: Mapping[str, Any]) -> int:
        """The UPDATE of one record's columns (its updated_at moved too); the rows it changed."""
        changes = dict(values)
        if self._spec.has_updated_at:
            changes["updated_at"] = int((self._stamps or self._clock)())
        assignments = ", ".join(f"{name} = ?" for name in changes)
        cursor = conn.execute(
            f"UPDATE {self._spec.table} SET {assignments} WHERE id = ?",
            (*changes.values(), object_id),
        )
        return cursor.rowcount

    def remove(self, id: str, *, expect: Mapping[str, Any] | None = None) -> Removal[M]:
        """Delete, with the record as it was read in the delete's own transaction; with
        `expect`, compared there too (ChangedSince, nothing removed)."""
        object_id = self._check_id(id)

        def work(conn: sqlite3.Connection) -> Removal[M]:
            before = self._fetch(conn, object_id)
            self._compare(object_id, before, expect)
            conn.execute(f"DELETE FROM {self._spec.table} WHERE id = ?", (object_id,))
            return Removal(before, Deleted(id=object_id, deleted=True))

        return self._db.write(work)

    @staticmethod
    def _compare(object_id: str, current: M, expect: Mapping[str, Any] | None) -> None:
        """Raise ChangedSince when `current` does not hold the values `expect` names."""
        if expect is not None and (fields := differs(current, expect)):
            raise ChangedSince(object_id, fields, dict(current))

    def delete(self, id: str) -> Deleted:
        """Remove the object for good; NotFoundError if there is none."""
        object_id = self._check_id(id)

        def work(conn: sqlite3.Connection) -> Deleted:
            cursor = conn.execute(f"DELETE FROM {self._spec.table} WHERE id = ?", (object_id,))
            if cursor.rowcount == 0:
                raise self._not_found(object_id)
            return Deleted(id=object_id, deleted=True)

        return self._db.write(work)

    # -- helpers --------------------------------------------------------------------------------

    def _record(self, row: Row) -> M:
        try:
            return self._spec.to_record(row)
        except (ValueError, RecursionError) as exc:
            # Bad JSON text in a column is a ValueError too.
            raise self._unreadable(row[0], exc) from exc

    def _answer_text(self, obj: M) -> str:
        """The object's JSON text (`records.json_text`): the answer stored for its key."""
        try:
            return record_json(obj)
        except (ValueError, TypeError, RecursionError) as exc:
            raise self._unreadable(obj["id"], exc) from exc

    def _unreadable(self, object_id: object, exc: BaseException) -> ServiceError:
        return ServiceError(
            f"The stored {self._spec.noun} {object_id} cannot be read back: {first_line(exc)}. "
            f"Delete it or repair the file {self._db.path}."
        )

    def _fetch(self, conn: sqlite3.Connection, object_id: str) -> M:
        row = conn.execute(f"{self._select} WHERE id = ?", (object_id,)).fetchone()
        if row is None:
            raise self._not_found(object_id)
        return self._record(row)

    def _exists(self, conn: sqlite3.Connection, object_id: str) -> bool:
        table = self._spec.table
        return (
            conn.execute(f"SELECT 1 FROM {table} WHERE id = ?", (object_id,)).fetchone() is not None
        )

    def _not_found(self, object_id: str) -> NotFoundError:
        return NotFoundError(f"No such {self._spec.noun}: {object_id}", param="id")

    def _check_id(self, object_id: object) -> str:
        """An id of the form this table's ids have (else a usage error, before the database)."""
        return check_id(self._spec.name, object_id)

    def _issue_ids(
        self, conn: sqlite3.Connection, millis: builtins.list[int]
    ) -> builtins.list[str]:
        """Fresh ids for these creation times, each above every id this table ever issued."""
        spec = self._spec
        # The watermark covers deleted objects; max(id) covers rows written before it existed.
        (watermark, largest) = conn.execute(
            f"SELECT (SELECT last_id FROM id_watermarks WHERE resource = ?),"
            f" (SELECT max(id) FROM {spec.table})",
            (spec.name,),
        ).fetchone()
        numbers = [self._id_number(value) for value in (watermark, largest) if value]
        last = max((number for number in numbers if number is not None), default=None)
        prefix, encode = spec.prefix, ids.encode
        fresh = self._ids.next_numbers(millis, last)
        issued = [prefix + encode(number) for number in fresh]
        if fresh:
            self._last_issued = (issued[-1], fresh[-1])
        conn.execute(
            "INSERT INTO id_watermarks (resource, last_id) VALUES (?, ?)"
            " ON CONFLICT (resource) DO UPDATE SET last_id = excluded.last_id",
            (spec.name, issued[-1]),
        )
        return issued

    def _id_number(self, object_id: str) -> int | None:
        """The number of an id of this table (None: not of its form); the last one issued here,
        which the watermark and the largest id usually are, without decoding it again."""
        last = self._last_issued
        if last is not None and last[0] == object_id:
            return last[1]
        return ids.parse(self._spec.prefix, object_id)


def _object_cut(spec: ResourceSpec[Any]) -> tuple[str, str] | None:
    """Where a record's JSON column lies in the record's text, when the text of a record can
    be made before the row is stored and the column's text cut out of it: one JSON column, no
    flag (a row holds 0 or 1 where its record holds false or true), the other columns' values
    scalars. Then the column's value starts after the first `"name":` (no string holds an
    unescaped quote, and no object comes before it) and ends at the last `,"next":` (none
    after it) or at the record's closing brace.
    """
    if len(spec.json_columns) != 1 or spec.flags:
        return None
    (name,) = spec.json_columns
    after = spec.columns[spec.columns.index(name) + 1 :]
    return f'"{name}":', f',"{after[0]}":' if after else ""
