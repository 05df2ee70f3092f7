"""The report of an import as it runs: one result per record, failures on stderr, a progress
bar on a terminal, and the counts once at the end, in the words of the statuses."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager

from convrisk.cli.errors import ErrorInfo, StdoutClosed
from convrisk.cli.output.kinds import Column, Kind, Row
from convrisk.cli.output.printer import Printer
from convrisk.cli.output.sinks import JsonlSink, Sink


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
# What each record's result says: written (created, updated), answered from an earlier identical
# request with nothing new written (replayed), answered so for a record deleted since, which is
# not there (gone: a remote service that keeps a deleted record's key), or not done (failed).
STATUSES = ("created", "updated", "replayed", "gone", "failed")
# Counted only when some record has it: the local store and serve never answer it.
_COUNTED_WHEN_MET = frozenset({"gone"})


def _result_line(row: Row) -> list[str]:
    return [f"line {row.get('line')}: {row.get('status')} {row.get('id')}"]


# On a terminal: one readable line per record done (a failure is an `Error:` line on stderr).
IMPORT_LINES = Kind(
    "import result", "import results", _RESULT_COLUMNS, _RESULT_COLUMNS, line=_result_line
)


def counted(n: int, noun: str) -> str:
    """`1 record`, `2 records`, `20,000 records`."""
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def counts_text(counts: Mapping[str, int]) -> str:
    """`3 records: 2 created, 1 updated, 0 replayed, 0 failed` (`gone` only when met)."""
    shown = [s for s in counts if counts[s] or s not in _COUNTED_WHEN_MET]
    parts = ", ".join(f"{counts[status]:,} {status}" for status in shown)
    return f"{counted(sum(counts.values()), 'record')}: {parts}"


@contextmanager
def import_report(
    printer: Printer, kind: Kind, name: str, size: int | None, position: Callable[[], int]
) -> Iterator[ImportReport]:
    """The report of an import (see ImportReport); finished even after an error, saying then
    how to go on."""
    report = ImportReport(printer, kind, name, size, position)
    try:
        yield report
    except StdoutClosed:
        raise
    except BaseException:
        report.close(finished=False)
        raise
    report.close(finished=True)


class ImportReport:
    """The results of an import as they come, in file order: one row per record on stdout (JSON
    lines when the table format is piped; on a terminal a readable line per record done), each
    failure on stderr naming its line, a progress bar while stderr is a terminal, and at the
    end the counts, once, on stderr (with the time and rate on a terminal).

    `size` is the file's size in bytes when known and `position` how much of it has been read,
    for the bar.
    """

    _STATUSES = STATUSES

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
        self._terminal = printer.fmt == "table" and printer.stdout_is_terminal() and not jq
        self._sink: Sink
        if self._terminal:
            self._sink = printer.sink(IMPORT_LINES, True)
        elif printer.fmt == "table" and not jq:
            self._sink = JsonlSink(printer, IMPORT_RESULTS, True)
        else:
            self._sink = printer.sink(IMPORT_RESULTS, True)
        self._started = time.monotonic()
        self._drawn = 0.0

    @property
    def total(self) -> int:
        """Records reported so far."""
        return sum(self.counts.values())

    def add(self, rows: Sequence[Row]) -> None:
        """Report these results (in file order): failures (and gone records) on stderr, rows on
        stdout."""
        if not rows:
            return
        # In file order on a shared terminal: the rows before a failure, then its error line.
        pending: list[Row] = []
        for row in rows:
            self.counts[row["status"]] += 1
            self.last_line = row["line"]
            if "error" not in row:
                pending.append(row)
                continue
            if not self._terminal:
                pending.append(row)
            self._write(pending)
            pending = []
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
        self._write(pending)
        self._draw()

    def _write(self, rows: list[Row]) -> None:
        if rows:
            self._sink.write(rows)

    def _draw(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._drawn < 0.1:
            return
        self._drawn = now
        counts = ", ".join(f"{self.counts[s]:,} {s}" for s in self._STATUSES if self.counts[s])
        text = counted(self.total, "record") + (f" ({counts})" if counts else "")
        done = min(self.position() / self.size, 1.0) if self.size else None
        self.printer.progress(text, done=done)

    def close(self, *, finished: bool) -> None:
        """End the output; the counts once on stderr (on a terminal with the file, the time and
        the rate). When not `finished` (interrupted, or stopped by an error that is not one
        record's), say how to finish."""
        self._sink.close()
        self.printer.clear_progress()
        seconds = time.monotonic() - self._started
        summary = counts_text(self.counts)
        if self._terminal and finished:
            rate = f", {self.total / seconds:,.0f} records/s" if seconds > 0 and self.total else ""
            summary = f"{summary}; {seconds:.1f} s{rate}"
        self.printer.notice(summary + ".")
        if self.counts["replayed"]:
            self.printer.hint(
                "Replayed: created by an earlier import of the same records (within 24 hours); "
                "nothing new was written. To create them again, set CONVRISK_IMPORT_RUN to a "
                "new value."
            )
        if self.counts["gone"]:
            self.printer.hint(
                f"Gone: the service replayed the answer of an earlier import for "
                f"{counted(self.counts['gone'], 'record')} deleted since, and wrote nothing. To "
                "create them again, import only those lines with CONVRISK_IMPORT_RUN set to a "
                "new value (the whole file under a new value would create the others again too)."
            )
        if not finished:
            after = f" after line {self.last_line}" if self.last_line else ""
            self.printer.hint(
                f"The import stopped{after}. Run the same command again to finish: records "
                "already created are replayed, not created twice (within the 24 hours the "
                "service keeps their idempotency keys)."
            )
