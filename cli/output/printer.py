"""The printer, the only place that prints: every output format, errors, hints, progress and
questions, written to the streams of its IOStreams (terminal facts, cli/output/iostreams.py).

Formats: `table` (on a terminal, or piped when `-o table` asks for it, a table of one line per
row, or for one record a detail view with every field; tab-separated under a header line
otherwise), `json` (an object, or an array for lists and several ids), `jsonl`, `csv` and `id`.
Lists are written and flushed page by page, so `--all` starts printing at once in flat memory.
The sinks (cli/output/sinks.py, cli/output/views.py, cli/output/jq.py) make the text; what a person
sees on a
terminal is drawn by rich (cli/output/draw.py), loaded only then.

Every line a person reads goes through `shown()` (api_client.text.printable) in the sinks and
the message methods here, so that no command can let a control character from data reach the
terminal (DESIGN 4.2); where one line is meant (errors, hints, warnings, notices, status lines,
progress) a line break from data is escaped too, so that data cannot print a line of its own.
What an error means is decided in cli/errors.py; `error()` prints it.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

from convrisk.cli.errors import ErrorInfo, JqFailed, OutputFailed, StdoutClosed, UsageProblem
from convrisk.cli.output import cells
from convrisk.cli.output.cells import json_text, shown
from convrisk.cli.output.iostreams import IOStreams, ask
from convrisk.cli.output.kinds import ANSWER, Kind, Row
from convrisk.cli.output.sinks import (
    CsvSink,
    IdSink,
    JsonlSink,
    JsonSink,
    LineSink,
    NullSink,
    Sink,
    TsvSink,
)

if TYPE_CHECKING:
    import logging

    from rich.console import Console

    from convrisk.api_client.page import Page, View
    from convrisk.api_client.records import Record
    from convrisk.cli.output.fields import Shape

R = TypeVar("R", bound="Record")

# SGR codes of the one-line messages on stderr (drawn without rich: an error or a hint must not
# cost rich's import).
DIM, YELLOW, RED, BANNER = "2", "33", "31", "1;33"
# Between two tracebacks of a chain, as Python says it.
CAUSE = "The above exception was the direct cause of the following exception:"
CONTEXT = "During handling of the above exception, another exception occurred:"


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
        streams: IOStreams | None = None,
        chosen: bool = False,
        requests_only: bool = False,
    ) -> None:
        self.fmt = fmt
        # --as-curl: stdout holds the requests' curl lines only, never a record or an answer.
        self.requests_only = requests_only
        # Whether the format was asked for on this command line (-o): `-o table` draws the
        # table even when piped, and a format the command cannot print is a usage error (a
        # default from the settings gives way to `table` instead).
        self.chosen = chosen
        # Errors as one JSON line on stderr (default: with -o json and jsonl).
        self.json_errors = fmt in ("json", "jsonl") if json_errors is None else json_errors
        self.remote = remote
        self.shape = shape  # --fields and --jq (cli/output/fields.py), None when neither was given
        # The streams and what is known of them; by default the process's own, read from env.
        self.streams = IOStreams(env) if streams is None else streams
        self._progress = False
        self._progress_console: Console | None = None
        # Whether stdout's text so far ends inside a line (no newline yet), and whether stdout
        # and stderr are the same terminal: then stderr must not draw over that line.
        self._open_line = False
        self._shared: bool | None = None
        # Whether the note on numbers JSON cannot hold was printed (once a run).
        self._non_finite_noted = False
        cells.tell_non_finite(self._note_non_finite)

    # -- streams -------------------------------------------------------------------------------

    def stdout_is_terminal(self) -> bool:
        """Whether stdout is a terminal."""
        return self.streams.is_terminal("stdout")

    def stderr_is_terminal(self) -> bool:
        """Whether stderr is a terminal."""
        return self.streams.is_terminal("stderr")

    def stdin_is_terminal(self) -> bool:
        """Whether stdin is a terminal (someone can answer a question)."""
        return self.streams.is_terminal("stdin")

    def reading_stdin(self, what: str) -> None:
        """Say on stderr that `what` is now read from stdin, when stdin is a terminal (else the
        command would wait there without a word)."""
        if self.stdin_is_terminal():
            self.hint(f"Reading {what} from the terminal; end with Ctrl-D.")

    def _color(self, code: str, text: str) -> str:
        """`text` in a colour (SGR `code`) on stderr, when colour is allowed there."""
        if not self.streams.colour("stderr"):
            return text
        return f"\x1b[{code}m{text}\x1b[0m"

    def write(self, text: str) -> None:
        """Write to stdout and flush; a closed pipe stops the command quietly."""
        self.clear_progress()
        stdout = self.streams.stdout
        try:
            stdout.write(text)
            stdout.flush()
        except BrokenPipeError:
            raise StdoutClosed() from None
        except (OSError, AttributeError) as exc:
            raise self._output_failed(exc) from None
        if text:
            self._open_line = not text.endswith("\n")

    def write_bytes(self, data: bytes) -> None:
        """Write bytes to stdout as they are (not through the text layer) and flush."""
        self.clear_progress()
        stdout = self.streams.stdout
        try:
            stdout.flush()
            stdout.buffer.write(data)
            stdout.buffer.flush()
        except BrokenPipeError:
            raise StdoutClosed() from None
        except (OSError, AttributeError) as exc:
            raise self._output_failed(exc) from None
        if data:
            self._open_line = not data.endswith(b"\n")

    def _inside_a_line(self) -> bool:
        """Whether stdout's last line is unfinished on the terminal that stderr writes to."""
        if not self._open_line:
            return False
        if self._shared is None:
            self._shared = self.streams.same_terminal()
        return self._shared

    def _output_failed(self, exc: BaseException) -> OutputFailed:
        """The error of a write to stdout that failed: closed (`>&-`), a full disk, an I/O
        error."""
        if self.streams.stdout is None or isinstance(exc, AttributeError):
            return OutputFailed("stdout is closed: there is nowhere to print the output.")
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        return OutputFailed(f"Cannot write the output to stdout: {reason}.")

    def _stderr(self, text: str) -> None:
        stderr = self.streams.stderr
        try:
            stderr.write(text)
            stderr.flush()
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
        self.clear_progress()
        if self._inside_a_line():
            self._stderr("\n")
            self._open_line = False

    def notice(self, text: str) -> None:
        """A one-line message on stderr (a summary, a serve notice or log line): a line break
        in it is shown escaped, so data in it cannot print a line of its own."""
        self._message(shown(text))

    def block(self, text: str) -> None:
        """Several lines of our own on stderr (a help text): each line made safe."""
        self._message(shown(text, keep_newlines=True))

    def _note_non_finite(self) -> None:
        """The one note of a run whose output held numbers JSON cannot (cells.finite_json)."""
        if self._non_finite_noted:
            return
        self._non_finite_noted = True
        self.notice(
            "Note: numbers that JSON cannot hold (NaN, or too large for a float, such as 1e400) "
            'are printed as the strings "NaN", "Infinity" and "-Infinity".'
        )

    def traceback(self, exc: BaseException) -> None:
        """The traceback of `exc` on stderr (`--debug`): see `traceback_lines`."""
        self._message("\n".join(traceback_lines(exc)))

    def hint(self, text: str) -> None:
        """A one-line hint on stderr (dim on a terminal), never on stdout."""
        self._message(self._color(DIM, shown(text)))

    def warning(self, text: str) -> None:
        """A one-line warning on stderr."""
        self._message(self._color(YELLOW, "Warning:") + " " + shown(text))

    def error(self, info: ErrorInfo) -> None:
        """An error on stderr: one `Error: ...` line, or one JSON line with -o json/jsonl."""
        if self.json_errors:
            self._message(json_text(info.body()))
        else:
            self._message(self._color(RED, "Error:") + " " + shown(info.line()))

    def progress(self, text: str, *, done: float | None = None) -> None:
        """A one-line progress indicator on stderr (rich's Progress: a bar when `done`, 0 to 1,
        is known), only when stderr is a terminal.

        It is drawn only at the start of a line: never over what stdout has printed on the same
        terminal (`-o json` on a terminal leaves a line open between pages), and it is wiped
        before anything else is printed. It is drawn here, not by rich's Live: no thread writes
        while stdout does, and the cursor is never hidden (a killed run cannot leave it so).
        """
        if not self.stderr_is_terminal() or self._inside_a_line():
            return
        from convrisk.cli.output import draw

        if self._progress_console is None:
            width = self.streams.width("stderr") - 1  # the cursor stays on the line
            self._progress_console = draw.console(self.streams, "stderr", width)
        line = draw.progress_line(self._progress_console, shown(text), done)
        self._progress = True  # first: a Ctrl-C during the write must still wipe it
        self._stderr("\r\x1b[K" + line)

    def clear_progress(self) -> None:
        """Wipe the progress indicator, if drawn."""
        if self._progress:
            self._progress = False
            self._stderr("\r\x1b[K")

    def can_ask(self, *, stdin_free: bool = True) -> bool:
        """Whether a question can be asked: stdin is a terminal (and free), or there is a
        controlling terminal (/dev/tty), as `xargs -p` asks."""
        if stdin_free and self.stdin_is_terminal():
            return True
        tty = self.streams.controlling_terminal()
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
            answer = ask(prompt, self.streams.stdin, self.streams.stderr)
        else:
            tty = self.streams.controlling_terminal()
            if tty is None:
                return None
            with contextlib.closing(tty):
                answer = ask(prompt, tty, tty)
        return answer.strip().lower() in ("y", "yes")

    def banner(self, text: str) -> None:
        """A one-line banner on stderr before a write to a protected profile (bold on a
        terminal)."""
        self._message(self._color(BANNER, shown(text)))

    def type_back(self, question: str, *, stdin_free: bool = True) -> str | None:
        """Ask for a line to be typed back (as `confirm` chooses the terminal): the line as
        typed, "" at end of input, None when there is no terminal to ask on. Ctrl-C raises
        KeyboardInterrupt."""
        prompt = shown(question)
        self._own_line()
        if stdin_free and self.stdin_is_terminal():
            answer = ask(prompt, self.streams.stdin, self.streams.stderr, eof_is_answer=True)
        else:
            tty = self.streams.controlling_terminal()
            if tty is None:
                return None
            with contextlib.closing(tty):
                answer = ask(prompt, tty, tty, eof_is_answer=True)
        return answer

    def ask_value(self, question: str, *, hidden: bool) -> str:
        """A line typed on the terminal (stdin), Enter finishing it; `hidden`: not echoed.

        Ctrl-C or end of input ends the question's line and raises KeyboardInterrupt.
        """
        self._own_line()
        if not hidden:
            return ask(shown(question), self.streams.stdin, self.streams.stderr)
        import getpass

        try:
            return getpass.getpass(shown(question), stream=self.streams.stderr)
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
        sink = self.sink(kind, many)
        try:
            yield sink
        except BaseException:
            sink.fail()
            raise
        sink.close()

    def format_for(self, kind: Kind) -> str:
        """The format rows of `kind` are printed in: this printer's, or `table` when the
        settings' default is one that `kind` cannot print; a usage error when -o asked for it.
        """
        if kind.formats is None or self.fmt in kind.formats:
            return self.fmt
        if self.chosen:
            raise UsageProblem(
                f"-o {self.fmt} cannot print {kind.plural}: use "
                f"{', '.join(kind.formats[:-1])} or {kind.formats[-1]}.",
                param="--output",
            )
        return "table"

    def sink(self, kind: Kind, many: bool) -> Sink:
        """The sink of this format for rows of `kind` (see `records`)."""
        fmt = self.format_for(kind)
        if self.requests_only:
            return NullSink(self, kind, many)
        # The --jq and terminal sinks are imported when chosen: a piped format loads neither.
        if self.shape is not None:
            if self.shape.fields is not None:
                kind = kind.only(self.shape.fields)
            if self.shape.jq is not None:
                from convrisk.cli.output.jq import JqSink

                return JqSink(self, kind, many, self.shape.jq, terminal=self.stdout_is_terminal())
        terminal = self.stdout_is_terminal()
        if fmt == "json":
            if not terminal:
                return JsonSink(self, kind, many, indent=None)
            if self.streams.colour("stdout"):
                from convrisk.cli.output.views import HighlightedJsonSink

                return HighlightedJsonSink(self, kind, many, self.streams)
            return JsonSink(self, kind, many, indent=2)
        if fmt == "jsonl":
            return JsonlSink(self, kind, many)
        if fmt == "csv":
            return CsvSink(self, kind, many)
        if fmt == "id":
            return IdSink(self, kind, many)
        if kind.line is not None:
            return LineSink(self, kind, many)
        if not terminal and not self.chosen:
            return TsvSink(self, kind, many)
        from convrisk.cli.output.views import DetailSink, TerminalTableSink

        if many:
            return TerminalTableSink(self, kind, many, self.streams)
        return DetailSink(self, kind, many, self.streams)

    def one(self, kind: Kind, row: Row) -> None:
        """A single object (create, or get/update with one id)."""
        with self.records(kind, many=False) as sink:
            sink.write([row])

    def answer(self, body: bytes) -> None:
        """The body of an answer to `convrisk api`: piped, as it was sent; on a terminal,
        indented (and coloured) when it is JSON, escaped text otherwise; through --jq if given."""
        if not body or self.requests_only:
            return
        jq = self.shape.jq if self.shape is not None else None
        terminal = self.stdout_is_terminal()
        if not terminal or jq is not None:
            # Piped, JSON stays JSON: a body holding NaN, Infinity or 1e400 is written again with
            # each as a string (and a note); any other body goes as it was sent.
            finite = _finite_text(body)
            if finite is not None:
                body = finite.encode("utf-8")
        if jq is None and not terminal:
            self.write_bytes(body if body.endswith(b"\n") else body + b"\n")
            return
        text = body.decode("utf-8", errors="replace")
        if jq is not None:
            from convrisk.cli.output.jq import JqSink

            JqSink(self, ANSWER, False, jq, terminal=self.stdout_is_terminal()).run_on(text)
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

    def view(self) -> View:
        """What this output reads of a list's pages (api_client.page): ids alone for `-o id`,
        JSON text for compact JSON or the input of --jq, else the records."""
        if self.shape is not None:
            # --fields works on records; --jq alone reads the records' JSON text, which is
            # byte for byte what it would make of the records (`records.json_text`).
            return "json" if self.shape.fields is None and self.shape.jq is not None else "records"
        if self.fmt == "id":
            return "ids"
        if self.fmt == "jsonl" or (self.fmt == "json" and not self.stdout_is_terminal()):
            return "json"
        return "records"

    def pages(
        self,
        kind: Kind,
        pages: Iterable[Page[R]],
        *,
        hint_more: bool,
        view: View = "records",
        cursor_option: str = "--starting-after",
    ) -> None:
        """Every page of a list as it arrives, its `view` written (see `view()`); a hint on
        stderr when more items exist.

        `cursor_option` is the option that continues after the last item printed (the walk of
        `--ending-before` goes on with `--ending-before`); a `{}` in it stands for the id as a
        value in a URL query, percent-encoded (`starting_after={} in PATH`). A listing that fails
        after printing something says on stderr how to go on from the last item printed, then
        fails as it would.
        """
        count = 0
        has_more = False
        last_id: str | None = None
        jq = self.shape is not None and self.shape.jq is not None
        try:
            with self.records(kind, many=True) as sink:
                for page in pages:
                    if view == "ids":
                        ids = page.ids
                        sink.write_ids(ids)
                        size = len(ids)
                    elif view == "json":
                        texts = page.json_texts
                        if page.non_finite:
                            self._note_non_finite()
                        sink.write_json(texts)
                        ids = page.ids
                        size = len(ids)
                    else:
                        records = page.records
                        sink.write(records)
                        # `convrisk api --paginate` prints any items: only an id string counts.
                        ids = [
                            r["id"]
                            for r in records[-1:]
                            if isinstance(r, dict) and isinstance(r.get("id"), str)
                        ]
                        size = len(records)
                    last_id = ids[-1] if ids else last_id
                    count += size
                    has_more = page.has_more
                    if has_more:
                        noun = kind.noun if count == 1 else kind.plural
                        self.progress(f"{count:,} {noun}...")
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
        self.clear_progress()
        if has_more and hint_more and last_id is not None:
            self.hint(
                f"More {kind.plural} exist: use --all, or --limit N, or "
                f"{cursor_option} {last_id} to see them."
            )
        elif count == 0 and self.fmt == "table" and self.stdout_is_terminal() and not jq:
            self.hint(f"No {kind.plural}.")


# What a number JSON cannot hold looks like in JSON text: NaN, Infinity, or an exponent of three
# digits or more, or 300 digits running (either may overflow a float). Bytes without any of these
# (nearly every body) are written as they are, after one pass of the regex engine.
_MAY_NOT_BE_FINITE = re.compile(rb"NaN|Infinity|[0-9][eE]\+?0*[1-9][0-9]{2}|[0-9]{300}")


def _finite_text(body: bytes) -> str | None:
    """A JSON body holding a number that JSON cannot hold, as compact JSON with each such
    number a string (cells.finite_json, which says so on stderr); None for any other body
    (written on as it is)."""
    if _MAY_NOT_BE_FINITE.search(body) is None:
        return None
    import json

    try:
        value = json.loads(body)  # Python's reader takes NaN and Infinity; 1e400 reads as inf
    except (ValueError, RecursionError):
        return None  # not JSON: the body goes as it came
    try:
        json.dumps(value, allow_nan=False)
    except ValueError:
        return json_text(value, separators=(",", ":"))  # escaped as every JSON output is
    return None


def traceback_lines(exc: BaseException) -> list[str]:
    """The lines of a traceback, each safe for a terminal.

    The frames keep their lines (file, line, code), each escaped; every exception's own text
    (`Type: message`, with its notes), which may carry data such as a service's message, is
    one line, its line breaks shown as `\\n`: a message cannot print a line that looks like
    the traceback's, or like convrisk's.
    """
    import traceback

    lines: list[str] = []
    seen: set[int] = set()
    chain: list[tuple[str | None, traceback.TracebackException]] = []
    current: traceback.TracebackException | None = traceback.TracebackException.from_exception(exc)
    label: str | None = None
    while current is not None and id(current) not in seen and len(chain) < 100:
        seen.add(id(current))
        chain.append((label, current))
        if current.__cause__ is not None:
            label, current = CAUSE, current.__cause__
        elif current.__context__ is not None and not current.__suppress_context__:
            label, current = CONTEXT, current.__context__
        else:
            current = None
    for label, part in reversed(chain):
        if part.stack:
            lines.append("Traceback (most recent call last):")
            lines.extend(
                shown(line, keep_newlines=True)
                for frame in part.stack.format()
                for line in frame.rstrip("\n").split("\n")
            )
        lines.append(shown("".join(part.format_exception_only()).rstrip("\n")))
        if label is not None:
            lines += ["", label, ""]
    return lines


def debug_handler() -> logging.Handler:
    """A stderr handler for `--debug` (the loggers never see the token); data shown escaped."""
    import logging

    class Printable(logging.Formatter):
        """Each record's message as one line (paths, ids and messages carry data); a traceback
        attached to it as the lines of `traceback_lines`."""

        def format(self, record: logging.LogRecord) -> str:
            """The usual line, made safe for the terminal."""
            record.message = record.getMessage()
            line = shown(self.formatMessage(record))
            if record.exc_info and record.exc_info[1] is not None:
                return "\n".join([line, *traceback_lines(record.exc_info[1])])
            return line

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(Printable("debug: %(name)s: %(message)s"))
    return handler
