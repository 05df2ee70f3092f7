"""The journal of writes (DESIGN 5.3): one JSON line per record a command wrote, appended to
`$XDG_STATE_HOME/convrisk/journal.jsonl`, read back by `history` and `undo`.

The folder is 0700 and the file 0600, never followed through a symlink and never another user's.
Appends take an exclusive flock and write each batch of lines with one os.write, so that writers
in several processes lose no line. Past ROTATE_BYTES the file is renamed to `journal.1.jsonl`
(the one before is dropped) and a new one is started.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any, Literal, NotRequired, TypedDict, cast

JOURNAL_NAME = "journal.jsonl"
ROTATED_NAME = "journal.1.jsonl"  # the default journal's; see rotated_path
# Past this size an append starts a new file (the old one kept as journal.1.jsonl).
ROTATE_BYTES = 32 * 1024 * 1024
# A line longer than this is not read back (reported as a problem, the rest goes on).
MAX_LINE_BYTES = 4 * 1024 * 1024

Operation = Literal["create", "update", "delete", "api"]
Status = Literal["ok", "replayed", "failed"]


class Outcome(TypedDict):
    """What became of the write: ok, replayed (an earlier request's answer), or failed."""

    status: Status
    # The error's one-line message when it failed; the HTTP status where there was one.
    error: NotRequired[str | None]
    http_status: NotRequired[int | None]


class Entry(TypedDict):
    """One line of the journal: one record written (or one `api` request) by one command."""

    entry: str  # this line's id, time-sortable: `j_` + 12 hex digits of ms + 6 random hex
    run: str  # the command's id, shared by every entry it wrote (`r_` + the same shape)
    time: str  # UTC, ISO 8601 with milliseconds and `Z`
    profile: str
    backend: Literal["local", "remote"]
    target: str  # the base_url (no credentials) or the database path
    argv: list[str]  # the command line, secrets redacted
    operation: Operation
    resource: str | None  # "conversations" | "risk_profiles"; None for an api request
    id: str | None  # the record's id (for a create: the id the answer gave)
    before: dict[str, Any] | None  # the record before the write (None for a create)
    after: dict[str, Any] | None  # the record after it (None for a delete)
    idempotency_key: str | None
    outcome: Outcome
    # Written by `undo`: the entry this one puts back, and for a delete put back by a create,
    # the old id the new record stands for.
    undoes: NotRequired[str | None]
    stands_for: NotRequired[str | None]
    # Written by `undo` on the first write of a reverse of several (a delete reversed by a
    # create, then an update): "started". The unit is undone once its last write is journaled
    # (without `unit`); until then `undo` run again finishes it on the record this one made.
    unit: NotRequired[str]
    # An update's: the fields the command set (undo reverses these only). Older entries lack
    # it: undo then reverses every settable field that `before` and `after` disagree on.
    set: NotRequired[list[str]]
    # True when the record before or after held a secret (the token), journaled as `***`:
    # undo cannot put such a record back as it was.
    redacted: NotRequired[bool]
    # True when a record in it held a number JSON cannot (NaN, Infinity, 1e400 from a service),
    # journaled as the string "NaN", "Infinity" or "-Infinity" (line_text): likewise.
    non_finite: NotRequired[bool]
    # `api` requests: the method and the path with its query.
    method: NotRequired[str]
    path: NotRequired[str]


class Problem:
    """A line that could not be read back: its file, line number and why."""

    # A plain class: a dataclass costs a write command ~0.3 ms more to import.
    __slots__ = ("line", "path", "reason")

    def __init__(self, path: Path, line: int, reason: str) -> None:
        self.path = path
        self.line = line
        self.reason = reason

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Problem):
            return NotImplemented
        return (self.path, self.line, self.reason) == (other.path, other.line, other.reason)

    def __hash__(self) -> int:
        return hash((self.path, self.line, self.reason))

    def __repr__(self) -> str:
        return f"Problem({self.path!r}, {self.line!r}, {self.reason!r})"

    def describe(self) -> str:
        """One line naming the file, the line and the reason."""
        return f"{self.path} line {self.line}: {self.reason}"


class JournalError(Exception):
    """The journal cannot be used at all (a folder or file convrisk must not touch)."""


def journal_off(env: Mapping[str, str]) -> bool:
    """Whether `CONVRISK_JOURNAL=off` turns the journal off (for benchmarks)."""
    return env.get("CONVRISK_JOURNAL", "").strip().lower() == "off"


def journal_path(env: Mapping[str, str]) -> Path:
    """`CONVRISK_JOURNAL`, else `$XDG_STATE_HOME/convrisk/journal.jsonl` (~/.local/state);
    with `CONVRISK_JOURNAL=off` (nothing journaled) the default file, for `history` to read."""
    chosen = env.get("CONVRISK_JOURNAL")
    if chosen and not journal_off(env):
        return Path(chosen).expanduser()
    state = env.get("XDG_STATE_HOME", "")
    # The XDG spec says relative paths in these variables are invalid and must be ignored.
    base = (
        Path(state)
        if state and os.path.isabs(state)
        else Path(env.get("HOME", "~")) / ".local/state"
    )
    return base.expanduser() / "convrisk" / JOURNAL_NAME


def rotated_path(path: Path) -> Path:
    """Where the journal at `path` rotates to: `journal.jsonl` -> `journal.1.jsonl`, and a journal
    named by CONVRISK_JOURNAL to its own (`prod.jsonl` -> `prod.1.jsonl`), never another's."""
    return path.with_name(f"{path.stem}.1{path.suffix}")


def new_id(prefix: str) -> str:
    """A time-sortable id: the prefix, 12 hex digits of Unix milliseconds, 6 random hex."""
    return f"{prefix}{int(time.time() * 1000):012x}{_random_hex()}"


# Random bytes drawn ahead, 3 per id: one system call for many entries (an import's batch).
_POOL_IDS = 1024
_pool: list[str] = []
os.register_at_fork(after_in_child=_pool.clear)


def _random_hex() -> str:
    """6 random hex digits (3 bytes from the operating system)."""
    if not _pool:
        drawn = os.urandom(3 * _POOL_IDS).hex()
        _pool.extend(drawn[start : start + 6] for start in range(0, len(drawn), 6))
    return _pool.pop()


# The second utc_now last formatted, and its text up to the seconds.
_second: list[Any] = [None, ""]


def utc_now() -> str:
    """The current time as the journal writes it: `2026-11-25T06:15:00.123Z`."""
    now = time.time()
    second = int(now)
    if _second[0] != second:
        _second[:] = [second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))]
    return f"{_second[1]}.{int(now * 1000) % 1000:03d}Z"


def line_text(entry: object) -> str:
    """An entry's JSON line (or a value's JSON text), without its end of line: compact,
    non-ASCII kept, always JSON (RFC 8259).

    A NaN or infinite float (a record from a service that sent `1e400` or `NaN`) is written as
    the string "NaN", "Infinity" or "-Infinity", never as a token no JSON reader takes; an
    entry holding one is marked `non_finite`, so that undo does not write the strings back.
    """
    global _LINE_ENCODER
    if _LINE_ENCODER is None:
        import json

        # allow_nan=False costs nothing: the encoder checks each float as it writes it.
        _LINE_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    try:
        text: str = _LINE_ENCODER.encode(entry)
    except ValueError:
        from convrisk.api_client.records import with_finite_names

        named, found = with_finite_names(entry)
        if found and isinstance(named, dict) and "entry" in named:
            named["non_finite"] = True
        text = _LINE_ENCODER.encode(named)
    return text


# Made at the first line: a command that writes nothing does not import json for it.
_LINE_ENCODER: Any = None


def append(path: Path, entries: Sequence[Entry | str]) -> None:
    """Append entries, one JSON line each (an entry, or its line already made by `line_text`),
    in one write under an exclusive lock.

    Raises OSError or JournalError when the journal cannot be written: the caller warns, the
    write it records has happened all the same.
    """
    if not entries:
        return
    from convrisk.local_backend.store.folders import make_private_folder

    data = "".join(
        f"{entry if isinstance(entry, str) else line_text(entry)}\n" for entry in entries
    ).encode("utf-8")
    make_private_folder(path.parent)
    fd = _open_for_append(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        if size + len(data) > ROTATE_BYTES and size > 0:
            fd = _rotate(path, fd)
            size = os.fstat(fd).st_size
        if size > 0 and os.pread(fd, 1, size - 1) != b"\n":
            # A writer killed in the middle of its write left half a line: end it there, so
            # that it stays one bad line and these entries start lines of their own.
            data = b"\n" + data
        view = memoryview(data)
        try:
            while view:
                written = os.write(fd, view)
                view = view[written:]
        except OSError:
            # A full disk may have taken part of the batch: cut it off, so that the next
            # append does not continue a half line (the lock is still held).
            with suppress(OSError):
                os.ftruncate(fd, size)
            raise
    finally:
        os.close(fd)  # closing releases the lock


def _open_for_append(path: Path) -> int:
    """The journal opened to append (created 0600), refused when it is not ours to write."""
    # Read too: the last byte tells whether the file ends a line (see append).
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        if exc.errno == 40:  # ELOOP: a symlink
            raise JournalError(f"{path} is a symbolic link") from None
        raise
    info = os.fstat(fd)
    import stat

    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
        os.close(fd)
        raise JournalError(f"{path} is not a file of yours")
    return fd


def _rotate(path: Path, fd: int) -> int:
    """Move the full journal aside (holding its lock) and open a new one in its place."""
    rotated = rotated_path(path)
    try:
        # Another process may have rotated it while this one waited for the lock.
        if os.path.samestat(os.fstat(fd), os.stat(path, follow_symlinks=False)):
            os.replace(path, rotated)
    except FileNotFoundError:
        pass
    os.close(fd)
    fresh = _open_for_append(path)
    fcntl.flock(fresh, fcntl.LOCK_EX)
    return fresh


def read(path: Path) -> Iterator[Entry | Problem]:
    """Every line of the journal, oldest first (the rotated file before the current one): each
    an Entry, or a Problem naming a line that is not one (the others are read all the same).

    Raises JournalError when the file cannot be read at all.
    """
    for part in (rotated_path(path), path):
        yield from _read_file(part)


def _read_file(path: Path) -> Iterator[Entry | Problem]:
    """The lines of one journal file (none when it does not exist)."""
    import json

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise JournalError(f"Cannot read the journal {path}: {exc.strerror or exc}.") from None
    with os.fdopen(fd, "rb") as stream:
        import stat

        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise JournalError(f"The journal {path} is not a file.")
        for number, raw in enumerate(_lines(stream), start=1):
            if raw is None:
                yield Problem(path, number, f"longer than {MAX_LINE_BYTES:,} bytes, skipped")
                continue
            if not raw.endswith(b"\n"):
                yield Problem(path, number, "cut short (no end of line), skipped")
                continue
            try:
                value = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError:
                yield Problem(path, number, "not UTF-8, skipped")
                continue
            except ValueError:
                yield Problem(path, number, "not JSON, skipped")
                continue
            if not _is_entry(value):
                yield Problem(path, number, "not a journal entry, skipped")
                continue
            yield value


def _lines(stream: Any) -> Iterator[bytes | None]:
    """Each line with its end of line; None for a line over MAX_LINE_BYTES (skipped unread)."""
    while True:
        raw: bytes = stream.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            while raw and not raw.endswith(b"\n"):
                raw = stream.readline(MAX_LINE_BYTES + 1)
            yield None
            continue
        yield raw


# Read from the end in blocks of this size (history lists the newest entries first).
_BLOCK = 64 * 1024


def read_newest(path: Path) -> Iterator[Entry | Problem]:
    """The journal newest first, read from the end (the current file, then the rotated one):
    each line an Entry, or a Problem naming a line that is not one. Only what is consumed is
    read, so the newest entries of a large journal come at once.

    Raises JournalError when a file cannot be read at all.
    """
    current = _open_to_read(path)
    rotated = _open_to_read(rotated_path(path))
    if (
        current is not None
        and rotated is not None
        and os.path.samestat(*map(os.fstat, (current, rotated)))
    ):
        # Rotated between the two opens: the same file twice.
        os.close(rotated)
        rotated = None
    try:
        for fd, part in ((current, path), (rotated, rotated_path(path))):
            if fd is not None:
                yield from _backwards(fd, part)
    finally:
        for fd in (current, rotated):
            if fd is not None:
                os.close(fd)


def _open_to_read(path: Path) -> int | None:
    """A journal file opened to read (None when there is none), refused when it is not a file
    of the user's (a directory, a symlink, another user's)."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == 40:  # ELOOP: a symlink
            raise JournalError(f"The journal {path} is a symbolic link: not read.") from None
        raise JournalError(f"Cannot read the journal {path}: {exc.strerror or exc}.") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
        os.close(fd)
        what = "a directory" if stat.S_ISDIR(info.st_mode) else "not a file of yours"
        raise JournalError(f"The journal {path} is {what}: not read.")
    return fd


def _backwards(fd: int, path: Path) -> Iterator[Entry | Problem]:
    """The lines of one open journal file, last first, each parsed (see `_parse`).

    The end is taken under a shared lock, so a line being appended is not read half written.
    Line numbers are counted only when a problem is reported: the file's lines are counted once,
    and each line read from the end is one less (never counted from the start again per line).
    """
    fcntl.flock(fd, fcntl.LOCK_SH)
    end = os.fstat(fd).st_size
    fcntl.flock(fd, fcntl.LOCK_UN)

    def segments() -> int:
        """How many pieces the line breaks cut the file into (its line breaks, plus one)."""
        count = done = 0
        while done < end:
            chunk = os.pread(fd, min(_BLOCK * 16, end - done), done)
            if not chunk:
                break
            count += chunk.count(b"\n")
            done += len(chunk)
        return count + 1

    first = True  # the segment after the last line break: a line only when not empty
    passed = 0  # the segments met so far, from the end
    total: int | None = None  # segments(), once a problem needs a line number

    def line_out(raw: bytes | None) -> Iterator[Entry | Problem]:
        nonlocal first, passed, total
        from_end, passed = passed, passed + 1
        ended, first = not first, False
        if not ended and raw == b"":
            return  # the file ends with a line break
        value = _parse(raw, ended)
        if isinstance(value, str):
            if total is None:
                total = segments()
            yield Problem(path, total - from_end, value)
        else:
            yield value

    position = end
    tail: bytes | None = b""  # the end of the line being read; None once it is too long
    while position > 0:
        size = min(_BLOCK, position)
        position -= size
        block = os.pread(fd, size, position)
        if len(block) != size:
            raise JournalError(f"The journal {path} changed while it was read.")
        pieces = block.split(b"\n")
        if tail is not None:
            tail = pieces[-1] + tail
            if len(tail) > MAX_LINE_BYTES:
                tail = None
        if len(pieces) == 1:
            continue
        # Each piece after the first starts right after a line break: a whole line.
        yield from line_out(tail)
        for piece in reversed(pieces[1:-1]):
            yield from line_out(piece)
        tail = pieces[0]
    if end > 0:
        yield from line_out(tail)


def _parse(raw: bytes | None, ended: bool) -> Entry | str:
    """A line (without its end of line) as an Entry, or why it is not one; None: too long."""
    import json

    if raw is None:
        return f"longer than {MAX_LINE_BYTES:,} bytes, skipped"
    if not ended:
        return "cut short (no end of line), skipped"
    try:
        value = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return "not UTF-8, skipped"
    except (ValueError, RecursionError):
        return "not JSON, skipped"
    if not _is_entry(value):
        return "not a journal entry, skipped"
    return cast("Entry", value)


_REQUIRED = {"entry": str, "run": str, "time": str, "operation": str, "outcome": dict}


def _is_entry(value: object) -> bool:
    """Whether a parsed line has the keys an Entry must have, of the right types."""
    return isinstance(value, dict) and all(
        isinstance(value.get(key), kind) for key, kind in _REQUIRED.items()
    )
