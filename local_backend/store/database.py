"""The SQLite file: connections, schema migrations, transactions and the sqlite3 -> error mapping.

Every sqlite3 exception stops here and leaves as an `api_client` error. Writes run in
`BEGIN IMMEDIATE` transactions (the write lock is taken at the start, so two writers never
deadlock upgrading a read lock), the journal is WAL (readers never block the writer), and a busy
timeout plus a retry loop ride out other processes holding the lock.

Files in shared folders (`/tmp/demo.db`): a database, or its -wal, -shm or -journal, owned by
another user (root aside) is refused, as is a symlink where convrisk would create the file; a
database the user may read but not write (the file or its folder) is opened read-only.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from convrisk.api_client.errors import ServiceError
from convrisk.api_client.resources import RESOURCES, Field, Resource, ResourceName
from convrisk.local_backend.store.folders import make_private_folder

T = TypeVar("T")

# "cvrk": marks the file as ours, so a foreign SQLite file is refused instead of altered.
APPLICATION_ID = 0x6376726B
BUSY_TIMEOUT_SECONDS = 30.0
_IDLE_CONNECTIONS = 8
# SQLite's own default page cache: a keyset page touches a handful of pages, and a larger cache
# only grows the memory of a long export (16 MiB made `--all` at 100,000 rows 1.36x heavier).
_CACHE_KIB = 2 * 1024
# Values bound in one `IN (...)` (SQLite allows 32766 parameters since 3.32; older ones 999).
IN_CHUNK = 500


class Sql:
    """A migration step written as SQL statements."""

    def __init__(self, *statements: str) -> None:
        self.statements = statements

    def sql(self, resources: Mapping[ResourceName, Resource]) -> tuple[str, ...]:
        """The statements of the step."""
        return self.statements

    @property
    def only_indexes(self) -> bool:
        """Whether the step only adds indexes (every query still answers without them)."""
        return all(s.lstrip().upper().startswith("CREATE INDEX") for s in self.statements)


@dataclass(frozen=True)
class AddField:
    """A migration step adding one field of a resource's description to its table: the column
    (its type, NOT NULL and default from the field) and an index per filter comparing it."""

    resource: ResourceName
    field: str
    only_indexes = False

    def sql(self, resources: Mapping[ResourceName, Resource]) -> tuple[str, ...]:
        """An ALTER TABLE adding the column, then a CREATE INDEX per filter on it."""
        described = resources[self.resource]
        field = described.field(self.field)
        table = described.name
        statements = [f"ALTER TABLE {table} ADD COLUMN {self.field} {_column_type(field)}"]
        statements += [
            f"CREATE INDEX {table}_by_{f.name} ON {table} ({f.column}, id)"
            for f in described.filters
            if f.column == self.field
        ]
        return tuple(statements)


def _column_type(field: Field) -> str:
    """The declared type of a column added for `field`; ValueError for a field rows made before
    it cannot hold (one without a default)."""
    if not field.has_default:
        raise ValueError(f"{field.name}: a field added to a table must be a boolean or nullable")
    if field.type == "boolean":
        return "INTEGER NOT NULL DEFAULT 0"
    # As the first step's columns: no declared type keeps a number as given (int or float).
    return "TEXT" if field.type in ("string", "object") else ""


Migration = Sql | AddField

# Each step moves the schema one version forward; user_version records the last step applied.
# Never edit a released step: add a new one. A field added to a description is one line here,
# `AddField("conversations", "name")`: all else follows from the description.
MIGRATIONS: tuple[Migration, ...] = (
    # 1: the two resources, with an index per filter that also serves the id order.
    Sql(
        """
        CREATE TABLE conversations (
            id                TEXT NOT NULL PRIMARY KEY,
            contact_id        TEXT,
            group_id          TEXT,
            pinned_message_id TEXT,
            is_pinned         INTEGER NOT NULL DEFAULT 0,
            is_muted          INTEGER NOT NULL DEFAULT 0,
            last_active_at,
            last_opened_at,
            created_at        INTEGER NOT NULL,
            archived_at,
            is_archived       INTEGER GENERATED ALWAYS AS (archived_at IS NOT NULL) VIRTUAL,
            CHECK ((contact_id IS NULL) <> (group_id IS NULL))
        )
        """,
        "CREATE INDEX conversations_by_muted ON conversations (is_muted, id)",
        "CREATE INDEX conversations_by_pinned ON conversations (is_pinned, id)",
        "CREATE INDEX conversations_by_archived ON conversations (is_archived, id)",
        "CREATE INDEX conversations_by_group ON conversations (group_id, id)",
        """
        CREATE TABLE risk_profiles (
            id           TEXT NOT NULL PRIMARY KEY,
            customer_id  TEXT NOT NULL,
            profile_type TEXT NOT NULL,
            score        NOT NULL,
            details      TEXT NOT NULL,
            created_at   INTEGER NOT NULL,
            updated_at   INTEGER NOT NULL
        )
        """,
        "CREATE INDEX risk_profiles_by_customer ON risk_profiles (customer_id, id)",
        "CREATE INDEX risk_profiles_by_type ON risk_profiles (profile_type, id)",
    ),
    # 2: idempotency keys, and the largest id issued per resource (ids never go back, even
    # after the newest object is deleted).
    Sql(
        """
        CREATE TABLE idempotency_keys (
            key         TEXT NOT NULL PRIMARY KEY,
            resource    TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            response    TEXT NOT NULL,
            created_at  INTEGER NOT NULL
        )
        """,
        "CREATE INDEX idempotency_keys_by_created ON idempotency_keys (created_at)",
        """
        CREATE TABLE id_watermarks (
            resource TEXT NOT NULL PRIMARY KEY,
            last_id  TEXT NOT NULL
        )
        """,
    ),
    # 3: a contact's conversations (`conv list --contact-id`), in the id order.
    Sql("CREATE INDEX conversations_by_contact ON conversations (contact_id, id)"),
)


def readable_from(migrations: Sequence[Migration]) -> int:
    """The oldest version read as it is when the file cannot be written (so not migrated): that
    of the last step doing more than add indexes (every query answers without those)."""
    changing = [n for n, step in enumerate(migrations, start=1) if not step.only_indexes]
    return max(changing, default=0) or 1


SCHEMA_VERSION = len(MIGRATIONS)
READABLE_FROM = readable_from(MIGRATIONS)

_BUSY_CODES = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


# Files SQLite keeps beside a database, and writes the database's content to.
COMPANIONS = ("-wal", "-shm", "-journal")


def unsafe_file_problem(path: Path) -> str | None:
    """Why the database at `path` must not be used, or None.

    Refused: a directory; a symlink whose target does not exist (SQLite would create the file
    wherever it points); a database, or a file SQLite keeps beside it, owned by another user
    (they would read everything written to it); root's files are trusted, as ssh trusts them.
    """
    try:
        link = os.lstat(path)
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return None  # left to sqlite3.connect, which says what is wrong in its own words
    info = link
    if stat.S_ISLNK(link.st_mode):
        try:
            info = os.stat(path)
        except FileNotFoundError:
            return (
                f"The local database {path} is a symlink to {os.readlink(path)}, which does not "
                "exist: convrisk creates a database only as a new file, never through a symlink."
            )
        except OSError:
            return None
    if stat.S_ISDIR(info.st_mode):
        return f"The local database {path} is a directory: give a file (--db FILE)."
    problem = _foreign_owner(path, info, "The local database")
    if problem is not None:
        return problem
    real = Path(os.path.realpath(path))
    for suffix in COMPANIONS:
        companion = real.with_name(real.name + suffix)
        try:
            beside = os.lstat(companion)
        except OSError:
            continue
        if stat.S_ISLNK(beside.st_mode):
            return (
                f"{companion} (SQLite's file beside the local database) is a symlink: remove it; "
                "SQLite would write the database's content wherever it points."
            )
        problem = _foreign_owner(companion, beside, "SQLite's file beside the database,")
        if problem is not None:
            return problem
    return None


def _foreign_owner(path: Path, info: os.stat_result, what: str) -> str | None:
    if info.st_uid in (os.geteuid(), 0):
        return None
    return (
        f"{what} {path} belongs to another user (uid {info.st_uid}), who can read everything "
        "written to it: use a file of your own (--db FILE)."
    )


def _create_private_file(path: Path) -> None:
    """Create an empty database file with mode 0600, unless something is there already.

    sqlite3 would create it 0644 (umask permitting), and it creates the -wal and -shm files with
    the database file's mode, so they are private too. An existing file keeps its mode; a
    symlink is never followed (O_EXCL). Any other failure is left to sqlite3.connect, which
    reports it in its own words.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o600)
    except OSError:
        return
    os.close(fd)


def _read_only(path: Path) -> bool:
    """Whether an existing database can only be read: the file, or its folder (where SQLite
    makes the -wal and -shm files), is not writable by this user."""
    effective = os.access in os.supports_effective_ids
    try:
        return path.exists() and not (
            os.access(path, os.W_OK, effective_ids=effective)
            and os.access(path.parent, os.W_OK, effective_ids=effective)
        )
    except (OSError, ValueError):
        return False


def _primary_code(exc: sqlite3.Error) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def _is_busy(exc: sqlite3.Error) -> bool:
    return _primary_code(exc) in _BUSY_CODES or "database is locked" in str(exc)


# Set by `never_wait()`: operations in this context fail with WouldWait instead of waiting.
_NEVER_WAIT: ContextVar[bool] = ContextVar("convrisk_never_wait", default=False)


class WouldWait(Exception):
    """Under `never_wait()`, the file was locked by another connection; nothing was done."""


@contextmanager
def never_wait() -> Iterator[None]:
    """Run operations without waiting for a lock: a busy file raises WouldWait at once.

    For a caller that must not block (an event loop): it runs the operation again where waiting
    is harmless. A write that meets the lock fails at `BEGIN IMMEDIATE`, or rolls back whole, so
    running it again is safe.
    """
    token = _NEVER_WAIT.set(True)
    try:
        yield
    finally:
        _NEVER_WAIT.reset(token)


def waiting_allowed() -> bool:
    """Whether operations here may wait for a lock (False inside `never_wait()`)."""
    return not _NEVER_WAIT.get()


class Database:
    """One SQLite file shared by threads (a pool of connections) and by processes (WAL)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout: float = BUSY_TIMEOUT_SECONDS,
        on_connect: Callable[[sqlite3.Connection], None] | None = None,
    ):
        # Absolute, so that names SQLite treats specially (":memory:") are plain files here.
        self.path = Path(path).absolute()
        self.busy_timeout = busy_timeout
        # Run on each new connection (to add SQL functions).
        self._on_connect = on_connect
        # Read here, not at import: a test appends a step for a description of its own.
        self._migrations = MIGRATIONS
        self._lock = threading.Lock()
        self._prepare_lock = threading.Lock()
        self._idle: list[sqlite3.Connection] = []
        self._busy: set[sqlite3.Connection] = set()
        # Connections whose SQLite busy timeout is 0 (last used under never_wait()); switched
        # only when a connection changes side, not on every operation.
        self._not_waiting: set[sqlite3.Connection] = set()
        self._prepared = False
        self._closed = False
        # True once the file was found writable by neither this user nor in its folder.
        self.read_only = False

    # -- transactions ---------------------------------------------------------------------------

    def read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run `work` outside a write transaction (each statement reads one snapshot)."""
        return self._run(work, write=False)

    def snapshot(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run `work` in one read transaction: all its statements read the same snapshot."""

        def in_transaction(conn: sqlite3.Connection) -> T:
            conn.execute("BEGIN")
            try:
                return work(conn)
            finally:
                conn.execute("COMMIT")

        return self._run(in_transaction, write=False)

    def write(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run `work` in one `BEGIN IMMEDIATE` transaction, committed if it returns.

        An api_client error raised by `work` rolls the transaction back and goes through. When
        another process holds the lock past the busy timeout, the whole transaction is retried
        until `busy_timeout` seconds have passed, so `work` must only touch the database.
        """
        return self._run(work, write=True)

    def _run(self, work: Callable[[sqlite3.Connection], T], *, write: bool) -> T:
        def attempt() -> T:
            with self._connection() as conn:
                if not write:
                    return work(conn)
                conn.execute("BEGIN IMMEDIATE")
                try:
                    result = work(conn)
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
                return result

        return self._retry_busy(attempt)

    def _retry_busy(self, step: Callable[[], T]) -> T:
        """Run `step`, again while SQLite says busy/locked, until `busy_timeout` has passed.

        Any other sqlite3 error, or busy past the timeout, leaves as a ServiceError.
        """
        deadline = time.monotonic() + self.busy_timeout
        attempt = 0
        while True:
            try:
                return step()
            except sqlite3.Error as exc:
                if _is_busy(exc) and _NEVER_WAIT.get():
                    raise WouldWait(str(exc)) from exc
                if _is_busy(exc) and time.monotonic() < deadline:
                    attempt += 1
                    import random  # here: only a busy write retries (random loads hashlib)

                    time.sleep(min(0.002 * 2**attempt, 0.1) * random.uniform(0.5, 1.0))
                    continue
                raise self.error(exc) from exc

    # -- connections ----------------------------------------------------------------------------

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        conn = self._acquire()
        healthy = False
        try:
            self._set_waiting(conn, not _NEVER_WAIT.get())
            yield conn
            healthy = True
        except sqlite3.Error:
            raise
        except BaseException:
            # An api_client error (or any Python error) leaves the connection usable.
            healthy = not conn.in_transaction
            raise
        finally:
            self._release(conn, healthy=healthy)

    def _set_waiting(self, conn: sqlite3.Connection, waiting: bool) -> None:
        """SQLite's own busy handler on (the busy timeout) or off (0, under never_wait)."""
        if waiting == (conn not in self._not_waiting):
            return
        milliseconds = int(self.busy_timeout * 1000) if waiting else 0
        conn.execute(f"PRAGMA busy_timeout = {milliseconds}")
        if waiting:
            self._not_waiting.discard(conn)
        else:
            self._not_waiting.add(conn)

    def _acquire(self) -> sqlite3.Connection:
        with self._lock:
            if self._closed:
                raise ServiceError(f"The local database {self.path} has been closed.")
            conn = self._idle.pop() if self._idle else None
            if conn is not None:
                self._busy.add(conn)
                return conn
        conn = self._open()
        try:
            self._prepare(conn)
        except BaseException:
            conn.close()
            raise
        with self._lock:
            if self._closed:
                conn.close()
                raise ServiceError(f"The local database {self.path} has been closed.")
            self._busy.add(conn)
        return conn

    def _release(self, conn: sqlite3.Connection, *, healthy: bool) -> None:
        with self._lock:
            self._busy.discard(conn)
            if healthy and not self._closed and len(self._idle) < _IDLE_CONNECTIONS:
                self._idle.append(conn)
                return
            self._not_waiting.discard(conn)
        conn.close()

    def _open(self) -> sqlite3.Connection:
        folder = self.path.parent
        if "\0" in str(self.path):
            # mkdir and sqlite3.connect would raise a bare ValueError ("embedded null byte").
            raise ServiceError(
                f"Cannot open the local database {str(self.path)!r}: the path contains a NUL "
                "character; choose another file with --db."
            )
        try:
            make_private_folder(folder)
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise ServiceError(
                f"Cannot create the folder {folder} for the local database {self.path}: {reason}."
            ) from exc
        problem = unsafe_file_problem(self.path)
        if problem is not None:
            raise ServiceError(problem)
        _create_private_file(self.path)
        read_only = _read_only(self.path)
        try:
            conn = self._connect_read_only() if read_only else self._connect(self.path)
        except sqlite3.Error as exc:
            raise self.error(exc) from exc
        except (OSError, ValueError) as exc:
            raise ServiceError(f"Cannot open the local database {self.path}: {exc}.") from exc
        try:
            # WAL with synchronous=NORMAL keeps every commit atomic and consistent; a power cut
            # may lose the last commits, never corrupt the file.
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute(f"PRAGMA cache_size = -{_CACHE_KIB}")
            if self._on_connect is not None:
                self._on_connect(conn)
        except sqlite3.Error as exc:
            conn.close()
            raise self.error(exc) from exc
        return conn

    def _connect(self, name: str | Path, *, uri: bool = False) -> sqlite3.Connection:
        return sqlite3.connect(
            name, timeout=self.busy_timeout, isolation_level=None, check_same_thread=False, uri=uri
        )

    def _connect_read_only(self) -> sqlite3.Connection:
        """A connection that only reads (`mode=ro`), for a file or folder this user cannot write.

        SQLite reads a WAL database read-only only through its -shm file, which it cannot make in
        a folder it may not write. With no -wal file (or an empty one) every committed row is in
        the database file itself, and `immutable=1` reads it without the -shm file.
        """
        from urllib.parse import quote

        name = f"file:{quote(str(self.path))}?mode=ro"
        conn = self._connect(name, uri=True)
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.Error as exc:
            conn.close()
            wal = self.path.with_name(self.path.name + "-wal")
            no_shm = _primary_code(exc) in (sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN)
            if not no_shm or (wal.exists() and wal.stat().st_size > 0):
                raise
            conn = self._connect(name + "&immutable=1", uri=True)
        conn.execute("PRAGMA query_only = 1")
        self.read_only = True
        return conn

    def _prepare(self, conn: sqlite3.Connection) -> None:
        """Once per Database: WAL journal, then the schema migrated forward (a database that can
        only be read must already be at this version)."""
        if self._prepared:
            return
        with self._prepare_lock:
            if self._prepared:
                return
            if self.read_only:
                self._retry_busy(lambda: self._check_readable(conn))
            else:
                self._retry_busy(lambda: self._use_wal(conn))
                self._retry_busy(lambda: self._migrate(conn))
            self._prepared = True

    def _check_readable(self, conn: sqlite3.Connection) -> None:
        (version,) = conn.execute("PRAGMA user_version").fetchone()
        if version == 0:
            self._check_empty(conn)
        oldest, newest = readable_from(self._migrations), len(self._migrations)
        if not oldest <= version <= newest:
            state = "is empty" if version == 0 else f"has schema version {version}"
            raise ServiceError(
                f"The local database {self.path} can only be read (you may not write the file "
                f"or its folder) and {state}: this convrisk reads versions {oldest} to "
                f"{newest}."
            )
        self._check_application_id(conn)

    @staticmethod
    def _use_wal(conn: sqlite3.Connection) -> None:
        # Persistent in the file; a filesystem without WAL support keeps the rollback journal,
        # which the busy timeout and BEGIN IMMEDIATE still make safe.
        conn.execute("PRAGMA journal_mode = WAL").fetchone()

    def _migrate(self, conn: sqlite3.Connection) -> None:
        newest = len(self._migrations)
        (version,) = conn.execute("PRAGMA user_version").fetchone()
        if version == newest:
            self._check_application_id(conn)
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Read again under the write lock: another process may have migrated meanwhile.
            (version,) = conn.execute("PRAGMA user_version").fetchone()
            if version > newest:
                raise ServiceError(
                    f"The local database {self.path} has schema version {version}, newer than "
                    f"this convrisk knows ({newest}); upgrade convrisk to use it."
                )
            if version == 0:
                self._check_empty(conn)
            else:
                self._check_application_id(conn)
            for step in self._migrations[version:]:
                for statement in step.sql(RESOURCES):
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {newest}")
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _check_application_id(self, conn: sqlite3.Connection) -> None:
        (app_id,) = conn.execute("PRAGMA application_id").fetchone()
        if app_id != APPLICATION_ID:
            raise ServiceError(
                f"{self.path} is an SQLite database of another application, not a convrisk "
                "database; choose another file with --db."
            )

    def _check_empty(self, conn: sqlite3.Connection) -> None:
        (app_id,) = conn.execute("PRAGMA application_id").fetchone()
        (tables,) = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        if tables or app_id not in (0, APPLICATION_ID):
            raise ServiceError(
                f"{self.path} is an SQLite database of another application, not a convrisk "
                "database; choose another file with --db."
            )

    def close(self) -> None:
        """Close every connection: idle ones now, ones in use as soon as their work ends."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            self._not_waiting.difference_update(idle)
        for conn in idle:
            conn.close()

    # -- errors ---------------------------------------------------------------------------------

    def error(self, exc: sqlite3.Error) -> ServiceError:
        """The ServiceError telling a user what went wrong with the file, for an sqlite3 error."""
        code = _primary_code(exc)
        where = f"the local database {self.path}"
        if code == sqlite3.SQLITE_NOTADB or "not a database" in str(exc):
            message = f"{self.path} is not a convrisk database (SQLite: file is not a database)."
        elif code == sqlite3.SQLITE_CANTOPEN:
            message = (
                f"Cannot open {where}: check that its folder exists and that you may write there."
            )
        elif code in (sqlite3.SQLITE_READONLY, sqlite3.SQLITE_PERM, sqlite3.SQLITE_AUTH):
            message = f"Cannot write to {where}: the file or its folder is read-only."
        elif code in _BUSY_CODES or _is_busy(exc):
            message = (
                f"{where[0].upper()}{where[1:]} stayed locked by another process for more "
                f"than {self.busy_timeout:g} seconds."
            )
        elif code == sqlite3.SQLITE_FULL:
            message = f"Cannot write to {where}: the disk is full."
        elif code == sqlite3.SQLITE_CORRUPT:
            message = f"{where[0].upper()}{where[1:]} is corrupt (SQLite: {exc})."
        elif code == sqlite3.SQLITE_IOERR:
            message = f"Input/output error on {where} (SQLite: {exc})."
        else:
            message = f"Error in {where}: {exc}."
        return ServiceError(message)


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (some run to several), or its type."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
