"""One table-backed resource: the five operations, shared by conversations and risk profiles.

What differs between the two resources (table, columns, input rules, how a row becomes a record)
is a small `ResourceSpec`; everything else (keyset paging, ids, idempotency, not-found) is here.

Records are plain dicts made straight from the rows (no model). `list_json` is the export path:
SQLite builds each row's JSON text (`json_object`), byte for byte what `records.json_text` gives
for the record `list` returns; a row SQLite cannot render exactly so goes the general way.
"""

from __future__ import annotations

import builtins
import json
import math
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from convrisk.api_client.errors import (
    ConvriskError,
    InvalidRequestError,
    NotFoundError,
    ServiceError,
)
from convrisk.api_client.params import (
    DEFAULT_LIMIT,
    MAX_DETAILS_DEPTH,
    ResourceName,
    check_filters,
    check_idempotency_key,
    check_paging,
    check_text,
    exceeds_depth,
)
from convrisk.api_client.records import Deleted, JsonPage, Page, Record, check_record, load_json
from convrisk.api_client.records import json_text as record_json

from . import ids
from .database import Database

M = TypeVar("M", bound=Record)
C = TypeVar("C")
U = TypeVar("U")
F = TypeVar("F")

Row = tuple[Any, ...]
Columns = dict[str, Any]

IDEMPOTENCY_TTL_SECONDS = 24 * 60 * 60
# Values bound in one `IN (...)` (SQLite allows 32766 parameters since 3.32; older ones 999).
_IN_CHUNK = 500
_INT64 = (-(2**63), 2**63 - 1)
# Built once: json.dumps with options builds an encoder on every call (a few per create).
_ANSWER_ENCODER = json.JSONEncoder(separators=(",", ":"))
_SORTED_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"))
_SORTED_TEXT_ENCODER = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"))
_INPUT_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


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


class TableResource(Generic[M, C, U, F]):
    """The five operations of one resource over one SQLite table."""

    def __init__(self, spec: ResourceSpec[M], db: Database, clock: Callable[[], float]) -> None:
        self._spec = spec
        self._db = db
        self._clock = clock
        self._select = f"SELECT {', '.join(spec.columns)} FROM {spec.table}"
        self._select_json = f"SELECT id, {spec.json_sql} FROM {spec.table}"
        # Whether this SQLite writes JSON as Python does; checked on first use (json_agrees).
        self._sqlite_json_ok: bool | None = None

    # -- the five operations --------------------------------------------------------------------

    def list(
        self,
        filters: F | None = None,
        *,
        limit: int = DEFAULT_LIMIT,
        starting_after: str | None = None,
        ending_before: str | None = None,
    ) -> Page[M]:
        """One page, newest first; cursors are ids (the id need not still exist)."""
        sql, args = self.list_sql(
            filters, limit=limit, starting_after=starting_after, ending_before=ending_before
        )
        size = args[-1] - 1
        rows = self._db.read(lambda conn: conn.execute(sql, args).fetchall())
        has_more = len(rows) > size
        rows = rows[:size]
        if ending_before is not None:
            rows.reverse()
        return {"has_more": has_more, "data": [self._record(row) for row in rows]}

    def list_json(
        self,
        filters: F | None = None,
        *,
        limit: int = DEFAULT_LIMIT,
        starting_after: str | None = None,
    ) -> JsonPage:
        """The page `list` returns, each record as its `records.json_text()`, built by SQLite.

        A row whose JSON SQLite cannot be sure to write as Python would (see `json_object_sql`)
        is read again as a record in the same snapshot; a page SQLite fails on (a BLOB, a
        non-finite number) goes through `list`, which says what is wrong with it.
        """
        sql, args = self.list_sql(
            filters, limit=limit, starting_after=starting_after, select=self._select_json
        )
        if not self._fast_json():
            return self._dumped(filters, limit, starting_after)
        size = args[-1] - 1
        try:
            rows = self._db.read(lambda conn: conn.execute(sql, args).fetchall())
        except ServiceError:
            # A value SQLite cannot write as JSON (a BLOB, a non-finite number), or a fault:
            # the general path reads the page again and says what is wrong.
            return self._dumped(filters, limit, starting_after)
        ids, texts = _split(rows[:size])
        if None in texts:
            rows = self._db.snapshot(lambda conn: self._fill_json(conn, sql, args))
            ids, texts = _split(rows[:size])
        return {"has_more": len(rows) > size, "data": cast("list[str]", texts), "ids": ids}

    def _dumped(self, filters: F | None, limit: int, starting_after: str | None) -> JsonPage:
        """The JSON page from `list`: each record dumped by Python."""
        page = self.list(filters, limit=limit, starting_after=starting_after)
        records = page["data"]
        return {
            "has_more": page["has_more"],
            "data": [record_json(record) for record in records],
            "ids": [record["id"] for record in records],
        }

    def _fill_json(
        self, conn: sqlite3.Connection, sql: str, args: builtins.list[Any]
    ) -> builtins.list[tuple[str, str | None]]:
        """The JSON page again, the rows SQLite left to Python made from their records."""
        rows: builtins.list[tuple[str, str | None]] = conn.execute(sql, args).fetchall()
        for index, (object_id, text) in enumerate(rows):
            if text is None:
                rows[index] = (object_id, record_json(self._fetch(conn, object_id)))
        return rows

    def _fast_json(self) -> bool:
        if self._sqlite_json_ok is None:
            self._sqlite_json_ok = self._db.read(json_agrees)
        return self._sqlite_json_ok

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

    def create(self, params: C, *, idempotency_key: str | None = None) -> M:
        """Create an object; a repeated idempotency key replays the first answer."""
        values, key, fingerprint = self._checked_create(params, idempotency_key)

        def work(conn: sqlite3.Connection) -> M:
            moment = self._clock()
            if key is not None:
                self._purge_keys(conn, int(moment))
            return self._insert(conn, values, key, fingerprint, moment)

        return self._db.write(work)

    def create_many(
        self,
        items: Sequence[tuple[C, str | None]],
        *,
        stop_on_error: bool = False,
    ) -> builtins.list[M | ConvriskError]:
        """Create several objects in one transaction; one result per item, in order.

        Each item is checked alone: a refused item (bad input, an idempotency key used with
        other parameters) is its error and the others are still created. With `stop_on_error`
        the list ends at the first error and nothing after it is written. A failure of the
        database itself rolls the whole batch back and is raised.
        """
        checked: builtins.list[tuple[Columns, str | None, str] | ConvriskError] = []
        for params, idempotency_key in items:
            try:
                checked.append(self._checked_create(params, idempotency_key))
            except ConvriskError as exc:
                checked.append(exc)
                if stop_on_error:
                    break

        return self._db.write(lambda conn: self._create_batch(conn, checked, stop_on_error))

    def _create_batch(
        self,
        conn: sqlite3.Connection,
        checked: builtins.list[tuple[Columns, str | None, str] | ConvriskError],
        stop_on_error: bool,
    ) -> builtins.list[M | ConvriskError]:
        """The inside of create_many's transaction, in a few statements per batch: the keys
        looked up at once, the ids issued at once, the rows inserted and read back at once."""
        moment = self._clock()
        self._purge_keys(conn, int(moment))
        stored = self._stored_answers(
            conn, [item[1] for item in checked if not isinstance(item, ConvriskError)]
        )
        results: builtins.list[M | ConvriskError | int] = []
        fresh: builtins.list[tuple[int, Columns, str | None, str]] = []
        first_of_key: dict[str, tuple[int, str]] = {}  # a key new in this batch: its item
        for item in checked:
            position = len(results)
            if isinstance(item, ConvriskError):
                results.append(item)
                if stop_on_error:
                    break
                continue
            values, key, fingerprint = item
            if key is not None and key in stored:
                try:
                    results.append(self._replay(key, fingerprint, stored[key]))
                except InvalidRequestError as exc:
                    results.append(exc)
                    if stop_on_error:
                        break
                continue
            if key is not None and key in first_of_key:
                earlier, earlier_fingerprint = first_of_key[key]
                if earlier_fingerprint != fingerprint:
                    results.append(self._key_reused(key))
                    if stop_on_error:
                        break
                    continue
                results.append(earlier)  # the same request twice: the first one's answer
                continue
            if key is not None:
                first_of_key[key] = (position, fingerprint)
            fresh.append((position, values, key, fingerprint))
            results.append(position)
        if fresh:
            made = self._insert_rows(conn, fresh, moment)
            for (position, _, _, _), obj in zip(fresh, made, strict=True):
                results[position] = obj
        out: builtins.list[M | ConvriskError] = []
        for result in results:
            if isinstance(result, int):
                answer = results[result]
                assert not isinstance(answer, int)
                out.append(answer)
            else:
                out.append(result)
        return out

    def _stored_answers(
        self, conn: sqlite3.Connection, keys: builtins.list[str | None]
    ) -> dict[str, Row]:
        """The stored (resource, fingerprint, response) of each of these keys that has one."""
        wanted = sorted({key for key in keys if key is not None})
        stored: dict[str, Row] = {}
        for start in range(0, len(wanted), _IN_CHUNK):
            chunk = wanted[start : start + _IN_CHUNK]
            marks = ", ".join("?" for _ in chunk)
            for key, *answer in conn.execute(
                "SELECT key, resource, fingerprint, response FROM idempotency_keys"
                f" WHERE key IN ({marks})",
                chunk,
            ):
                stored[key] = tuple(answer)
        return stored

    def _insert_rows(
        self,
        conn: sqlite3.Connection,
        fresh: builtins.list[tuple[int, Columns, str | None, str]],
        moment: float,
    ) -> builtins.list[M]:
        """Insert new objects (ids issued in order), store their keys' answers; the objects."""
        spec = self._spec
        now = int(moment)
        issued = self._issue_ids(conn, [int(moment * 1000)] * len(fresh))
        rows: builtins.list[dict[str, Any]] = []
        for object_id, (_, values, _, _) in zip(issued, fresh, strict=True):
            row = {"id": object_id, **values, "created_at": now}
            if spec.has_updated_at:
                row["updated_at"] = now
            rows.append(row)
        names = tuple(rows[0])
        if any(tuple(row) != names for row in rows):
            raise ServiceError(f"The {spec.noun}s of one batch do not set the same columns.")
        marks = ", ".join("?" * len(names))
        conn.executemany(
            f"INSERT INTO {spec.table} ({', '.join(names)}) VALUES ({marks})",
            [tuple(row.values()) for row in rows],
        )
        by_id: dict[str, Row] = {}
        for start in range(0, len(issued), _IN_CHUNK):
            chunk = issued[start : start + _IN_CHUNK]
            marks = ", ".join("?" for _ in chunk)
            for found in conn.execute(f"{self._select} WHERE id IN ({marks})", chunk):
                by_id[found[0]] = found
        made: builtins.list[M] = []
        answers: builtins.list[tuple[str, str, str, str, int]] = []
        for object_id, (_, _, key, fingerprint) in zip(issued, fresh, strict=True):
            obj = self._record(by_id[object_id])
            made.append(obj)
            if key is not None:
                answers.append((key, spec.name, fingerprint, self._response(object_id, obj), now))
        if answers:
            conn.executemany(
                "INSERT INTO idempotency_keys"
                " (key, resource, fingerprint, response, created_at) VALUES (?, ?, ?, ?, ?)",
                answers,
            )
        return made

    def _checked_create(
        self, params: object, idempotency_key: str | None
    ) -> tuple[Columns, str | None, str]:
        """The column values of a create, its checked key and the fingerprint of its parameters."""
        values = self._spec.create_values(params)
        key = check_idempotency_key(idempotency_key)
        fingerprint = self._fingerprint(values) if key is not None else ""
        return values, key, fingerprint

    @staticmethod
    def _purge_keys(conn: sqlite3.Connection, now: int) -> None:
        conn.execute(
            "DELETE FROM idempotency_keys WHERE created_at <= ?", (now - IDEMPOTENCY_TTL_SECONDS,)
        )

    def _insert(
        self,
        conn: sqlite3.Connection,
        values: Columns,
        key: str | None,
        fingerprint: str,
        moment: float,
    ) -> M:
        """Insert one object (or replay the answer stored for its key), inside a transaction."""
        spec = self._spec
        now = int(moment)
        if key is not None:
            stored = conn.execute(
                "SELECT resource, fingerprint, response FROM idempotency_keys WHERE key = ?",
                (key,),
            ).fetchone()
            if stored is not None:
                return self._replay(key, fingerprint, stored)
        object_id = self._issue_ids(conn, [int(moment * 1000)])[0]
        row = {"id": object_id, **values, "created_at": now}
        if spec.has_updated_at:
            row["updated_at"] = now
        names = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        conn.execute(f"INSERT INTO {spec.table} ({names}) VALUES ({marks})", tuple(row.values()))
        obj = self._fetch(conn, object_id)
        if key is not None:
            conn.execute(
                "INSERT INTO idempotency_keys"
                " (key, resource, fingerprint, response, created_at) VALUES (?, ?, ?, ?, ?)",
                (key, spec.name, fingerprint, self._response(object_id, obj), now),
            )
        return obj

    def retrieve(self, id: str) -> M:
        """The object with this id, or NotFoundError."""
        object_id = self._check_id(id)
        return self._db.read(lambda conn: self._fetch(conn, object_id))

    def update(self, id: str, params: U) -> M:
        """Change the supplied attributes; an empty params returns the object unchanged."""
        spec = self._spec
        object_id = self._check_id(id)
        values = spec.update_values(params)
        if not values:
            return self.retrieve(object_id)

        def work(conn: sqlite3.Connection) -> M:
            changes = dict(values)
            if spec.has_updated_at:
                changes["updated_at"] = int(self._clock())
            assignments = ", ".join(f"{name} = ?" for name in changes)
            cursor = conn.execute(
                f"UPDATE {spec.table} SET {assignments} WHERE id = ?",
                (*changes.values(), object_id),
            )
            if cursor.rowcount == 0:
                raise self._not_found(object_id)
            return self._fetch(conn, object_id)

        return self._db.write(work)

    def delete(self, id: str) -> Deleted:
        """Remove the object for good; NotFoundError if there is none."""
        object_id = self._check_id(id)

        def work(conn: sqlite3.Connection) -> Deleted:
            cursor = conn.execute(f"DELETE FROM {self._spec.table} WHERE id = ?", (object_id,))
            if cursor.rowcount == 0:
                raise self._not_found(object_id)
            return Deleted(id=object_id, deleted=True)

        return self._db.write(work)

    # -- bulk fill (benchmarks) -----------------------------------------------------------------

    def bulk_insert(self, rows: Iterable[Columns], *, chunk: int = 50_000) -> int:
        """Insert rows (column values with `created_at`, without id) in few large transactions.

        Each row gets a fresh id whose time part is its `created_at`, strictly increasing in the
        order given, so give rows oldest first. Returns the number of rows inserted.
        """
        spec = self._spec
        total = 0
        batch: builtins.list[Columns] = []

        def flush(conn: sqlite3.Connection) -> None:
            issued = self._issue_ids(conn, [int(row["created_at"]) * 1000 for row in batch])
            names = ("id", *batch[0])
            sql = (
                f"INSERT INTO {spec.table} ({', '.join(names)}) "
                f"VALUES ({', '.join('?' for _ in names)})"
            )
            pairs = zip(issued, batch, strict=True)
            conn.executemany(sql, ((object_id, *row.values()) for object_id, row in pairs))

        for row in rows:
            batch.append(row)
            if len(batch) >= chunk:
                self._db.write(flush)
                total += len(batch)
                batch = []
        if batch:
            self._db.write(flush)
            total += len(batch)
        return total

    # -- helpers --------------------------------------------------------------------------------

    def _record(self, row: Row) -> M:
        try:
            return self._spec.to_record(row)
        except (ValueError, RecursionError) as exc:
            # Bad JSON text in a column is a ValueError too.
            raise self._unreadable(row[0], exc) from exc

    def _response(self, object_id: str, data: Mapping[str, Any]) -> str:
        """The answer stored for an idempotency key: the object's JSON."""
        try:
            return _ANSWER_ENCODER.encode(data)
        except (ValueError, TypeError, RecursionError) as exc:
            raise self._unreadable(object_id, exc) from exc

    def _key_reused(self, key: str) -> InvalidRequestError:
        return InvalidRequestError(
            f"The idempotency key {key!r} was already used with a different request in the "
            "last 24 hours; use a new key for a new request.",
            param="idempotency_key",
        )

    def _unreadable(self, object_id: object, exc: BaseException) -> ServiceError:
        return ServiceError(
            f"The stored {self._spec.noun} {object_id} cannot be read back: {_first_line(exc)}. "
            f"Delete it or repair the file {self._db.path}."
        )

    def _fetch(self, conn: sqlite3.Connection, object_id: str) -> M:
        row = conn.execute(f"{self._select} WHERE id = ?", (object_id,)).fetchone()
        if row is None:
            raise self._not_found(object_id)
        return self._record(row)

    def _not_found(self, object_id: str) -> NotFoundError:
        return NotFoundError(f"No such {self._spec.noun}: {object_id}", param="id")

    def _check_id(self, object_id: object) -> str:
        if not isinstance(object_id, str):
            raise InvalidRequestError(f"The {self._spec.noun} id must be a string.", param="id")
        check_text(object_id, "id")
        if not object_id.startswith(self._spec.prefix):
            # Cannot be one of ours, so there is no such object: no need to ask the database.
            raise self._not_found(object_id)
        return object_id

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
        numbers = [ids.parse(spec.prefix, value) for value in (watermark, largest) if value]
        last = max((number for number in numbers if number is not None), default=None)
        issued: builtins.list[str] = []
        for ms in millis:
            last = ids.next_number(ms, last)
            issued.append(spec.prefix + ids.encode(last))
        conn.execute(
            "INSERT INTO id_watermarks (resource, last_id) VALUES (?, ?)"
            " ON CONFLICT (resource) DO UPDATE SET last_id = excluded.last_id",
            (spec.name, issued[-1]),
        )
        return issued

    def _replay(self, key: str, fingerprint: str, stored: Row) -> M:
        resource, stored_fingerprint, response = stored
        if resource != self._spec.name or stored_fingerprint != fingerprint:
            raise self._key_reused(key)
        try:
            replayed: M = check_record(json.loads(response))  # type: ignore[assignment]
        except (ValueError, RecursionError) as exc:
            raise ServiceError(
                f"The answer stored for the idempotency key {key!r} cannot be read back: "
                f"{_first_line(exc)}."
            ) from exc
        return replayed

    def _fingerprint(self, values: Columns) -> str:
        """SHA-256 of the checked parameters, JSON columns with their keys sorted."""
        canonical = dict(values)
        for name in self._spec.json_columns:
            if isinstance(canonical.get(name), str):
                canonical[name] = _SORTED_TEXT_ENCODER.encode(json.loads(canonical[name]))
        text = _SORTED_ENCODER.encode([self._spec.name, canonical])
        import hashlib  # here: only writes with an idempotency key need it (it loads OpenSSL)

        return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _split(
    rows: builtins.list[tuple[str, str | None]],
) -> tuple[builtins.list[str], builtins.list[str | None]]:
    """(id, text) rows as a list of ids and a list of texts."""
    if not rows:
        return [], []
    ids, texts = zip(*rows, strict=True)
    return builtins.list(ids), builtins.list(texts)


def _first_line(exc: BaseException) -> str:
    """The first line of an exception's message (some run to several), or its type."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# -- input checks the database needs beyond api_client.params ----------------------------------


def check_storable_number(value: object, param: str) -> None:
    """Refuse an integer that does not fit SQLite's 64 bits (it could not be stored exactly)."""
    if isinstance(value, int) and not isinstance(value, bool):
        low, high = _INT64
        if not low <= value <= high:
            raise InvalidRequestError(
                f"{param} is too large: integers must lie between {low} and {high}.", param=param
            )
    elif isinstance(value, float) and not math.isfinite(value):
        raise InvalidRequestError(f"{param} must be a finite number.", param=param)


def json_text(value: object, param: str) -> str:
    """The JSON text of a value taken from the caller, or InvalidRequestError naming `param`."""
    try:
        text = _INPUT_ENCODER.encode(value)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidRequestError(f"{param} must be valid JSON: {exc}.", param=param) from exc
    check_text(text, param)
    return text


# -- reading rows back ---------------------------------------------------------------------------


def check_readable(values: Iterable[object]) -> None:
    """Refuse column values that no JSON can carry (ValueError): a BLOB, a non-finite number.

    Only a file written by hand holds them; convrisk refuses them on the way in.
    """
    for value in values:
        if isinstance(value, bytes):
            raise ValueError("a column holds bytes (a BLOB), which JSON cannot carry")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"a column holds {value}, which is not a JSON number")


def load_json_object(text: str, param: str) -> dict[str, Any]:
    """The object in a JSON text column, at most MAX_DETAILS_DEPTH levels deep (else ValueError).

    Strict JSON: NaN, Infinity and numbers too large for a float are refused, as no JSON output
    could carry them.
    """
    value = load_json(text)
    if not isinstance(value, dict):
        raise ValueError(f"{param} is not a JSON object")
    if exceeds_depth(value, MAX_DETAILS_DEPTH):
        raise ValueError(f"{param} nests more than {MAX_DETAILS_DEPTH} levels deep")
    return value


# -- the export path: each row's JSON text built by SQLite ---------------------------------------

# The SQL function writing a REAL as Python's json.dumps does (float.__repr__). SQLite's own
# json_object writes 15 significant digits and `1.0e+300`: not the same text.
FLOAT_FUNCTION = "convrisk_json_float"


def _json_float(value: object) -> str:
    if not isinstance(value, float) or not math.isfinite(value):
        # The row has no JSON: the page goes through the general path, which says why.
        raise ValueError("not a finite float")
    return float.__repr__(value)


def register_sql_functions(conn: sqlite3.Connection) -> None:
    """Add the SQL functions `json_object_sql` uses to a connection."""
    conn.create_function(FLOAT_FUNCTION, 1, _json_float, deterministic=True)


# A JSON object column is copied into the row's JSON as SQLite re-renders it (`json(c)`) only when
# that is exactly Python's `json.dumps(json.loads(c), ensure_ascii=False, separators=(",", ":"))`,
# as it is for what convrisk writes. json() only drops whitespace: it keeps escapes, the text of
# numbers and duplicate keys as they are. So the text is copied only when it is an object, with
# every condition below (a row that fails one goes through Python, which writes or refuses it):
_CANONICAL_JSON_OBJECT = r"""(CASE WHEN typeof({c}) = 'text' AND substr({c}, 1, 1) = '{{'
    -- at most MAX levels of nesting: too short to hold more, or no more brackets than that
    AND (length({c}) <= {short} OR length({c}) - length(replace(replace({c}, '[', ''), '{{', ''))
         <= {depth})
    -- no escape Python would write otherwise (\u is left to Python, \" \\ \n \t... are the same)
    AND (instr({c}, '\') = 0 OR (instr({c}, '\u') = 0 AND instr({c}, '\/') = 0))
    -- no integer -0 (Python writes 0); a date in a string may look like one: Python decides
    AND (instr({c}, '-0') = 0 OR {c} NOT GLOB '*[:,[]-0[],}}]*')
    -- no whitespace, nor anything else json() changes (invalid JSON raises: the page goes slowly)
    AND json({c}) = {c}
  THEN (SELECT count(*) = count(DISTINCT fullkey) AND max(type = 'real') = 0
        FROM json_tree({c}))
  -- no duplicate key (Python keeps the last), no real number (`1E5` is Python's 100000.0)
END)"""


def _number_sql(column: str) -> str:
    return (
        f"CASE typeof({column}) WHEN 'real' THEN json({FLOAT_FUNCTION}({column})) ELSE {column} END"
    )


def json_object_sql(fields: Iterable[tuple[str, str]]) -> str:
    """SQL for one row's compact JSON text, or NULL where Python must write it.

    `fields` are (column, kind) in the record's key order; kind is `text` (the value as SQLite
    holds it), `number` (likewise, but a REAL written by Python's repr), `flag` (0 and 1 as
    false and true; another value leaves the row to Python, which writes `bool(value)`) or
    `object` (JSON object text, copied when canonical: `_CANONICAL_JSON_OBJECT`). SQLite escapes
    strings as `json.dumps(..., ensure_ascii=False)` does; `json_agrees` checks it on first use.
    """
    parts: builtins.list[str] = []
    conditions: builtins.list[str] = []
    for column, kind in fields:
        if kind == "text":
            value = column
        elif kind == "number":
            value = _number_sql(column)
        elif kind == "flag":
            conditions.append(f"{column} IN (0, 1)")
            value = f"CASE WHEN {column} THEN json('true') ELSE json('false') END"
        elif kind == "object":
            conditions.append(
                _CANONICAL_JSON_OBJECT.format(
                    c=column, depth=MAX_DETAILS_DEPTH, short=2 * (MAX_DETAILS_DEPTH + 1) - 1
                )
            )
            value = f"json({column})"
        else:
            raise ValueError(f"unknown kind of field: {kind}")
        parts.append(f"'{column}', {value}")
    sql = f"json_object({', '.join(parts)})"
    if conditions:
        sql = f"CASE WHEN {' AND '.join(conditions)} THEN {sql} END"
    return sql


# Values whose JSON text SQLite and Python must agree on for the export path to be used.
_PROBE_TEXT = "".join(chr(code) for code in range(0x20)) + '"\\/\x7f\x85\u2028 é 😀 𝄞'
_PROBE_JSON = '{"a":[1,-2,{"b":null,"c":true}],"d":"x\\"y\\n","e":12345678901234567890123}'


def json_agrees(conn: sqlite3.Connection) -> bool:
    """Whether this SQLite writes JSON as `records.json_text` does (escapes, numbers, copies).

    Checked once per resource: a build of SQLite that escaped differently would otherwise make
    the export path print other bytes than the general one.
    """
    sql = json_object_sql(
        [
            ("s", "text"),
            ("i", "number"),
            ("f", "number"),
            ("z", "number"),
            ("t", "flag"),
            ("j", "object"),
        ]
    )
    values = (_PROBE_TEXT, 2**63 - 1, 0.1, -0.0, 1, _PROBE_JSON)
    names = ("s", "i", "f", "z", "t", "j")
    select = ", ".join(f"? AS {name}" for name in names)
    try:
        (text,) = conn.execute(f"SELECT {sql} FROM (SELECT {select})", values).fetchone()
    except sqlite3.Error:
        return False
    expected = dict(zip(names, values, strict=True))
    expected["t"] = True
    expected["j"] = json.loads(_PROBE_JSON)
    return bool(text == record_json(expected))
