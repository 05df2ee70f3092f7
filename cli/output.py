"""The only module that prints: every output format, errors, hints, progress and confirmations.

Formats: `table` (on a terminal a table of one line per row, or for one record a detail view
with every field; tab-separated under a header line otherwise),
`json` (an object, or an array for lists and several ids), `jsonl`, `csv` and `id`. Lists are
written and flushed page by page, so `--all` starts printing at once in flat memory.

Every line a person reads goes through `shown()` (api_client.text.printable) here, in the
sinks and the message methods, so that no command can let a control character from data reach
the terminal (DESIGN 4.2); JSON goes through printable_json() instead.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol, TextIO, TypeVar, cast

from .errors import CliError, JqFailed, OutputFailed, StdoutClosed

if TYPE_CHECKING:
    import logging

    from convrisk.api_client.records import JsonPage, Page, Record

    from .shape import JqProgram, Shape

Row = Mapping[str, Any]
R = TypeVar("R", bound="Record")
CellKind = Literal["text", "bool", "time", "json", "number"]

# A timestamp above this is taken to be in milliseconds (10**11 seconds is the year 5138).
MILLISECONDS_ABOVE = 10**11
# On a terminal a table is drawn for at most this many rows at a time.
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


# One step that narrows a terminal table: show a time column as its date only, or drop a column.
Narrowing = tuple[Literal["date", "drop"], str]


@dataclass(frozen=True)
class Kind:
    """What is being printed: its noun for messages, its columns, and the terminal's columns."""

    noun: str
    plural: str
    columns: tuple[Column, ...]
    # A table on a terminal shows fewer, friendlier columns; TSV and CSV keep every field under
    # its own name. On a narrow screen `narrowing` is applied in order, as far as needed.
    terminal_columns: tuple[Column, ...]
    narrowing: tuple[Narrowing, ...] = ()
    # The field printed by `-o id` (a row without it is left out).
    id_key: str = "id"
    # When set, the table format (on a terminal and piped alike) is one readable line per row
    # made by this function, instead of columns.
    line: Callable[[Row], str] | None = None

    # --fields: only these fields of each record, in this order (None: all of them).
    fields: tuple[str, ...] | None = None

    def only(self, fields: Sequence[str]) -> Kind:
        """This kind with only these fields, in this order: the columns of every format.

        A field the kind has no column for (a result that is not one of its records, such as
        another command's summary) gets a plain text column under its name.
        """
        by_key = {column.key: column for column in self.columns}
        columns = tuple(by_key.get(key) or Column(key, key.upper()) for key in fields)
        narrowing = tuple(step for step in self.narrowing if step[1] in fields)
        return dataclasses.replace(
            self,
            columns=columns,
            terminal_columns=columns,
            narrowing=narrowing,
            fields=tuple(fields),
        )


# The kinds of the resources' records are derived from their descriptions: cli/resource_kinds.py.
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


# Whatever `convrisk api` prints: an answer's body, or the items of its pages.
ANSWER = Kind("item", "items", (), ())


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
    from convrisk.api_client.text import printable

    return printable(text, escape_backslash=escape_backslash, keep_newlines=keep_newlines)


def _json(value: object, **options: Any) -> str:
    """JSON text of a value as the service sent it, safe on a terminal and encodable as UTF-8."""
    return _printable_json(json.dumps(value, ensure_ascii=False, **options))


def _printable_json(text: str) -> str:
    """JSON text (from `json.dumps(..., ensure_ascii=False)`) safe on a terminal: printable_json."""
    from convrisk.api_client.text import printable_json

    return printable_json(text)


# A spreadsheet runs a cell starting with one of these as a formula (OWASP, CSV injection).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"


def csv_cell(text: str) -> str:
    """A CSV cell: controls escaped, and a would-be formula prefixed with `'` (not a number)."""
    text = shown(text)
    if text.startswith(_FORMULA_START) and re.fullmatch(_PLAIN_NUMBER, text) is None:
        return "'" + text
    return text


def _output_failed(exc: BaseException) -> OutputFailed:
    """The error of a write to stdout that failed: closed (`>&-`), a full disk, an I/O error."""
    if sys.stdout is None or isinstance(exc, AttributeError):
        return OutputFailed("stdout is closed: there is nowhere to print the output.")
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
    return OutputFailed(f"Cannot write the output to stdout: {reason}.")


def is_terminal(stream: object) -> bool:
    """Whether a stream is an interactive terminal."""
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except (ValueError, OSError):
        return False


def same_file(a: TextIO, b: TextIO) -> bool:
    """Whether two streams write to the same file (the same terminal); True when unknown."""
    try:
        return os.path.samestat(os.fstat(a.fileno()), os.fstat(b.fileno()))
    except (AttributeError, ValueError, OSError, io.UnsupportedOperation):
        return True


class Tty:
    """The controlling terminal, read a line at a time and written unbuffered."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def write(self, text: str) -> None:
        """Write text to the terminal."""
        os.write(self.fd, text.encode("utf-8", "replace"))

    def flush(self) -> None:
        """Nothing to flush: every write goes straight to the terminal."""

    def readline(self) -> str:
        """One line as typed (the terminal hands it over on Enter); empty at end of input."""
        return os.read(self.fd, 4096).decode("utf-8", "replace")

    def close(self) -> None:
        """Close the terminal."""
        os.close(self.fd)


def controlling_terminal() -> Tty | None:
    """The controlling terminal (/dev/tty), or None when the process has none (CI, cron)."""
    try:
        return Tty(os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY))
    except OSError:
        return None


class _Reader(Protocol):
    def readline(self) -> str: ...


class _Writer(Protocol):
    def write(self, text: str, /) -> object: ...

    def flush(self) -> None: ...


def ask(prompt: str, reader: _Reader, writer: _Writer) -> str:
    """Write `prompt`, read the answer line; Ctrl-C or end of input ends the line and raises
    KeyboardInterrupt (so that `Interrupted.` gets a line of its own)."""
    try:
        writer.write(prompt)
        writer.flush()
        line = reader.readline()
    except KeyboardInterrupt:
        line = ""
    if not line:
        writer.write("\n")
        writer.flush()
        raise KeyboardInterrupt
    return line


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
        return ErrorInfo(exc.error_type, exc.message, param=exc.param, id=id)
    errors = sys.modules.get("convrisk.api_client.errors")
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

    def __init__(
        self,
        fmt: str,
        *,
        env: Mapping[str, str],
        remote: bool = False,
        shape: Shape | None = None,
        json_errors: bool | None = None,
    ) -> None:
        self.fmt = fmt
        # Errors as one JSON line on stderr (default: with -o json and jsonl).
        self.json_errors = fmt in ("json", "jsonl") if json_errors is None else json_errors
        self.env = env
        self.remote = remote
        self.shape = shape  # --fields and --jq (cli/shape.py), None when neither was given
        self._no_color = bool(env.get("NO_COLOR")) or env.get("TERM") == "dumb"
        self._progress = False
        # Whether stdout's text so far ends inside a line (no newline yet), and whether stdout
        # and stderr are the same terminal: then stderr must not draw over that line.
        self._open_line = False
        self._shared: bool | None = None

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
        """`text` in a colour on stderr, when stderr is a terminal and colour is allowed."""
        if self._no_color or not self.stderr_is_terminal():
            return text
        return f"\x1b[{code}m{text}\x1b[0m"

    def styled(self, code: str, text: str) -> str:
        """`text` in a colour (SGR `code`) on stdout, when colour is allowed there."""
        if self._no_color or not self.stdout_is_terminal():
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
        except (OSError, AttributeError) as exc:
            raise _output_failed(exc) from None
        if text:
            self._open_line = not text.endswith("\n")

    def write_bytes(self, data: bytes) -> None:
        """Write bytes to stdout as they are (not through the text layer) and flush."""
        self._clear_progress()
        try:
            sys.stdout.flush()
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        except BrokenPipeError:
            raise StdoutClosed() from None
        except (OSError, AttributeError) as exc:
            raise _output_failed(exc) from None
        if data:
            self._open_line = not data.endswith(b"\n")

    def _inside_a_line(self) -> bool:
        """Whether stdout's last line is unfinished on the terminal that stderr writes to."""
        if not self._open_line:
            return False
        if self._shared is None:
            self._shared = (
                self.stdout_is_terminal()
                and self.stderr_is_terminal()
                and same_file(sys.stdout, sys.stderr)
            )
        return self._shared

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
        """A finished message (already safe) on stderr, on a line of its own."""
        self._own_line()
        self._stderr(text + "\n")

    def _own_line(self) -> None:
        """Wipe the progress indicator; end stdout's unfinished line on a shared terminal."""
        self._clear_progress()
        if self._inside_a_line():
            self._stderr("\n")
            self._open_line = False

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
        if self.json_errors:
            self._message(_json(info.body()))
        else:
            self._message(self._color("31", "Error:") + " " + shown(info.line()))

    def progress(self, text: str) -> None:
        """A one-line progress indicator on stderr, only when stderr is a terminal.

        It is drawn only at the start of a line: never over what stdout has printed on the same
        terminal (`-o json` on a terminal leaves a line open between pages), and it is wiped
        before anything else is printed.
        """
        if not self.stderr_is_terminal() or self._inside_a_line():
            return
        width = terminal_width(sys.stderr, self.env)
        self._progress = True  # first: a Ctrl-C during the write must still wipe it
        self._stderr("\r\x1b[K" + self._color("2", cut(text, width - 1)))

    def _clear_progress(self) -> None:
        if self._progress:
            self._progress = False
            self._stderr("\r\x1b[K")

    def can_ask(self, *, stdin_free: bool = True) -> bool:
        """Whether a question can be asked: stdin is a terminal (and free), or there is a
        controlling terminal (/dev/tty), as `xargs -p` asks."""
        if stdin_free and self.stdin_is_terminal():
            return True
        tty = controlling_terminal()
        if tty is None:
            return False
        tty.close()
        return True

    def confirm(self, question: str, *, stdin_free: bool = True) -> bool | None:
        """Ask a yes/no question (the default is no); None when there is no terminal to ask.

        On stdin's terminal when it is one and `stdin_free` (it does not carry the ids), the
        question on stderr; else on the controlling terminal. Ctrl-C or end of input at the
        question ends its line and raises KeyboardInterrupt.
        """
        prompt = shown(question) + " [y/N]: "
        self._own_line()
        if stdin_free and self.stdin_is_terminal():
            answer = ask(prompt, sys.stdin, sys.stderr)
        else:
            tty = controlling_terminal()
            if tty is None:
                return None
            with contextlib.closing(tty):
                answer = ask(prompt, tty, tty)
        return answer.strip().lower() in ("y", "yes")

    def ask_value(self, question: str, *, hidden: bool) -> str:
        """A line typed on the terminal (stdin), Enter finishing it; `hidden`: not echoed.

        Ctrl-C or end of input ends the question's line and raises KeyboardInterrupt.
        """
        self._own_line()
        if not hidden:
            return ask(shown(question), sys.stdin, sys.stderr)
        import getpass

        try:
            return getpass.getpass(shown(question), stream=sys.stderr)
        except (KeyboardInterrupt, EOFError):
            self._stderr("\n")
            raise KeyboardInterrupt from None

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
            sink.fail()
            raise
        sink.close()

    def _sink(self, kind: Kind, many: bool) -> Sink:
        if self.shape is not None:
            if self.shape.fields is not None:
                kind = kind.only(self.shape.fields)
            if self.shape.jq is not None:
                return JqSink(self, kind, many, self.shape.jq)
        if self.fmt == "json":
            if self.stdout_is_terminal():
                sink = ColouredJsonSink if not self._no_color else JsonSink
                return sink(self, kind, many, indent=2)
            return JsonSink(self, kind, many, indent=None)
        if self.fmt == "jsonl":
            return JsonlSink(self, kind, many)
        if self.fmt == "csv":
            return CsvSink(self, kind, many)
        if self.fmt == "id":
            return IdSink(self, kind, many)
        if kind.line is not None:
            return LineSink(self, kind, many)
        if self.stdout_is_terminal():
            return TerminalTableSink(self, kind, many) if many else DetailSink(self, kind, many)
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

    def answer(self, body: bytes) -> None:
        """The body of an answer to `convrisk api`: piped, as it was sent; on a terminal,
        indented (and coloured) when it is JSON, escaped text otherwise; through --jq if given."""
        if not body:
            return
        jq = self.shape.jq if self.shape is not None else None
        if jq is None and not self.stdout_is_terminal():
            self.write_bytes(body if body.endswith(b"\n") else body + b"\n")
            return
        text = body.decode("utf-8", errors="replace")
        if jq is not None:
            JqSink(self, ANSWER, False, jq).run_on(text)
            return
        from convrisk.api_client.records import load_json

        try:
            # Strict: a number no JSON output can hold (1e400) keeps the text as it came.
            value = load_json(text)
        except (ValueError, RecursionError):
            self.write(shown(text.rstrip("\n"), keep_newlines=True) + "\n")
            return
        with self.records(ANSWER, many=False) as sink:
            sink.write([value])

    def takes_json_text(self) -> bool:
        """Whether a list's pages may come as JSON text (`JsonPage`): its output is compact
        JSON, or the input of --jq."""
        if self.shape is not None:
            # --fields works on records; --jq alone reads the records' JSON text, which is
            # byte for byte what it would make of the records (`records.json_text`).
            return self.shape.fields is None and self.shape.jq is not None
        return self.fmt == "jsonl" or (self.fmt == "json" and not self.stdout_is_terminal())

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
        `--ending-before` goes on with `--ending-before`); a `{}` in it stands for the id as a
        value in a URL query, percent-encoded (`starting_after={} in PATH`). A listing that fails
        after printing something says on stderr how to go on from the last item printed, then
        fails as it would.
        """
        self._pages(kind, pages, hint_more=hint_more, text=False, cursor_option=cursor_option)

    def json_pages(
        self,
        kind: Kind,
        pages: Iterable[JsonPage],
        *,
        hint_more: bool,
        cursor_option: str = "--starting-after",
    ) -> None:
        """`pages` for pages of JSON text (when `takes_json_text()`): written as they are, or
        given to --jq as they are."""
        self._pages(kind, pages, hint_more=hint_more, text=True, cursor_option=cursor_option)

    def _pages(
        self,
        kind: Kind,
        pages: Iterable[Page[R]] | Iterable[JsonPage],
        *,
        hint_more: bool,
        text: bool,
        cursor_option: str,
    ) -> None:
        count = 0
        has_more = False
        last_id: str | None = None
        jq = self.shape is not None and self.shape.jq is not None
        try:
            with self.records(kind, many=True) as sink:
                for page in pages:
                    if text:
                        text_page = cast("JsonPage", page)
                        sink.write_json(text_page["data"])
                        ids = text_page["ids"]
                    else:
                        records = cast("Page[R]", page)["data"]
                        sink.write(records)
                        # `convrisk api --paginate` prints any items: only an id string counts.
                        ids = [
                            r["id"]
                            for r in records[-1:]
                            if isinstance(r, dict) and isinstance(r.get("id"), str)
                        ]
                    last_id = ids[-1] if ids else last_id
                    count += len(page["data"])
                    has_more = page["has_more"]
                    if has_more:
                        self.progress(f"{count} {kind.noun if count == 1 else kind.plural}...")
        except (StdoutClosed, JqFailed):
            # The reader left, or the --jq program failed: going on would fail the same way.
            raise
        except BaseException:
            if last_id is not None:
                noun = kind.noun if count == 1 else kind.plural
                if "{}" in cursor_option:
                    from urllib.parse import quote

                    # A value in a URL's query (`convrisk api`): pasted back, it must mean the same.
                    going_on = cursor_option.format(quote(last_id, safe=""))
                else:
                    going_on = f"{cursor_option} {last_id}"
                self.hint(
                    f"Stopped after {count} {noun}. To go on from there, run the same command "
                    f"with {going_on}."
                )
            raise
        self._clear_progress()
        if has_more and hint_more and last_id is not None:
            self.hint(
                f"More {kind.plural} exist: use --all, or --limit N, or "
                f"{cursor_option} {last_id} to see them."
            )
        elif count == 0 and self.fmt == "table" and self.stdout_is_terminal() and not jq:
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
        jq = printer.shape is not None and printer.shape.jq is not None
        self._summary = printer.fmt == "table" and printer.stdout_is_terminal() and not jq
        self._sink: Sink | None = None
        if not self._summary:
            if printer.fmt == "table" and not jq:
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
            self.printer.write(self.render(self.selected(rows)))
            self.count += len(rows)

    def selected(self, rows: Sequence[Row]) -> Sequence[Row]:
        """The rows with only the fields of --fields, if given (a missing one stays missing)."""
        if self.kind.fields is None:
            return rows
        from .shape import select

        return [select(row, self.kind.fields) for row in rows]

    def render(self, rows: Sequence[Row]) -> str:
        """The text of these rows."""
        raise NotImplementedError

    def write_json(self, texts: Sequence[str]) -> None:
        """Print rows given as their compact JSON text (`records.json_text`), as they are."""
        if texts:
            self.printer.write(self.render_json(texts))
            self.count += len(texts)

    def render_json(self, texts: Sequence[str]) -> str:
        """The text of rows given as compact JSON: what `render` gives for the same rows."""
        raise NotImplementedError(f"{type(self).__name__} does not take JSON text")

    def close(self) -> None:
        """Finish the output (close a JSON array, print a lone header)."""

    def fail(self) -> None:
        """Finish after an error: what was started is closed (a JSON array stays valid), but
        nothing is printed for a list that failed before its first page (it would be a lie)."""
        if self.count:
            self.close()


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

    def render_json(self, texts: Sequence[str]) -> str:
        """Array items with their separators, from compact JSON text (not indented output)."""
        if not self.many or self.indent is not None:
            raise NotImplementedError("indented or single-object JSON is written from records")
        return ("[" if self.count == 0 else ",") + _printable_json(",".join(texts))

    def close(self) -> None:
        """Close the array (an empty one when nothing was written)."""
        if not self.many:
            return
        if self.count == 0:
            self.printer.write("[]\n")
        else:
            self.printer.write("]\n" if self.indent is None else "\n]\n")


# A JSON token: a string (a key when a colon follows), a number, or a literal.
_JSON_TOKEN = re.compile(
    r'(?P<string>"(?:[^"\\]|\\.)*")(?P<colon>\s*:)?'
    r"|(?P<number>-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)"
    r"|(?P<literal>true|false|null)"
)


def colour_json(text: str) -> str:
    """JSON text with its keys, strings and null in colour (the text itself unchanged)."""

    def paint(match: re.Match[str]) -> str:
        if match.group("string") is not None:
            code = "1;34" if match.group("colon") else "32"
            return f"\x1b[{code}m{match.group('string')}\x1b[0m{match.group('colon') or ''}"
        if match.group("literal") == "null":
            return f"\x1b[2m{match.group()}\x1b[0m"
        return match.group()

    return _JSON_TOKEN.sub(paint, text)


class ColouredJsonSink(JsonSink):
    """Indented JSON on a terminal, syntax-coloured (never with NO_COLOR or when piped)."""

    def render(self, rows: Sequence[Row]) -> str:
        """The same text as JsonSink's, coloured."""
        return colour_json(super().render(rows))


class JsonlSink(Sink):
    """One compact JSON object per line."""

    def render(self, rows: Sequence[Row]) -> str:
        """One line per row."""
        return "".join(_json(row, separators=(",", ":")) + "\n" for row in rows)

    def render_json(self, texts: Sequence[str]) -> str:
        """One line per row, from compact JSON text."""
        return _printable_json("\n".join(texts) + "\n")


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


# A --jq program's results are written in pieces of about this many characters (a program may
# print far more than it reads).
JQ_CHUNK = 64 * 1024


class JqSink(Sink):
    """`--jq`: the program's results, one per line: strings raw (as `jq -r`), other values as
    compact JSON. Once per record, page by page, with -o jsonl; else once over the document (the
    array of a list or of several ids, the object of one record), when it is complete.

    On a terminal a string's control characters are shown escaped, except newline and tab
    (the layout of `@tsv` and of multi-line strings); piped, strings are written as they are.
    """

    def __init__(self, printer: Printer, kind: Kind, many: bool, program: JqProgram) -> None:
        super().__init__(printer, kind, many)
        self.program = program
        self.terminal = printer.stdout_is_terminal()
        self.pages: list[str] = []  # the document so far: each page's items (not `each`)

    def write(self, rows: Sequence[Row]) -> None:
        """Run the program on each record now, or keep the rows for the document."""
        if rows:
            from .shape import json_array

            self._take(json_array(self.selected(rows))[1:-1], len(rows))

    def write_json(self, texts: Sequence[str]) -> None:
        """`write` for records given as their compact JSON text (`records.json_text`): the
        same array text, without parsing and dumping the records again."""
        if texts:
            self._take(",".join(texts), len(texts))

    def _take(self, items: str, count: int) -> None:
        """A page's records as the items of a JSON array (without its brackets): run the
        program on each of them now, or keep them for the document."""
        self.count += count
        if self.program.each:
            self._print("[" + items + "]")
        else:
            self.pages.append(items)

    def close(self) -> None:
        """Run the program over the whole document (when not `each`)."""
        if self.program.each or (not self.many and not self.pages):
            return
        pages, self.pages = self.pages, []
        if not self.many:
            self._print(pages[0])  # the one record's object
            return
        # The pages' items between brackets, commas between: one copy of the text in all.
        parts = ["["]
        for page in pages:
            parts += (page, ",")
        if pages:
            parts.pop()  # the last comma
        parts.append("]")
        del pages
        document = "".join(parts)
        del parts
        self._print(document)

    def fail(self) -> None:
        """After an error: a document left incomplete is not given to the program."""
        self.pages = []

    def run_on(self, json_text: str) -> None:
        """Print the program's results over this JSON text (the body of `convrisk api`)."""
        self._print(json_text)

    def _print(self, json_text: str) -> None:
        """The program's results over this text, written in chunks (also those before an
        error of the program, as jq does)."""
        from .shape import ctrl_c_ends_at_once

        lines: list[str] = []
        size = 0
        terminal = self.terminal
        with ctrl_c_ends_at_once():
            try:
                for result in self.program.run(json_text):
                    if type(result) is str:
                        if terminal:
                            result = _shown_keeping_layout(result)
                    else:
                        result = _printable_json(result[0])
                    lines.append(result)
                    size += len(result) + 1
                    if size >= JQ_CHUNK:
                        self.printer.write("\n".join(lines) + "\n")
                        lines, size = [], 0
            finally:
                if lines:
                    self.printer.write("\n".join(lines) + "\n")


def _shown_keeping_layout(text: str) -> str:
    """`text` for a terminal: control characters escaped, except newlines and tabs."""
    if text.isascii() and text.isprintable():
        return text
    return "\t".join(shown(part, keep_newlines=True) for part in text.split("\t"))


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
        from convrisk.api_client.text import printable

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


# Between two columns of a terminal table.
GAP = "  "
# A text column is cut no narrower than this (or its title), before it is dropped.
TEXT_MIN = 8
# ... or, when it is the only column beside the id, to this.
SQUEEZE_MIN = 5
_DATE_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}")
DATE_WIDTH = len("2024-05-01")


def _char_width(char: str) -> int:
    import unicodedata

    if unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def cell_width(text: str) -> int:
    """How many terminal cells `text` (already printable) takes: wide characters take two."""
    if text.isascii():
        return len(text)
    return sum(_char_width(char) for char in text)


def cut(text: str, width: int) -> str:
    """`text` in at most `width` cells: cut with `…` when it is wider."""
    if cell_width(text) <= width:
        return text
    kept: list[str] = []
    used = 0
    for char in text:
        size = _char_width(char)
        if used + size > width - 1:
            break
        kept.append(char)
        used += size
    return "".join(kept) + "…"


def pad(text: str, width: int) -> str:
    """`text` followed by spaces up to `width` cells."""
    return text + " " * max(0, width - cell_width(text))


def fold(text: str, width: int) -> list[str]:
    """`text` as lines of at most `width` cells (a long value folded, nothing lost)."""
    if cell_width(text) <= width:
        return [text]
    lines: list[str] = []
    line: list[str] = []
    used = 0
    for char in text:
        size = _char_width(char)
        if used + size > width and line:
            lines.append("".join(line))
            line, used = [], 0
        line.append(char)
        used += size
    lines.append("".join(line))
    return lines


def _date_only(cell: str) -> str:
    return cell[:DATE_WIDTH] if _DATE_TIME.fullmatch(cell) else cell


@dataclass(frozen=True)
class Placed:
    """A column of a terminal table as laid out: its index, width, and whether dates only."""

    index: int
    width: int
    date_only: bool = False


def table_layout(kind: Kind, rows: Sequence[Sequence[str]], width: int) -> list[Placed]:
    """Which terminal columns fit `width` cells, how wide each is, which show dates only.

    Every row then fits one screen line. The id column is never cut. While the columns at full
    width do not fit, columns empty in every row go, then the time columns that
    `kind.narrowing` names first show their date only; then, while the columns cut to their
    minimum (a text column to TEXT_MIN or its title) still do not fit, the rest of
    `kind.narrowing` applies in order (dropping columns), and at last columns are dropped from
    the right (one text column beside the id may shrink to SQUEEZE_MIN). The cells left over
    share the spare width.
    """
    columns = kind.terminal_columns
    index = {column.key: i for i, column in enumerate(columns)}
    shown = list(range(len(columns)))
    dates: set[int] = set()

    def natural(i: int) -> int:
        cells = (_date_only(row[i]) if i in dates else row[i] for row in rows)
        return max([cell_width(columns[i].title), *map(cell_width, cells)])

    widths = {i: natural(i) for i in shown}

    def minimum(i: int) -> int:
        column = columns[i]
        if column.key == "id" or column.kind == "time":
            return widths[i]
        return min(widths[i], max(TEXT_MIN, cell_width(column.title)))

    def total(size: Callable[[int], int]) -> int:
        return sum(size(i) for i in shown) + len(GAP) * (len(shown) - 1)

    def apply(action: str, key: str) -> None:
        i = index[key]
        if i not in shown:
            return
        if action == "date":
            dates.add(i)
            widths[i] = natural(i)
        else:
            shown.remove(i)

    steps = list(kind.narrowing)
    empty = [i for i in shown if columns[i].key != "id" and not any(row[i] for row in rows)]
    while empty and total(widths.__getitem__) > width:
        shown.remove(empty.pop())
    while steps and steps[0][0] == "date" and total(widths.__getitem__) > width:
        apply(*steps.pop(0))
    while steps and total(minimum) > width:
        apply(*steps.pop(0))
    while len(shown) > 1 and total(minimum) > width:
        last = next(i for i in reversed(shown) if columns[i].key != "id")
        left = width - (total(minimum) - minimum(last))
        if len(shown) == 2 and left >= SQUEEZE_MIN and columns[last].kind == "text":
            widths[last] = left  # the one column beside the id gets what is left
            break
        shown.remove(last)
    size = {i: minimum(i) for i in shown}
    spare = width - total(size.__getitem__)
    growing = [i for i in shown if size[i] < widths[i]]
    while spare > 0 and growing:
        share = max(1, spare // len(growing))
        for i in list(growing):
            step = min(share, widths[i] - size[i], spare)
            size[i] += step
            spare -= step
            if size[i] >= widths[i]:
                growing.remove(i)
    return [Placed(i, size[i], i in dates) for i in shown]


class TerminalTableSink(Sink):
    """A table on a terminal: one screen line per row, cells cut with `…`, the id never cut.

    Rows are drawn a chunk at a time (the first chunk sets the layout and the header).
    """

    def __init__(self, printer: Printer, kind: Kind, many: bool) -> None:
        super().__init__(printer, kind, many)
        self.rows: list[list[str]] = []
        self.layout: list[Placed] | None = None

    def write(self, rows: Sequence[Row]) -> None:
        """Keep the rows; draw them when a chunk is full."""
        self.rows.extend([shown(c.cell(row)) for c in self.kind.terminal_columns] for row in rows)
        self.count += len(rows)
        if len(self.rows) >= TABLE_CHUNK:
            self._draw()

    def _line(self, cells: Sequence[str]) -> str:
        assert self.layout is not None
        parts = []
        for place in self.layout:
            text = cells[place.index]
            text = _date_only(text) if place.date_only else text
            parts.append(pad(cut(text, place.width), place.width))
        return GAP.join(parts).rstrip()

    def _draw(self) -> None:
        text = ""
        if self.layout is None:
            width = terminal_width(sys.stdout, self.printer.env)
            self.layout = table_layout(self.kind, self.rows, width)
            header = self._line([column.title for column in self.kind.terminal_columns])
            text = self.printer.styled("1", header) + "\n"
        text += "".join(self._line(cells) + "\n" for cells in self.rows)
        self.rows = []
        self.printer.write(text)

    def close(self) -> None:
        """Draw what is left."""
        if self.rows:
            self._draw()


# A label longer than this gets its value after it rather than in a column.
LABEL_MAX = 24
# The narrowest value column of an aligned detail view: a whole id fits.
VALUE_MIN = 32


class DetailSink(Sink):
    """One record on a terminal: every field on its own line, labelled by its name.

    Times are dates in UTC, `details` (any object or array) indented JSON, long values folded
    under the value column; every value shown escaped.
    """

    def render(self, rows: Sequence[Row]) -> str:
        """Each record's fields, a blank line between records."""
        return "\n".join(self._record(row) for row in rows)

    def _record(self, row: Row) -> str:
        times = {column.key for column in self.kind.columns if column.kind == "time"}
        labels = {key: shown(str(key)) for key in row}
        label_width = min(max(map(cell_width, labels.values()), default=0), LABEL_MAX)
        screen = terminal_width(sys.stdout, self.printer.env)
        indent = label_width + len(GAP)
        # Aligned values need room for a whole id; on a narrower screen each field is
        # `label: value`, its further lines indented under it.
        aligned = screen - indent >= VALUE_MIN
        lines = []
        for key, value in row.items():
            label, values = labels[key], detail_value(value, key in times, key)
            if aligned:
                folded = [part for line in values for part in fold(line, screen - indent)]
                lines.append(pad(label, label_width) + GAP + folded[0])
                lines.extend(" " * indent + line for line in folded[1:])
            else:
                first, *more = fold(f"{label}: {values[0]}", screen)
                lines.append(first)
                for line in ["".join(more), *values[1:]] if more else values[1:]:
                    lines.extend("  " + part for part in fold(line, screen - 2))
        return "".join(line.rstrip() + "\n" for line in lines)


def detail_value(value: object, is_time: bool, key: str = "") -> list[str]:
    """The lines of one value in the detail view (already printable)."""
    if value is None:
        return ["-"]
    if isinstance(value, bool):
        return ["true" if value else "false"]
    if isinstance(value, int | float) and (is_time or key.endswith("_at")):
        text = format_timestamp(value)
        return [text + " UTC" if _DATE_TIME.fullmatch(text) else text]
    if isinstance(value, dict | list):
        return _json(value, indent=2).split("\n")
    return [shown(str(value))]


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

    columns = env.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        width = os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, ValueError, OSError):
        width = 0
    return width if width > 0 else 80
