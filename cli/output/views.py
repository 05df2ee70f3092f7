"""What is shown on a terminal instead of a piped format: the table (one screen line per row,
the id never cut), the detail view of one record, and highlighted JSON. The table and the JSON
colours are drawn by rich (cli/output/draw.py), loaded only when one of these is drawn."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from convrisk.cli.output.cells import (
    DATE_TIME,
    cell_width,
    date_only,
    fold,
    format_cell,
    format_timestamp,
    json_text,
    pad,
    shown,
)
from convrisk.cli.output.kinds import Kind, Row
from convrisk.cli.output.layout import GAP, Placed, table_layout
from convrisk.cli.output.sinks import JsonSink, Out, Sink

if TYPE_CHECKING:
    from rich.console import Console

    from convrisk.cli.output.iostreams import IOStreams

# On a terminal a table is drawn for at most this many rows at a time.
TABLE_CHUNK = 1000


class TerminalTableSink(Sink):
    """A table on a terminal: one screen line per row, cells cut with `…`, the id never cut.

    Rows are drawn a chunk at a time (the first chunk sets the layout and the header).
    """

    def __init__(self, out: Out, kind: Kind, many: bool, streams: IOStreams) -> None:
        super().__init__(out, kind, many)
        self.streams = streams
        self.rows: list[list[str]] = []
        self.layout: list[Placed] | None = None
        self._console: Console | None = None

    def write(self, rows: Sequence[Row]) -> None:
        """Keep the rows; draw them when a chunk is full."""
        self.rows.extend([shown(c.cell(row)) for c in self.kind.terminal_columns] for row in rows)
        self.count += len(rows)
        if len(self.rows) >= TABLE_CHUNK:
            self._draw()

    def _draw(self) -> None:
        from convrisk.cli.output import draw

        header = self.layout is None
        if self.layout is None:
            width = self.streams.width("stdout")
            # Measured as rich measures what it draws: it then never cuts the id.
            self.layout = table_layout(self.kind, self.rows, width, draw.measure())
            self._console = draw.console(self.streams, "stdout", width)
        assert self._console is not None
        columns = self.kind.terminal_columns
        cells = [
            [date_only(row[p.index]) if p.date_only else row[p.index] for p in self.layout]
            for row in self.rows
        ]
        self.rows = []
        titles = [columns[p.index].title for p in self.layout]
        widths = [p.width for p in self.layout]
        self.out.write(draw.table(self._console, titles, widths, cells, header=header))

    def close(self) -> None:
        """Draw what is left."""
        if self.rows:
            self._draw()


class HighlightedJsonSink(JsonSink):
    """Indented JSON on a terminal with rich's JSON highlighting (never with NO_COLOR, never
    piped): the same text as JsonSink's."""

    def __init__(self, out: Out, kind: Kind, many: bool, streams: IOStreams) -> None:
        super().__init__(out, kind, many, indent=2)
        self.streams = streams
        self._console: Console | None = None

    def render(self, rows: Sequence[Row]) -> str:
        """The same text as JsonSink's, highlighted."""
        return self._highlighted(super().render(rows))

    def close(self) -> None:
        """Close the array (an empty one when nothing was written), highlighted."""
        if self.many:
            self.out.write(self._highlighted("[]\n" if self.count == 0 else "\n]\n"))

    def _highlighted(self, text: str) -> str:
        from convrisk.cli.output import draw

        if self._console is None:
            self._console = draw.console(self.streams, "stdout", self.streams.width("stdout"))
        return draw.highlighted_json(self._console, text)


# A label longer than this gets its value after it rather than in a column.
LABEL_MAX = 24
# The narrowest value column of an aligned detail view: a whole id fits.
VALUE_MIN = 32


class DetailSink(Sink):
    """One record on a terminal: every field on its own line, labelled by its name.

    Times are dates in UTC, `details` (any object or array) indented JSON, long values folded
    under the value column; every value shown escaped.
    """

    def __init__(self, out: Out, kind: Kind, many: bool, streams: IOStreams) -> None:
        super().__init__(out, kind, many)
        self.streams = streams

    def render(self, rows: Sequence[Row]) -> str:
        """Each record's fields, a blank line between records."""
        return "\n".join(self._record(row) for row in rows)

    def _record(self, row: Row) -> str:
        times = {column.key for column in self.kind.columns if column.kind == "time"}
        labels = {key: shown(str(key)) for key in row}
        label_width = min(max(map(cell_width, labels.values()), default=0), LABEL_MAX)
        screen = self.streams.width("stdout")
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
        return [text.removesuffix("Z") + " UTC" if DATE_TIME.fullmatch(text) else text]
    if isinstance(value, dict | list):
        return json_text(value, indent=2).split("\n")
    return [shown(format_cell(value, "text"))]
