"""LocalBackend: the service's ten operations on one SQLite file (DESIGN sections 1 and 1.1).

Safe to share between threads (a pool of connections, one per operation in flight) and between
processes on one file (WAL, busy timeout, every write in `BEGIN IMMEDIATE`). Raises only
`api_client` errors. Opening the file, creating its folder and migrating the schema happen on the
first operation, not on construction or import.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from convrisk.api_client.errors import ServiceError
from convrisk.api_client.record_types import (
    Conversation,
    ConversationCreateParams,
    ConversationFilters,
    ConversationUpdateParams,
    RiskProfile,
    RiskProfileCreateParams,
    RiskProfileFilters,
    RiskProfileUpdateParams,
)
from convrisk.api_client.resources import RESOURCES
from convrisk.local_backend.store.database import (
    BUSY_TIMEOUT_SECONDS,
    Database,
    unsafe_file_problem,
)
from convrisk.local_backend.store.folders import make_private_folder
from convrisk.local_backend.store.ids import SYSTEM, IdSource
from convrisk.local_backend.store.json_export import register_sql_functions
from convrisk.local_backend.store.resource import Columns, TableResource
from convrisk.local_backend.store.table_spec import spec_of

if TYPE_CHECKING:
    from convrisk.api_client.raw import RawAnswer
    from convrisk.local_backend.sandbox.wire import Wire
    from convrisk.local_backend.store.clock import SandboxClock

ConversationsResource = TableResource[
    Conversation, ConversationCreateParams, ConversationUpdateParams, ConversationFilters
]
RiskProfilesResource = TableResource[
    RiskProfile, RiskProfileCreateParams, RiskProfileUpdateParams, RiskProfileFilters
]


class LocalBackend:
    """The Backend protocol over one SQLite file.

    `clock` gives the time in Unix seconds; `stamps`, when given, the time of each new or
    changed object instead (one reading per object: `serve --clock`); `id_sources` the source
    of each resource's new ids (by resource name; the system's randomness and the creation time
    when not given); `busy_timeout` is how long an operation waits for another process's write
    lock before failing with a ServiceError.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Callable[[], float] = time.time,
        stamps: SandboxClock | None = None,
        id_sources: Mapping[str, IdSource] | None = None,
        busy_timeout: float = BUSY_TIMEOUT_SECONDS,
    ) -> None:
        self._db = Database(path, busy_timeout=busy_timeout, on_connect=register_sql_functions)
        sources = id_sources or {}
        # From the descriptions as they are now (a test may carry one of its own).
        conversations = spec_of(RESOURCES["conversations"])
        risk_profiles = spec_of(RESOURCES["risk_profiles"])
        self._conversations: ConversationsResource = TableResource(
            conversations, self._db, clock, sources.get(conversations.name, SYSTEM), stamps
        )
        self._risk_profiles: RiskProfilesResource = TableResource(
            risk_profiles, self._db, clock, sources.get(risk_profiles.name, SYSTEM), stamps
        )
        self._wire: Wire | None = None
        self._stamps = stamps
        self._id_sources = {name: sources.get(name, SYSTEM) for name in RESOURCES}

    @property
    def path(self) -> Path:
        """The SQLite file (absolute)."""
        return self._db.path

    @property
    def conversations(self) -> ConversationsResource:
        """The conversations resource."""
        return self._conversations

    @property
    def risk_profiles(self) -> RiskProfilesResource:
        """The risk profiles resource."""
        return self._risk_profiles

    def send(self, method: str, target: str, body: bytes | None) -> RawAnswer:
        """One request through the wire rules of `convrisk serve` (local_backend.sandbox.wire),
        without
        a socket or a token: the answer `serve` would give, whatever its status (but a 5xx
        names its cause, which `serve` keeps for its log)."""
        from http import HTTPStatus

        from convrisk.api_client.raw import RawAnswer
        from convrisk.local_backend.sandbox.wire import Wire, json_answer

        if self._wire is None:
            self._wire = Wire(self, None)
        path, _, query = target.partition("?")
        headers = [] if body is None else [("content-type", "application/json")]
        answer = self._wire.handle(method, path, query, headers, body or b"")
        if answer.status >= 500 and answer.internal:
            # serve logs the reason and tells its clients no more; here there is no log, and the
            # user is the operator: the reason (a locked or corrupt file...) is the message.
            cause = answer.internal.strip().splitlines()[-1]
            error = ServiceError(cause, status=answer.status)
            answer = json_answer(answer.status, error.to_body(), answer.headers)
        # As over HTTP: the reason phrase, and no body in an answer to HEAD.
        try:
            reason = HTTPStatus(answer.status).phrase
        except ValueError:
            reason = ""
        body = b"" if method == "HEAD" else answer.body
        return RawAnswer(answer.status, body, reason, content_type="application/json")

    def reset(self) -> None:
        """Remove every record of both resources and every idempotency key, in one transaction,
        and rewind the sandbox clock and the seeded id streams to their start.

        A seeded resource also forgets the ids it issued, so that its stream gives the same ids
        again; any other keeps its id watermark: its ids are never issued twice.
        """

        def empty(conn: sqlite3.Connection) -> None:
            for resource in RESOURCES.values():
                conn.execute(f"DELETE FROM {spec_of(resource).table}")
            conn.execute("DELETE FROM idempotency_keys")
            for name, source in self._id_sources.items():
                if source.repeatable:
                    conn.execute("DELETE FROM id_watermarks WHERE resource = ?", (name,))
                # Inside the write lock, so no create can draw between the emptying and the
                # rewind; rewinding twice (a retried transaction) is rewinding once.
                source.rewind()
            if self._stamps is not None:
                self._stamps.rewind()

        self._db.write(empty)

    def snapshot(self) -> list[str]:
        """The whole store as snapshot lines (local_backend.sandbox.snapshot), read in one
        transaction."""
        from convrisk.local_backend.sandbox import (
            snapshot,  # here: only the sandbox takes snapshots
        )

        def read(conn: sqlite3.Connection) -> list[str]:
            lines: list[str] = []
            for name in snapshot.ORDER:
                spec = spec_of(RESOURCES[name])
                query = f"SELECT {', '.join(spec.columns)} FROM {spec.table} ORDER BY id"
                for row in conn.execute(query):
                    lines.append(snapshot.line(name, spec.to_record(row)))
            return lines

        return self._db.snapshot(read)

    def restore(self, rows: dict[str, list[Columns]]) -> dict[str, int]:
        """Replace the whole store by these rows (snapshot.parse), idempotency keys emptied, in
        one transaction: all or nothing. How many records of each resource.

        Nothing is rewound; each id watermark rises to the largest id restored, so a restored
        id is never minted again, even once its record is deleted.
        """
        from convrisk.local_backend.sandbox import snapshot

        def replace(conn: sqlite3.Connection) -> dict[str, int]:
            for resource in RESOURCES.values():
                conn.execute(f"DELETE FROM {spec_of(resource).table}")
            conn.execute("DELETE FROM idempotency_keys")
            for name in snapshot.ORDER:
                spec = spec_of(RESOURCES[name])
                marks = ", ".join("?" * len(spec.columns))
                conn.executemany(
                    f"INSERT INTO {spec.table} ({', '.join(spec.columns)}) VALUES ({marks})",
                    [tuple(row[column] for column in spec.columns) for row in rows[name]],
                )
                largest = max((row["id"] for row in rows[name]), default=None)
                if largest is not None:
                    conn.execute(
                        "INSERT INTO id_watermarks (resource, last_id) VALUES (?, ?) ON CONFLICT"
                        " (resource) DO UPDATE SET last_id = max(last_id, excluded.last_id)",
                        (name, largest),
                    )
            return {name: len(rows[name]) for name in snapshot.ORDER}

        return self._db.write(replace)

    def close(self) -> None:
        """Close every connection; the backend cannot be used afterwards."""
        self._db.close()

    def __enter__(self) -> LocalBackend:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def database_problem(path: Path, *, default: bool) -> str | None:
    """Why the local database file at `path` cannot be used, or None. The `default` one's folder
    is made (mode 0700, as are its missing parents); a chosen one's folder must exist. A file
    convrisk must not use (store.database.unsafe_file_problem) is refused."""
    if default:
        try:
            make_private_folder(path.parent)
        except OSError as exc:
            return f"Cannot create the data folder {path.parent}: {exc.strerror or exc}."
    elif not path.parent.is_dir():
        return f"The folder of the database {path} does not exist."
    return unsafe_file_problem(path)
