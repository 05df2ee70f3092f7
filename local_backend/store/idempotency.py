"""Idempotency keys of creates: the fingerprint of a request, the answers stored for 24 hours, and
which creates of a batch replay an earlier answer, repeat another item or are new.

A key whose record was deleted since is forgotten when it is next used, in that create's own
transaction, and the create makes the record anew: a deleted record is never replayed
(docs/design/import.md, "After a record was deleted").
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping
from typing import Any, cast

from convrisk.api_client.errors import ConvriskError, InvalidRequestError, ServiceError
from convrisk.api_client.records import Created, Record, check_record, load_json
from convrisk.local_backend.store.database import IN_CHUNK, first_line

TTL_SECONDS = 24 * 60 * 60
# What starts a fingerprint of the current form (see IdempotencyKeys.fingerprint).
FINGERPRINT_V2 = "v2:"
# What starts a stored fingerprint that names the parameters the stored answer holds as they
# were given (see IdempotencyKeys.stored_fingerprint).
FINGERPRINT_V3 = "v3:"
# Built once: json.dumps with options builds an encoder on every call (a few per create).
_SORTED_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"))
_SORTED_TEXT_ENCODER = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"))

# What a create becomes once checked: its column values, its key (None: none), the
# fingerprint of its parameters ("": not made yet, see IdempotencyKeys.fingerprint_of) and its
# JSON columns parsed back from the text they store (decoded once: the fingerprint and the
# record made both use them).
Checked = tuple[dict[str, Any], str | None, str, dict[str, Any]]
# The stored (resource, fingerprint, response) of a key.
Stored = tuple[str, str, str]


class IdempotencyKeys:
    """The keys of one resource's creates, in the `idempotency_keys` table."""

    def __init__(
        self,
        resource: str,
        table: str,
        json_columns: tuple[str, ...],
        flags: tuple[str, ...] = (),
    ) -> None:
        self._resource = resource
        # The table of the resource's records: a stored answer whose record is not in it is gone.
        self._table = table
        # Columns holding JSON text: their keys are sorted for the fingerprint.
        self._json_columns = json_columns
        # Columns holding a boolean as 0 or 1 (a record holds true or false).
        self._flags = flags
        # The v3 stored fingerprint of each set of parameter names met.
        self._named: dict[tuple[str, ...], str] = {}

    def parsed(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """The value of each JSON column these column values set, decoded (strictly, as a read
        of the row would) from its text; a text that does not decode is left out."""
        parsed: dict[str, Any] = {}
        for name in self._json_columns:
            text = values.get(name)
            if isinstance(text, str):
                try:
                    parsed[name] = load_json(text)
                except (ValueError, RecursionError):
                    continue
        return parsed

    def fingerprint(self, values: Mapping[str, Any], parsed: Mapping[str, Any]) -> str:
        """`v2:` and the SHA-256 of the checked parameters, JSON columns as their values
        (`parsed`: see `parsed`), keys sorted at every level: one encoding of the whole.

        A key stored before `v2:` holds the `legacy_fingerprint`, which `matches` still
        compares (keys are kept 24 hours).
        """
        canonical = {**values, **parsed}
        return FINGERPRINT_V2 + _sha256(_SORTED_ENCODER.encode([self._resource, canonical]))

    def fingerprint_of(self, item: Checked) -> str:
        """The `fingerprint` of a checked create, made now if it was not made yet."""
        values, _, fingerprint, parsed = item
        return fingerprint or self.fingerprint(values, parsed)

    def stored_fingerprint(self, item: Checked, as_given: bool) -> str:
        """What is stored with the key of a create just written: `v3:` and the names of its
        parameters when the answer stored with it holds them as they were given (`as_given`:
        the object was made from them, not read back), so that their fingerprint is made from
        that answer only when a later request with the key must be compared (a create writes
        no hash); else the `fingerprint` itself."""
        if not as_given:
            return self.fingerprint_of(item)
        names = tuple(item[0])
        stored = self._named.get(names)
        if stored is None:
            stored = self._named[names] = FINGERPRINT_V3 + ",".join(names)
        return stored

    def _answered_fingerprint(self, stored_fingerprint: str, answer: object) -> str | None:
        """The `fingerprint` of the create a `v3:` key stored `answer` for: its parameters
        (named by the stored fingerprint) as the answer holds them; None when it lacks one."""
        names = [
            name for name in stored_fingerprint.removeprefix(FINGERPRINT_V3).split(",") if name
        ]
        if not isinstance(answer, dict) or not all(name in answer for name in names):
            return None
        values = {name: answer[name] for name in names}
        for name in self._flags:
            if isinstance(values.get(name), bool):
                values[name] = int(values[name])
        return self.fingerprint(values, {})

    def legacy_fingerprint(self, values: Mapping[str, Any], parsed: Mapping[str, Any]) -> str:
        """The fingerprint versions before `v2:` stored: SHA-256 of the checked parameters,
        each JSON column as its text with keys sorted."""
        canonical = dict(values)
        for name in self._json_columns:
            if name in parsed:
                canonical[name] = _SORTED_TEXT_ENCODER.encode(parsed[name])
            elif isinstance(canonical.get(name), str):
                canonical[name] = _SORTED_TEXT_ENCODER.encode(json.loads(canonical[name]))
        return _sha256(_SORTED_ENCODER.encode([self._resource, canonical]))

    def matches(self, item: Checked, stored_fingerprint: str, answer: object = None) -> bool:
        """Whether a stored fingerprint, of any form, is this checked create's; a `v3:` one is
        compared through the stored `answer` (parsed)."""
        values, _, _, parsed = item
        fingerprint = self.fingerprint_of(item)
        if stored_fingerprint == fingerprint:
            return True
        if stored_fingerprint.startswith(FINGERPRINT_V3):
            return self._answered_fingerprint(stored_fingerprint, answer) == fingerprint
        if stored_fingerprint.startswith(FINGERPRINT_V2):
            return False
        return stored_fingerprint == self.legacy_fingerprint(values, parsed)

    def plan(
        self,
        conn: sqlite3.Connection,
        checked: Iterable[Checked | ConvriskError],
        now: int,
        *,
        stop_on_error: bool,
    ) -> tuple[list[Created[Record] | ConvriskError | int], list[tuple[int, Checked]]]:
        """Each create's result so far, and the creates to write with their positions.

        A result is a refusal, the replayed answer of an earlier request, or a position: the
        item's own (to be written), or that of an earlier item of the batch with the same key
        and parameters (the same request twice gets the first one's answer). With
        `stop_on_error` the results end at the first refusal. Expired keys are purged first, and
        so is the key of each stored answer whose record is gone (deleted since): that create is
        new, and makes the record anew.
        """
        items = list(checked)
        keys = {item[1] for item in items if not isinstance(item, ConvriskError)} - {None}
        stored: dict[str, Stored] = {}
        answers: dict[str, object] = {}
        if keys:
            conn.execute("DELETE FROM idempotency_keys WHERE created_at <= ?", (now - TTL_SECONDS,))
            stored = _stored_answers(conn, keys)
            answers, gone = self._answers(conn, stored)
            if gone:
                _forget(conn, gone)
                for dead in gone:
                    del stored[dead]
        results: list[Created[Record] | ConvriskError | int] = []
        fresh: list[tuple[int, Checked]] = []
        first_of_key: dict[str, tuple[int, Checked]] = {}  # a key new in this batch: its item
        for item in items:
            position = len(results)
            if isinstance(item, ConvriskError):
                results.append(item)
                if stop_on_error:
                    break
                continue
            key = item[1]
            if key is not None and key in stored:
                try:
                    replayed = self._replay(key, item, stored[key], answers.get(key))
                    results.append(Created(replayed, True))
                except InvalidRequestError as exc:
                    results.append(exc)
                    if stop_on_error:
                        break
                continue
            if key is not None and key in first_of_key:
                earlier, earlier_item = first_of_key[key]
                if self.fingerprint_of(earlier_item) != self.fingerprint_of(item):
                    results.append(key_reused(key))
                    if stop_on_error:
                        break
                    continue
                results.append(earlier)
                continue
            if key is not None:
                first_of_key[key] = (position, item)
            fresh.append((position, item))
            results.append(position)
        return results, fresh

    def lookup(
        self, conn: sqlite3.Connection, checked: list[Checked], now: int
    ) -> list[Record | None]:
        """Read-only: the answer each create would replay (None: it would be new). A key kept
        with other parameters is None here: the create refuses it, and says so; so is a key
        whose record is gone: the create makes it anew (see `plan`)."""
        stored = _stored_answers(conn, [key for _, key, _, _ in checked], now - TTL_SECONDS)
        answers, gone = self._answers(conn, stored)
        found: list[Record | None] = []
        for item in checked:
            key = item[1] or ""
            kept = stored.get(key) if key not in gone else None
            try:
                found.append(
                    None if kept is None else self._replay(key, item, kept, answers.get(key))
                )
            except ConvriskError:
                found.append(None)
        return found

    def _answers(
        self, conn: sqlite3.Connection, stored: Mapping[str, Stored]
    ) -> tuple[dict[str, object], set[str]]:
        """The stored answers of this resource that can be read, parsed, by key; and the keys
        among them whose record is no longer in the table (deleted since).

        One query per IN_CHUNK answers, run only for keys that are stored (a re-run): a create
        with a new key costs nothing more. Ids are never issued twice (id_watermarks), so a
        record of the answer's id is the record the key made.
        """
        answers: dict[str, object] = {}
        ids: dict[str, str] = {}
        for key, (resource, _, response) in stored.items():
            if resource != self._resource:
                continue  # refused as another resource's key (key_reused), whatever its record
            try:
                answer = json.loads(response)
            except (ValueError, RecursionError):
                continue  # unreadable: _replay says so
            answers[key] = answer
            object_id = answer.get("id") if isinstance(answer, dict) else None
            if isinstance(object_id, str):
                ids[key] = object_id
        wanted = sorted(set(ids.values()))
        present: set[str] = set()
        for start in range(0, len(wanted), IN_CHUNK):
            chunk = wanted[start : start + IN_CHUNK]
            marks = ", ".join("?" * len(chunk))
            query = f"SELECT id FROM {self._table} WHERE id IN ({marks})"
            present.update(row[0] for row in conn.execute(query, chunk))
        return answers, {key for key, object_id in ids.items() if object_id not in present}

    def save(
        self, conn: sqlite3.Connection, answers: Iterable[tuple[str, str, str]], now: int
    ) -> None:
        """Store (key, fingerprint, answer text) for each key of the creates just written."""
        conn.executemany(
            "INSERT INTO idempotency_keys"
            " (key, resource, fingerprint, response, created_at) VALUES (?, ?, ?, ?, ?)",
            [(key, self._resource, fingerprint, text, now) for key, fingerprint, text in answers],
        )

    def _replay(self, key: str, item: Checked, stored: Stored, answer: object = None) -> Record:
        """The stored answer a create replays (`answer`: parsed already, when it was), or the
        key's refusal (another resource, other parameters)."""
        resource, stored_fingerprint, response = stored
        if resource != self._resource:
            raise key_reused(key)
        if answer is None and stored_fingerprint.startswith(FINGERPRINT_V3):
            answer = self._read_back(key, response)
        if not self.matches(item, stored_fingerprint, answer):
            raise key_reused(key)
        if answer is None:
            answer = self._read_back(key, response)
        try:
            return cast(Record, check_record(answer))
        except ValueError as exc:
            raise _unreadable(key, exc) from exc

    @staticmethod
    def _read_back(key: str, response: str) -> object:
        """The stored answer, parsed (ServiceError when it cannot be)."""
        try:
            return json.loads(response)
        except (ValueError, RecursionError) as exc:
            raise _unreadable(key, exc) from exc


def _unreadable(key: str, exc: BaseException) -> ServiceError:
    return ServiceError(
        f"The answer stored for the idempotency key {key!r} cannot be read back: {first_line(exc)}."
    )


def _sha256(text: str) -> str:
    """The SHA-256 of a text's UTF-8, in hex."""
    import hashlib  # here: only writes with an idempotency key need it (it loads OpenSSL)

    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def key_reused(key: str) -> InvalidRequestError:
    """The error of a key sent again with other parameters."""
    return InvalidRequestError(
        f"The idempotency key {key!r} was already used with a different request in the "
        "last 24 hours; use a new key for a new request.",
        param="idempotency_key",
    )


def _forget(conn: sqlite3.Connection, keys: Iterable[str]) -> None:
    """Remove these keys (their records are gone), so that their creates make them anew."""
    wanted = sorted(keys)
    for start in range(0, len(wanted), IN_CHUNK):
        chunk = wanted[start : start + IN_CHUNK]
        marks = ", ".join("?" * len(chunk))
        conn.execute(f"DELETE FROM idempotency_keys WHERE key IN ({marks})", chunk)


def _stored_answers(
    conn: sqlite3.Connection, keys: Iterable[str | None], expired: int | None = None
) -> dict[str, Stored]:
    """The stored (resource, fingerprint, response) of each of these keys that has one (kept
    after `expired`, when given)."""
    wanted = sorted(key for key in keys if key is not None)
    stored: dict[str, Stored] = {}
    for start in range(0, len(wanted), IN_CHUNK):
        chunk = wanted[start : start + IN_CHUNK]
        marks = ", ".join("?" * len(chunk))
        for key, resource, fingerprint, response in conn.execute(
            "SELECT key, resource, fingerprint, response FROM idempotency_keys"
            f" WHERE key IN ({marks}) AND created_at > ?",
            (*chunk, -(2**63) if expired is None else expired),
        ):
            stored[key] = (resource, fingerprint, response)
    return stored
