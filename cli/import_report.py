"""The report of an import as it runs: one result per record, failures on stderr, a progress
bar on a terminal, the counts and (on a terminal) a summary at the end."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager

from .errors import StdoutClosed
from .kinds import Column, Kind, Row
from .output import ErrorInfo, Printer
from .sinks import JsonlSink, Sink


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
                self._sink = printer.sink(IMPORT_RESULTS, True)
        self._started = time.monotonic()
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
        now = time.monotonic()
        if not force and now - self._drawn < 0.1:
            return
        self._drawn = now
        counts = ", ".join(f"{self.counts[s]:,} {s}" for s in self._STATUSES if self.counts[s])
        text = f"{self.total:,} records" + (f" ({counts})" if counts else "")
        done = min(self.position() / self.size, 1.0) if self.size else None
        self.printer.progress(text, done=done)

    def close(self, *, finished: bool) -> None:
        """End the output; the counts on stderr (and the summary on a terminal). When not
        `finished` (interrupted, or stopped by an error that is not one record's), say how to
        finish."""
        if self._sink is not None:
            self._sink.close()
        self.printer.clear_progress()
        seconds = time.monotonic() - self._started
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
