"""The sinks: where the rows of one command go, in one format (JSON, JSON lines, ids, readable
lines, TSV, CSV). They make text and hand it to the printer; rich is never imported here."""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from typing import Protocol

from convrisk.cli.output.cells import csv_cell, json_text, printable_json, shown, tsv_line
from convrisk.cli.output.kinds import Kind, Row


class Out(Protocol):
    """Where a sink's text goes: the printer's stdout."""

    def write(self, text: str) -> None: ...


class Sink:
    """Where the rows of one command go, in one format."""

    def __init__(self, out: Out, kind: Kind, many: bool) -> None:
        self.out = out
        self.kind = kind
        self.many = many
        self.count = 0
        self.failed = 0  # ids that failed (reported on stderr), set by the caller

    def write(self, rows: Sequence[Row]) -> None:
        """Print these rows now (one page, or one object)."""
        if rows:
            self.out.write(self.render(self.selected(rows)))
            self.count += len(rows)

    def selected(self, rows: Sequence[Row]) -> Sequence[Row]:
        """The rows with only the fields of --fields, if given (a missing one stays missing)."""
        if self.kind.fields is None:
            return rows
        from convrisk.cli.output.fields import select

        return [select(row, self.kind.fields) for row in rows]

    def render(self, rows: Sequence[Row]) -> str:
        """The text of these rows."""
        raise NotImplementedError

    def write_json(self, texts: Sequence[str]) -> None:
        """Print rows given as their compact JSON text (`records.json_text`), as they are."""
        if texts:
            self.out.write(self.render_json(texts))
            self.count += len(texts)

    def render_json(self, texts: Sequence[str]) -> str:
        """The text of rows given as compact JSON: what `render` gives for the same rows."""
        raise NotImplementedError(f"{type(self).__name__} does not take JSON text")

    def write_ids(self, ids: Sequence[str]) -> None:
        """Print rows given as their ids alone (`-o id`)."""
        raise NotImplementedError(f"{type(self).__name__} does not take ids alone")

    def close(self) -> None:
        """Finish the output (close a JSON array, print a lone header)."""

    def fail(self) -> None:
        """Finish after an error: what was started is closed (a JSON array stays valid), but
        nothing is printed for a list that failed before its first page (it would be a lie)."""
        if self.count:
            self.close()


class NullSink(Sink):
    """No rows at all (`--as-curl`: a request shown and not sent has no answer to print)."""

    def write(self, rows: Sequence[Row]) -> None:
        """Print nothing."""

    def write_json(self, texts: Sequence[str]) -> None:
        """Print nothing."""

    def write_ids(self, ids: Sequence[str]) -> None:
        """Print nothing."""


class JsonSink(Sink):
    """An object, or an array streamed item by item; indented on a terminal."""

    def __init__(self, out: Out, kind: Kind, many: bool, *, indent: int | None) -> None:
        super().__init__(out, kind, many)
        self.indent = indent

    def _dump(self, row: Row) -> str:
        if self.indent is None:
            return json_text(row, separators=(",", ":"))
        return json_text(row, indent=self.indent)

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
        return ("[" if self.count == 0 else ",") + printable_json(",".join(texts))

    def close(self) -> None:
        """Close the array (an empty one when nothing was written)."""
        if not self.many:
            return
        if self.count == 0:
            self.out.write("[]\n")
        else:
            self.out.write("]\n" if self.indent is None else "\n]\n")


class JsonlSink(Sink):
    """One compact JSON object per line."""

    def render(self, rows: Sequence[Row]) -> str:
        """One line per row."""
        return "".join(json_text(row, separators=(",", ":")) + "\n" for row in rows)

    def render_json(self, texts: Sequence[str]) -> str:
        """One line per row, from compact JSON text."""
        return printable_json("\n".join(texts) + "\n")


class IdSink(Sink):
    """Ids only, one per line."""

    def render(self, rows: Sequence[Row]) -> str:
        """One id per line (control characters escaped, so one id is one line); rows without
        one (a planned create, a failed import record) are left out."""
        key = self.kind.id_key
        return "".join(shown(str(row[key])) + "\n" for row in rows if row.get(key) is not None)

    def write_ids(self, ids: Sequence[str]) -> None:
        """Print rows given as their ids alone: what `write` prints for the same rows."""
        if ids:
            self.out.write("".join(shown(id) + "\n" for id in ids))
            self.count += len(ids)


class LineSink(Sink):
    """Readable lines per row, made by the kind's `line` function; each is one screen line,
    escaped whole (a line break from data shows as `\\n`, never starts a line)."""

    def render(self, rows: Sequence[Row]) -> str:
        """The lines of each row."""
        line = self.kind.line
        assert line is not None
        return "".join(shown(part) + "\n" for row in rows for part in line(row))


class HeaderSink(Sink):
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
            self.out.write(self.header())


class TsvSink(HeaderSink):
    """Tab-separated columns under a header line of field names; nothing cut or wrapped.

    Every field is printable(..., escape_backslash=True): one row is one line, a tab always
    separates fields, and api_client.text.unprintable() gives each value back exactly.
    """

    def header(self) -> str:
        """Field names."""
        return "\t".join(column.key for column in self.kind.columns) + "\n"

    def body(self, rows: Sequence[Row]) -> str:
        """One line per row."""
        return "".join(tsv_line([c.cell(row) for c in self.kind.columns]) for row in rows)


class CsvSink(HeaderSink):
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
