"""The only module that prints: every output format, errors, hints, progress and confirmations.

Formats: `table` (a rich table on a terminal; tab-separated under a header line otherwise),
`json` (an object, or an array for lists and several ids), `jsonl`, `csv` and `id`. Lists are
written and flushed page by page, so `--all` starts printing at once in flat memory.

Every line a person reads goes through `shown()` (api_client.text.printable) here, in the
sinks and the message methods, so that no command can let a control character from data reach
the terminal (DESIGN 4.2); JSON goes through printable_json() instead.
"""

from __future__ import annotations

import io
import json
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, TextIO, TypeVar

from .errors import CliError, StdoutClosed

if TYPE_CHECKING:
    import logging

    from api_client.models import Page, Resource

Row = Mapping[str, Any]
R = TypeVar("R", bound="Resource")
CellKind = Literal["text", "bool", "time", "json", "number"]

# A timestamp above this is taken to be in milliseconds (10**11 seconds is the year 5138).
MILLISECONDS_ABOVE = 10**11
# On a terminal a rich table is drawn for at most this many rows at a time.
TABLE_CHUNK = 1000


@dataclass(frozen=True)
class Column:
    """One column: the field, its title and how to show it (or a function of the whole row)."""

    key: str
    title: str
    kind: CellKind = "text"
    value: Callable[[Row], object] | None = None

    def cell(self, row: Row) -> str:
        """This column's text for a row."""
        value = self.value(row) if self.value is not None else row.get(self.key)
        return format_cell(value, self.kind)


@dataclass(frozen=True)
class Kind:
    """What is being printed: its noun for messages, its columns, and the terminal's columns."""

    noun: str
    plural: str
    columns: tuple[Column, ...]
    # A rich table on a terminal shows fewer, friendlier columns so that it fits 80 columns;
    # TSV and CSV keep every field under its own name.
    terminal_columns: tuple[Column, ...]
    # The field printed by `-o id` (a row without it is left out).
    id_key: str = "id"
    # When set, the table format (on a terminal and piped alike) is one readable line per row
    # made by this function, instead of columns.
    line: Callable[[Row], str] | None = None


def _party(row: Row) -> str:
    if row.get("group_id"):
        return f"group {row['group_id']}"
    return f"contact {row.get('contact_id') or ''}".strip()


def _flags(row: Row) -> str:
    flags = [name for name in ("pinned", "muted") if row.get(f"is_{name}")]
    if row.get("archived_at") is not None:
        flags.append("archived")
    if row.get("pinned_message_id"):
        flags.append(f"message {row['pinned_message_id']}")
    return ", ".join(flags)


CONVERSATIONS = Kind(
    "conversation",
    "conversations",
    (
        Column("id", "ID"),
        Column("contact_id", "CONTACT"),
        Column("group_id", "GROUP"),
        Column("is_pinned", "PINNED", "bool"),
        Column("is_muted", "MUTED", "bool"),
        Column("pinned_message_id", "PINNED MESSAGE"),
        Column("last_active_at", "LAST ACTIVE", "time"),
        Column("last_opened_at", "LAST OPENED", "time"),
        Column("created_at", "CREATED", "time"),
        Column("archived_at", "ARCHIVED", "time"),
    ),
    (
        Column("id", "ID"),
        Column("with", "WITH", value=_party),
        Column("flags", "FLAGS", value=_flags),
        Column("last_active_at", "LAST ACTIVE", "time"),
        Column("created_at", "CREATED", "time"),
    ),
)
RISK_PROFILES = Kind(
    "risk profile",
    "risk profiles",
    (
        Column("id", "ID"),
        Column("customer_id", "CUSTOMER"),
        Column("profile_type", "TYPE"),
        Column("score", "SCORE", "number"),
        Column("details", "DETAILS", "json"),
        Column("created_at", "CREATED", "time"),
        Column("updated_at", "UPDATED", "time"),
    ),
    (
        Column("id", "ID"),
        Column("customer_id", "CUSTOMER"),
        Column("profile_type", "TYPE"),
        Column("score", "SCORE", "number"),
        Column("details", "DETAILS", "json"),
        Column("updated_at", "UPDATED", "time"),
    ),
)
_DELETION_COLUMNS = (Column("id", "ID"), Column("deleted", "DELETED", "bool"))
DELETIONS = Kind("deletion", "deletions", _DELETION_COLUMNS, _DELETION_COLUMNS)


_PLAN_COLUMNS = (
    Column("dry_run", "DRY RUN", "bool"),
    Column("operation", "OPERATION"),
    Column("id", "ID"),
    Column("body", "BODY", "json"),
)


def planned(operation: str, id: str | None, body: Mapping[str, Any]) -> dict[str, Any]:
    """One operation a dry run would perform, in the shape of every format (DESIGN 4.4)."""
    return {"dry_run": True, "operation": operation, "id": id, "body": dict(body)}


def plan_kind(target: Kind) -> Kind:
    """The kind of the planned operations on `target`: readable lines in the table format."""

    def line(row: Row) -> str:
        body = format_cell(row.get("body") or {}, "json")
        if row.get("operation") == "create":
            return f"would create a {target.noun}: {body}"
        if row.get("operation") == "update":
            return f"would update {row.get('id')}: {body}"
        return f"would {row.get('operation')} {row.get('id')}"

    return Kind(
        f"planned {target.noun} operation",
        f"planned {target.noun} operations",
        _PLAN_COLUMNS,
        _PLAN_COLUMNS,
        line=line,
    )


def _error_message(row: Row) -> str:
    error = row.get("error")
    return str(error.get("message", "")) if isinstance(error, Mapping) else ""


_RESULT_COLUMNS = (
    Column("line", "LINE", "number"),
    Column("status", "STATUS"),
    Column("id", "ID"),
    Column("error", "ERROR", value=_error_message),
)
IMPORT_RESULTS = Kind("import result", "import results", _RESULT_COLUMNS, _RESULT_COLUMNS)


_PROFILE_COLUMNS = (
    Column("name", "NAME"),
    Column("active", "ACTIVE", "bool"),
    Column("base_url", "BASE URL"),
    Column("db", "DB"),
    Column("token", "TOKEN", "bool"),
)
PROFILES = Kind(
    "profile",
    "profiles",
    _PROFILE_COLUMNS,
    (
        Column("active", "", value=lambda row: "*" if row.get("active") else ""),
        Column("name", "PROFILE"),
        Column(
            "backend",
            "BACKEND",
            value=lambda row: row.get("base_url") or row.get("db") or "local (default database)",
        ),
        Column("token", "TOKEN", value=lambda row: "set" if row.get("token") else ""),
    ),
    id_key="name",
)


def _status_lines(row: Row) -> str:
    """The status of `convrisk status` as aligned lines (joined by the sink)."""
    if row.get("backend") == "remote":
        backend = f"remote {row.get('base_url')}"
        token = f"from {row['token_source']}" if row.get("token_source") else "not set"
    else:
        backend = f"local {row.get('db')}"
        token = "not needed (local database)"
    if row.get("ok"):
        service = f"ok ({row.get('ms')} ms for a list of one conversation)"
    else:
        error = row.get("error") or {}
        service = f"failed, exit code {row.get('exit_code')}: {error.get('message', '')}"
        if error.get("status") is not None and f"HTTP {error['status']}" not in service:
            service += f" (HTTP {error['status']})"
    lines = [
        ("profile", f"{row.get('profile')} (from {row.get('profile_source')})"),
        ("backend", backend),
        ("token", token),
        ("service", service),
    ]
    return "\n".join(f"{key:<8} {value}" for key, value in lines)


_STATUS_COLUMNS = tuple(
    Column(key, key.upper(), "json" if key == "error" else "text")
    for key in (
        "profile",
        "profile_source",
        "backend",
        "base_url",
        "db",
        "token_source",
        "ok",
        "ms",
        "exit_code",
        "error",
    )
)
STATUS = Kind("status", "statuses", _STATUS_COLUMNS, _STATUS_COLUMNS, line=_status_lines)


def format_timestamp(value: object) -> str:
    """`YYYY-MM-DD HH:MM:SS` UTC from Unix seconds or milliseconds; other values as text."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "" if value is None else str(value)
    seconds = value / 1000 if abs(value) > MILLISECONDS_ABOVE else value
    try:
        return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S")
    except (OverflowError, OSError, ValueError):
        return str(value)


def format_cell(value: object, kind: CellKind) -> str:
    """A value as text for tables, TSV and CSV."""
    if value is None:
        return ""
    if kind == "time":
        return format_timestamp(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list) or kind == "json":
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return str(value)


def shown(text: str, *, escape_backslash: bool = False, keep_newlines: bool = False) -> str:
    """`text` safe for a terminal line: api_client.text.printable(), with the same options."""
    # Plain ASCII has nothing to escape: the common case costs no call, and `config` and `--help`
    # import nothing of api_client.
    if text.isascii() and text.isprintable() and not (escape_backslash and "\\" in text):
        return text
    from api_client.text import printable

    return printable(text, escape_backslash=escape_backslash, keep_newlines=keep_newlines)


def _json(value: object, **options: Any) -> str:
    """JSON text of a value as the service sent it, safe on a terminal and encodable as UTF-8."""
    from api_client.text import printable_json

    return printable_json(json.dumps(value, ensure_ascii=False, **options))


# A spreadsheet runs a cell starting with one of these as a formula (OWASP, CSV injection).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"


def csv_cell(text: str) -> str:
    """A CSV cell: controls escaped, and a would-be formula prefixed with `'` (not a number)."""
    text = shown(text)
    if text.startswith(_FORMULA_START) and re.fullmatch(_PLAIN_NUMBER, text) is None:
        return "'" + text
    return text


def is_terminal(stream: object) -> bool:
    """Whether a stream is an interactive terminal."""
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except (ValueError, OSError):
        return False


@dataclass
class ErrorInfo:
    """An error as the user sees it: one line, or one JSON object with the fields that apply."""

    type: str
    message: str
    param: str | None = None
    status: int | None = None
    id: str | None = None
    line_number: int | None = None  # the line of an import file the error is about

    def line(self) -> str:
        """`line <n>: <id>: <message> (HTTP <status>)`, each part only when it applies and adds
        something."""
        text = self.message
        about_the_line = self.line_number is not None and text.startswith(
            f"line {self.line_number}"
        )
        if self.id and self.id not in text and not about_the_line:
            text = f"{self.id}: {text}"
        if self.line_number is not None and not about_the_line:
            text = f"line {self.line_number}: {text}"
        if self.status is not None and f"HTTP {self.status}" not in text:
            text = f"{text} (HTTP {self.status})"
        return text

    def fields(self) -> dict[str, Any]:
        """type, message and the fields that apply (param, status, id, line)."""
        return self.body()["error"]  # type: ignore[no-any-return]

    def body(self) -> dict[str, Any]:
        """`{"error": {...}}` with only the fields that apply."""
        fields: dict[str, Any] = {"type": self.type, "message": self.message}
        if self.line_number is not None:
            fields["line"] = self.line_number
        for key in ("param", "status", "id"):
            value = getattr(self, key)
            if value is not None:
                fields[key] = value
        return {"error": fields}


def describe_error(exc: BaseException, *, remote: bool, id: str | None = None) -> ErrorInfo:
    """The ErrorInfo of any exception the command line reports."""
    if isinstance(exc, CliError):
        return ErrorInfo("usage_error", exc.message, param=exc.param, id=id)
    errors = sys.modules.get("api_client.errors")
    if errors is not None:
        if isinstance(exc, errors.APIError):
            # Only an error built from a real answer has a status to show; one raised by a
            # check before any request has none.
            status = exc.status if remote and exc.answered else None
            return ErrorInfo(exc.type, exc.message, param=exc.param, status=status, id=id)
        if isinstance(exc, errors.APITimeoutError):
            return ErrorInfo("timeout_error", exc.message, id=id)
        if isinstance(exc, errors.APIConnectionError):
            return ErrorInfo("connection_error", exc.message, id=id)
        if isinstance(exc, errors.ConvriskError):
            return ErrorInfo("api_error", exc.message, id=id)
    message = str(exc) or type(exc).__name__
    return ErrorInfo("internal_error", f"Unexpected {type(exc).__name__}: {message}", id=id)


class Printer:
    """Writes everything the user sees, in the chosen format; nothing else prints."""

    def __init__(self, fmt: str, *, env: Mapping[str, str], remote: bool = False) -> None:
        self.fmt = fmt
        self.env = env
        self.remote = remote
        self._no_color = bool(env.get("NO_COLOR")) or env.get("TERM") == "dumb"
        self._progress = False

    # -- streams -------------------------------------------------------------------------------

    def stdout_is_terminal(self) -> bool:
        """Whether stdout is a terminal."""
        return is_terminal(sys.stdout)

    def stderr_is_terminal(self) -> bool:
        """Whether stderr is a terminal."""
        return is_terminal(sys.stderr)

    def stdin_is_terminal(self) -> bool:
        """Whether stdin is a terminal (someone can answer a question)."""
        return is_terminal(sys.stdin)

    def _color(self, code: str, text: str) -> str:
        if self._no_color or not self.stderr_is_terminal():
            return text
        return f"\x1b[{code}m{text}\x1b[0m"

    def write(self, text: str) -> None:
        """Write to stdout and flush; a closed pipe stops the command quietly."""
        self._clear_progress()
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except BrokenPipeError:
            raise StdoutClosed() from None

    def _stderr(self, text: str) -> None:
        try:
            sys.stderr.write(text)
            sys.stderr.flush()
        except BrokenPipeError:
            pass

    # -- messages on stderr --------------------------------------------------------------------

    def line(self, text: str) -> None:
        """One line of plain output on stdout (a config value, a path, the version)."""
        self.write(shown(text) + "\n")

    def _message(self, text: str) -> None:
        """A finished message (already safe) on stderr, after wiping the progress indicator."""
        self._clear_progress()
        self._stderr(text + "\n")

    def notice(self, text: str) -> None:
        """A message on stderr; several lines stay lines (a traceback, a log line, a help)."""
        self._message(shown(text, keep_newlines=True))

    def hint(self, text: str) -> None:
        """A one-line hint on stderr (dim on a terminal), never on stdout."""
        self._message(self._color("2", shown(text)))

    def warning(self, text: str) -> None:
        """A one-line warning on stderr."""
        self._message(self._color("33", "Warning:") + " " + shown(text))

    def error(self, info: ErrorInfo) -> None:
        """An error on stderr: one `Error: ...` line, or one JSON line with -o json/jsonl."""
        if self.fmt in ("json", "jsonl"):
            self._message(_json(info.body()))
        else:
            self._message(self._color("31", "Error:") + " " + shown(info.line()))

    def progress(self, text: str) -> None:
        """A one-line progress indicator on stderr, only when stderr is a terminal."""
        if not self.stderr_is_terminal():
            return
        self._stderr("\r\x1b[K" + self._color("2", text))
        self._progress = True

    def _clear_progress(self) -> None:
        if self._progress:
            self._progress = False
            self._stderr("\r\x1b[K")

    def confirm(self, question: str) -> bool:
        """Ask a yes/no question on the terminal (stderr); the default is no."""
        import typer

        self._clear_progress()
        return typer.confirm(shown(question), default=False, err=True)

    # -- records -------------------------------------------------------------------------------

    @contextmanager
    def records(self, kind: Kind, *, many: bool) -> Iterator[Sink]:
        """A sink for rows of one kind; the output is finished even after an error.

        `many` chooses the shape: a JSON array (also when empty) rather than one object, and a
        header line even with no rows.
        """
        sink = self._sink(kind, many)
        try:
            yield sink
        except BaseException:
            # Finish what was started (so a JSON array stays valid), but print nothing for a
            # list that failed before its first page: an empty result would be a lie.
            if sink.count:
                sink.close()
            raise
        sink.close()

    def _sink(self, kind: Kind, many: bool) -> Sink:
        if self.fmt == "json":
            return JsonSink(self, kind, many, indent=2 if self.stdout_is_terminal() else None)
        if self.fmt == "jsonl":
            return JsonlSink(self, kind, many)
        if self.fmt == "csv":
            return CsvSink(self, kind, many)
        if self.fmt == "id":
            return IdSink(self, kind, many)
        if kind.line is not None:
            return LineSink(self, kind, many)
        if self.stdout_is_terminal():
            return RichSink(self, kind, many)
        return TsvSink(self, kind, many)

    @contextmanager
    def import_report(
        self, kind: Kind, name: str, size: int | None, position: Callable[[], int]
    ) -> Iterator[ImportReport]:
        """The report of an import (see ImportReport); finished even after an error, saying
        then how to go on."""
        report = ImportReport(self, kind, name, size, position)
        try:
            yield report
        except StdoutClosed:
            raise
        except BaseException:
            report.close(finished=False)
            raise
        report.close(finished=True)

    def one(self, kind: Kind, row: Row) -> None:
        """A single object (create, or get/update with one id)."""
        with self.records(kind, many=False) as sink:
            sink.write([row])

    def pages(
        self,
        kind: Kind,
        pages: Iterable[Page[R]],
        *,
        hint_more: bool,
        cursor_option: str = "--starting-after",
    ) -> None:
        """Every page of a list as it arrives; a hint on stderr when more items exist.

        `cursor_option` is the option that continues after the last item printed (the walk of
        `--ending-before` goes on with `--ending-before`). A listing that fails after printing
        something says on stderr how to go on from the last item printed, then fails as it would.
        """
        count = 0
        last: Page[R] | None = None
        last_id: str | None = None
        try:
            with self.records(kind, many=True) as sink:
                for page in pages:
                    sink.write([item.to_json_dict() for item in page.data])
                    count += len(page.data)
                    last = page
                    if page.data:
                        last_id = page.data[-1].id
                    if page.has_more:
                        self.progress(f"{count} {kind.noun if count == 1 else kind.plural}...")
        except StdoutClosed:
            raise
        except BaseException:
            if last_id is not None:
                noun = kind.noun if count == 1 else kind.plural
                self.hint(
                    f"Stopped after {count} {noun}. To go on from there, run the same command "
                    f"with {cursor_option} {last_id}."
                )
            raise
        self._clear_progress()
        if last is not None and last.has_more and hint_more and last_id is not None:
            self.hint(
                f"More {kind.plural} exist: use --all, or --limit N, or "
                f"{cursor_option} {last_id} to see them."
            )
        elif count == 0 and self.fmt == "table" and self.stdout_is_terminal():
            self.hint(f"No {kind.plural}.")


class ImportReport:
    """The results of an import as they come, in file order: one row per record on stdout (JSON
    lines when the table format is piped), each failure on stderr naming its line, a progress
    bar while stderr is a terminal, and at the end the counts on stderr and, on a terminal in
    the table format, a summary on stdout instead of the rows.

    `size` is the file's size in bytes when known and `position` how much of it has been read,
    for the bar.
    """

    _STATUSES = ("created", "updated", "failed")

    def __init__(
        self,
        printer: Printer,
        kind: Kind,
        name: str,
        size: int | None,
        position: Callable[[], int],
    ) -> None:
        self.printer = printer
        self.kind = kind
        self.name = name
        self.size = size
        self.position = position
        self.counts = dict.fromkeys(self._STATUSES, 0)
        self.last_line = 0
        self._summary = printer.fmt == "table" and printer.stdout_is_terminal()
        self._sink: Sink | None = None
        if not self._summary:
            if printer.fmt == "table":
                self._sink = JsonlSink(printer, IMPORT_RESULTS, True)
            else:
                self._sink = printer._sink(IMPORT_RESULTS, True)
        self._started = _monotonic()
        self._drawn = 0.0

    @property
    def total(self) -> int:
        """Records reported so far."""
        return sum(self.counts.values())

    def add(self, rows: Sequence[Row]) -> None:
        """Report these results (in file order): failures on stderr, rows on stdout."""
        if not rows:
            return
        for row in rows:
            self.counts[row["status"]] += 1
            self.last_line = row["line"]
            if row["status"] == "failed":
                error = dict(row.get("error") or {})
                self.printer.error(
                    ErrorInfo(
                        str(error.get("type", "api_error")),
                        str(error.get("message", "")),
                        param=error.get("param"),
                        status=error.get("status"),
                        id=row.get("id"),
                        line_number=row["line"],
                    )
                )
        if self._sink is not None:
            self._sink.write(rows)
        self._draw()

    def _draw(self, force: bool = False) -> None:
        now = _monotonic()
        if not force and now - self._drawn < 0.1:
            return
        self._drawn = now
        counts = ", ".join(f"{self.counts[s]:,} {s}" for s in self._STATUSES if self.counts[s])
        text = f"{self.total:,} records" + (f" ({counts})" if counts else "")
        if self.size:
            done = min(self.position() / self.size, 1.0)
            filled = int(done * 30)
            text = f"[{'#' * filled}{'-' * (30 - filled)}] {done:4.0%}  {text}"
        self.printer.progress(text)

    def close(self, *, finished: bool) -> None:
        """End the output; the counts on stderr (and the summary on a terminal). When not
        `finished` (interrupted, or stopped by an error that is not one record's), say how to
        finish."""
        if self._sink is not None:
            self._sink.close()
        self.printer._clear_progress()
        seconds = _monotonic() - self._started
        counts = ", ".join(f"{self.counts[s]:,} {s}" for s in self._STATUSES)
        if self._summary and finished:
            rate = f", {self.total / seconds:,.0f} records/s" if seconds > 0 and self.total else ""
            self.printer.line(
                f"Imported {self.name}: {self.total:,} records in {seconds:.1f} s{rate}"
            )
            width = max(len(f"{n:,}") for n in self.counts.values())
            for status in self._STATUSES:
                self.printer.line(f"  {status:<8} {self.counts[status]:>{width},}")
        self.printer.notice(f"{self.total:,} records: {counts}.")
        if not finished:
            after = f" after line {self.last_line}" if self.last_line else ""
            self.printer.hint(
                f"The import stopped{after}. Run the same command again to finish: records "
                "already created are not created twice (within the 24 hours the service keeps "
                "their idempotency keys)."
            )


def _monotonic() -> float:
    import time

    return time.monotonic()


class Sink:
    """Where the rows of one command go, in one format."""

    def __init__(self, printer: Printer, kind: Kind, many: bool) -> None:
        self.printer = printer
        self.kind = kind
        self.many = many
        self.count = 0
        self.failed = 0  # ids that failed (reported on stderr), set by the caller

    def write(self, rows: Sequence[Row]) -> None:
        """Print these rows now (one page, or one object)."""
        if rows:
            self.printer.write(self.render(rows))
            self.count += len(rows)

    def render(self, rows: Sequence[Row]) -> str:
        """The text of these rows."""
        raise NotImplementedError

    def close(self) -> None:
        """Finish the output (close a JSON array, print a lone header)."""


class JsonSink(Sink):
    """An object, or an array streamed item by item; indented on a terminal."""

    def __init__(self, printer: Printer, kind: Kind, many: bool, *, indent: int | None) -> None:
        super().__init__(printer, kind, many)
        self.indent = indent

    def _dump(self, row: Row) -> str:
        if self.indent is None:
            return _json(row, separators=(",", ":"))
        return _json(row, indent=self.indent)

    def render(self, rows: Sequence[Row]) -> str:
        """Objects on their own, or array items with their separators."""
        if not self.many:
            return "".join(self._dump(row) + "\n" for row in rows)
        if self.indent is None:
            items = ",".join(self._dump(row) for row in rows)
            return ("[" if self.count == 0 else ",") + items
        pad = " " * self.indent
        items = ",\n".join(pad + self._dump(row).replace("\n", "\n" + pad) for row in rows)
        return ("[\n" if self.count == 0 else ",\n") + items

    def close(self) -> None:
        """Close the array (an empty one when nothing was written)."""
        if not self.many:
            return
        if self.count == 0:
            self.printer.write("[]\n")
        else:
            self.printer.write("]\n" if self.indent is None else "\n]\n")


class JsonlSink(Sink):
    """One compact JSON object per line."""

    def render(self, rows: Sequence[Row]) -> str:
        """One line per row."""
        return "".join(_json(row, separators=(",", ":")) + "\n" for row in rows)


class IdSink(Sink):
    """Ids only, one per line."""

    def render(self, rows: Sequence[Row]) -> str:
        """One id per line (control characters escaped, so one id is one line); rows without
        one (a planned create, a failed import record) are left out."""
        key = self.kind.id_key
        return "".join(shown(str(row[key])) + "\n" for row in rows if row.get(key) is not None)


class LineSink(Sink):
    """Readable lines per row, made by the kind's `line` function; each line is escaped for a
    terminal (a line break the function puts in stays, one from data does not)."""

    def render(self, rows: Sequence[Row]) -> str:
        """The lines of each row."""
        line = self.kind.line
        assert line is not None
        return "".join(
            "".join(shown(part) + "\n" for part in line(row).split("\n")) for row in rows
        )


class _HeaderSink(Sink):
    """A format with a header line: written before the first row, or alone for an empty list."""

    def header(self) -> str:
        """The header line."""
        raise NotImplementedError

    def body(self, rows: Sequence[Row]) -> str:
        """The rows without the header."""
        raise NotImplementedError

    def render(self, rows: Sequence[Row]) -> str:
        """The header first time, then the rows."""
        return (self.header() if self.count == 0 else "") + self.body(rows)

    def close(self) -> None:
        """A header alone when a list came back empty (not when every id failed)."""
        if self.many and self.count == 0 and not self.failed:
            self.printer.write(self.header())


class TsvSink(_HeaderSink):
    """Tab-separated columns under a header line of field names; nothing cut or wrapped.

    Every field is printable(..., escape_backslash=True): one row is one line, a tab always
    separates fields, and api_client.text.unprintable() gives each value back exactly.
    """

    def header(self) -> str:
        """Field names."""
        return "\t".join(column.key for column in self.kind.columns) + "\n"

    def body(self, rows: Sequence[Row]) -> str:
        """One line per row."""
        return "".join(_tsv_line([c.cell(row) for c in self.kind.columns]) for row in rows)


def _tsv_line(cells: list[str]) -> str:
    """Fields joined by tabs, each printable(..., escape_backslash=True), and a newline."""
    whole = "".join(cells)
    # One check for the whole row: most rows are plain ASCII with nothing to escape.
    if not (whole.isascii() and whole.isprintable() and "\\" not in whole):
        from api_client.text import printable

        if printable(whole, escape_backslash=True) != whole:  # something to escape
            cells = [printable(cell, escape_backslash=True) for cell in cells]
    return "\t".join(cells) + "\n"


class CsvSink(_HeaderSink):
    """CSV (the csv module's quoting) under a header line of field names, for spreadsheets:
    control characters escaped (one record per line) and formulas defused (csv_cell)."""

    def _csv(self, lines: Iterable[Sequence[str]]) -> str:
        import csv

        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerows(lines)
        return buffer.getvalue()

    def header(self) -> str:
        """Field names."""
        return self._csv([[column.key for column in self.kind.columns]])

    def body(self, rows: Sequence[Row]) -> str:
        """One record per row; details as JSON text."""
        return self._csv([csv_cell(c.cell(row)) for c in self.kind.columns] for row in rows)


class RichSink(Sink):
    """A rich table on a terminal, drawn when the rows are in (in chunks for long lists)."""

    def __init__(self, printer: Printer, kind: Kind, many: bool) -> None:
        super().__init__(printer, kind, many)
        self.rows: list[list[str]] = []

    def write(self, rows: Sequence[Row]) -> None:
        """Keep the rows; draw a table when a chunk is full."""
        # rich keeps ESC, C1 and bidi controls (it strips only BEL, BS, VT, FF and CR): escape.
        self.rows.extend([shown(c.cell(row)) for c in self.kind.terminal_columns] for row in rows)
        self.count += len(rows)
        if len(self.rows) >= TABLE_CHUNK:
            self._draw()

    def _draw(self) -> None:
        from rich.box import SIMPLE_HEAD
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        table = Table(
            box=SIMPLE_HEAD,
            show_edge=False,
            pad_edge=False,
            collapse_padding=True,
            header_style="bold",
        )
        for column in self.kind.terminal_columns:
            # Whole ids and scores; a date folds at its space rather than inside it.
            table.add_column(
                column.title,
                no_wrap=column.key in ("id", "score"),
                min_width=10 if column.kind == "time" else None,
                overflow="fold",
            )
        for cells in self.rows:
            table.add_row(*(Text(cell) for cell in cells))
        self.rows = []
        out = io.StringIO()
        console = Console(
            file=out,
            force_terminal=not self.printer._no_color,
            no_color=self.printer._no_color,
            width=terminal_width(sys.stdout, self.printer.env),
            highlight=False,
        )
        console.print(table)
        self.printer.write(out.getvalue())

    def close(self) -> None:
        """Draw what is left."""
        if self.rows:
            self._draw()


def debug_handler() -> logging.Handler:
    """A stderr handler for `--debug` (the loggers never see the token); data shown escaped."""
    import logging

    class Printable(logging.Formatter):
        """Escapes control characters in each line (paths, ids and messages carry data)."""

        def format(self, record: logging.LogRecord) -> str:
            """The usual line, made safe for the terminal."""
            return shown(super().format(record), keep_newlines=True)

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(Printable("debug: %(name)s: %(message)s"))
    return handler


def terminal_width(stream: TextIO, env: Mapping[str, str]) -> int:
    """COLUMNS if set, else the terminal's width, else 80 (a new pseudo-terminal reports 0)."""
    import os

    columns = env.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        width = os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, ValueError, OSError):
        width = 0
    return width if width > 0 else 80
