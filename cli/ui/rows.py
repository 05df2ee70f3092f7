"""The rows of `convrisk ui`: a resource's table (a window of pages around the cursor, columns
laid out for the width), its filter and its detail pane."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import DataTable, Input, Static

from convrisk.api_client.resources import Resource
from convrisk.cli.errors import UsageProblem
from convrisk.cli.output.cells import date_only, format_timestamp, json_text, shown
from convrisk.cli.output.kinds import Kind
from convrisk.cli.output.layout import Placed, table_layout
from convrisk.cli.output.resource_kinds import KINDS

Record = Mapping[str, Any]


# Rows asked for at a time (default); the next page is asked for when the cursor is this near
# the end.
PAGE = 50
NEAR_END = 10
WINDOW_PAGES = 4  # pages of rows held at a time, around the cursor
TABLE_SPARE = 3 + 2  # the mark column with its padding, and the vertical scrollbar
MARK = "*"


# The characters of a value shown in a cell, and in the detail pane: a service's megabytes in one
# field would hold the screen for seconds at each render (5 MB: 9 s to the first rows).
CELL_CHARS = 500
DETAIL_CHARS = 20_000


def safe(text: str) -> Text:
    """Text from data as one literal line: control characters escaped, no markup read."""
    return Text(shown(clipped(text, CELL_CHARS)))


def clipped(text: str, most: int) -> str:
    """`text`, or its first `most` characters and how many more there are."""
    if len(text) <= most:
        return text
    return f"{text[:most]}… ({len(text) - most:,} more characters)"


def parse_filters(resource: Resource, text: str) -> dict[str, Any]:
    """The filters of `list` from `--muted --contact-id c_1` (a bare word: the first string
    filter's value: contact or customer id; a record's id alone: `id`, that record only); a
    UsageProblem names what is wrong."""
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise UsageProblem(f"The filter cannot be read: {exc}.") from exc
    if len(words) == 1 and words[0].startswith(resource.prefix):
        return {"id": words[0]}
    filters: dict[str, Any] = {}
    by_option = {f.option: f for f in resource.filters}
    bare = next(f for f in resource.filters if f.type == "string" and f.name != "group_id")
    position = 0
    while position < len(words):
        word = words[position]
        position += 1
        negated = word.startswith("--not-")
        option = "--" + word[len("--not-") :] if negated else word
        found = by_option.get(option)
        if not word.startswith("-"):
            filters[bare.name] = word
        elif found is None or (negated and found.type != "boolean"):
            known = ", ".join(option_names(resource))
            raise UsageProblem(f"No such filter: {word}. The filters: {known}.")
        elif found.type == "boolean":
            filters[found.name] = not negated
        elif position >= len(words) or not words[position]:
            raise UsageProblem(f"{word} needs a value.")
        else:
            filters[found.name] = words[position]
            position += 1
    return filters


def option_names(resource: Resource) -> list[str]:
    names = []
    for f in resource.filters:
        names.append(f"{f.option}/--not-{f.option[2:]}" if f.type == "boolean" else f.option)
    return names


def detail_text(kind: Kind, record: Record) -> Text:
    """Every field of a record, one per line: times in UTC, objects as indented JSON."""
    lines = Text()
    for column in kind.columns:
        value = record.get(column.key)
        if column.kind == "time" and value is not None:
            text = f"{format_timestamp(value)} ({value})"  # a service may send any string
            shown_value = shown(clipped(text, DETAIL_CHARS))
        elif isinstance(value, dict | list):
            text = json_text(value, indent=2)
            shown_value = "\n" + shown(clipped(text, DETAIL_CHARS), keep_newlines=True)
        else:
            shown_value = shown(clipped(column.cell(record), DETAIL_CHARS))
        lines.append(f"{column.key}: ", style="bold")
        lines.append(shown_value + "\n")
    return lines


class Shown(Static):
    """A Static that keeps the text it shows, to be read back."""

    def __init__(self, text: Text | None = None, **options: Any) -> None:
        self.shown_text = Text("") if text is None else text
        super().__init__(self.shown_text, **options)

    def show(self, text: Text) -> None:
        """Show this text instead."""
        self.shown_text = text
        self.update(text)


class RowsTable(DataTable[Text]):
    """The rows of a view; a new width lays its columns out again."""

    def on_resize(self) -> None:
        for view in self.ancestors:
            if isinstance(view, RecordsView):
                view.lay_out()


class RecordsView(Vertical):
    """One resource's rows, its filter and its detail pane. Only a window of a few pages around
    the cursor is held: pages far from it are dropped and asked for again (by cursor, either
    way) when the cursor comes back, so memory stays flat however far one scrolls."""

    def __init__(self, resource: Resource, page_size: int = PAGE) -> None:
        super().__init__(id=f"view-{resource.name}")
        self.resource = resource
        self.kind = KINDS[resource.name]
        self.window = WINDOW_PAGES * page_size
        self.rows: list[dict[str, Any]] = []  # the window, in the table's order
        self.records: dict[str, dict[str, Any]] = {}  # the window's records by id
        self.marked: dict[str, dict[str, Any]] = {}  # kept even when their rows are dropped
        self.filters: dict[str, Any] = {}
        self.after: str | None = None
        self.has_more = True
        self.has_before = False  # rows above the window were dropped
        self.seen = 0  # rows loaded since the last clear
        self.fetching = False
        self.started = False
        self.generation = 0
        self.placed: list[Placed] = []  # the columns shown (the id's always), their widths

    def compose(self) -> ComposeResult:
        yield Input(placeholder=" ".join(option_names(self.resource)), classes="filter")
        with Horizontal():
            yield RowsTable(cursor_type="row", zebra_stripes=True)
            with VerticalScroll(classes="detail"):
                yield Shown(classes="detail-text")

    def on_mount(self) -> None:
        self.query_one(Input).display = False

    @property
    def table(self) -> DataTable[Text]:
        return self.query_one(DataTable)

    def layout_for(self, rows: Sequence[Record]) -> list[Placed]:
        """The columns that fit the table's width, as the `list` table chooses them: the least
        useful give way first, the id is never cut."""
        columns = self.kind.terminal_columns
        cells = [[shown(c.cell(record)) for c in columns] for record in rows]
        # A cell of padding either side of each column: table_layout's gap of 2 between
        # columns, and 2 more for the first column.
        width = self.table.size.width - TABLE_SPARE - 2
        return table_layout(self.kind, cells, max(1, width))

    def lay_out(self, rows: list[dict[str, Any]] | None = None) -> None:
        """The columns laid out again for the table's width and these rows (or those shown)."""
        rows = self.rows if rows is None else rows
        placed = self.layout_for(rows)
        if placed == self.placed and rows is self.rows:
            return
        self.placed = placed
        table = self.table
        current = self.current_id()
        table.clear(columns=True)
        table.add_column(" ", key="mark")
        columns = self.kind.terminal_columns
        for place in placed:
            column = columns[place.index]
            table.add_column(column.title, key=column.key, width=place.width)
        self.rows = []
        self.records = {}
        if rows:
            self.show_rows(rows, keep=current)

    def cells(self, record: Record) -> list[Text]:
        """A row's cells, the mark first."""
        mark = MARK if record.get("id") in self.marked else " "
        columns = self.kind.terminal_columns
        shown_cells = []
        for place in self.placed:
            text = shown(clipped(columns[place.index].cell(record), CELL_CHARS))
            shown_cells.append(Text(date_only(text) if place.date_only else text))
        return [Text(mark), *shown_cells]

    def column_keys(self) -> list[str]:
        """The keys of the table's columns, the mark first."""
        columns = self.kind.terminal_columns
        return ["mark", *(columns[place.index].key for place in self.placed)]

    @property
    def before(self) -> str | None:
        """The cursor for the page above the window, when rows there were dropped."""
        return str(self.rows[0].get("id", "")) if self.has_before and self.rows else None

    def unseen(self, page: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """The records of a page not shown yet, each id once (a service may repeat one)."""
        ids = set(self.records)
        new = []
        for record in page:
            id = str(record.get("id", ""))
            if id and id not in ids:
                ids.add(id)
                new.append(record)
        return new

    def keeps_cursor(self, page: Sequence[dict[str, Any]], *, up: bool) -> bool:
        """Whether the page (above the window: `up`) can be added without dropping the row
        under the cursor: one asked for at one edge may come when the cursor is at the other."""
        current = self.current_id()
        extra = len(self.rows) + len(self.unseen(page)) - self.window
        if current is None or extra <= 0:
            return True
        dropped = self.rows[len(self.rows) - extra :] if up else self.rows[:extra]
        return all(str(r["id"]) != current for r in dropped)

    def add_page(self, page: Sequence[dict[str, Any]], has_more: bool) -> None:
        """Rows for the page below the window (an id already shown is not shown twice); the
        rows furthest above the cursor dropped to keep the window."""
        new = self.unseen(page)
        self.seen += len(new)
        # A page ending on the cursor it was asked after (a service repeating its page) would be
        # answered the same way again: nothing more is asked for below it.
        moved = bool(page) and str(page[-1].get("id", "")) != self.after
        if page:
            self.after = str(page[-1].get("id", ""))
        self.has_more = has_more and moved
        rows = self.rows + new
        if len(rows) > self.window:
            rows = rows[len(rows) - self.window :]
            self.has_before = True
        if self.layout_for(rows) != self.placed:
            self.lay_out(rows)
        else:
            self.show_rows(rows, appended=len(rows) - len(new) == len(self.rows))

    def add_page_before(self, page: Sequence[dict[str, Any]], has_more: bool) -> None:
        """Rows for the page above the window (asked for again after being dropped); the rows
        furthest below the cursor dropped to keep the window."""
        new = self.unseen(page)
        self.has_before = has_more and bool(page)
        rows = new + self.rows
        if len(rows) > self.window:
            rows = rows[: self.window]
            self.after = str(rows[-1].get("id", ""))
            self.has_more = True
        if self.layout_for(rows) != self.placed:
            self.lay_out(rows)
        else:
            self.show_rows(rows)

    def show_rows(
        self, rows: list[dict[str, Any]], *, appended: bool = False, keep: str | None = None
    ) -> None:
        """The table shows `rows`; the cursor stays on its record, at the same height."""
        table = self.table
        current = keep or self.current_id()
        if appended:  # nothing dropped: only new rows at the end
            for record in rows[len(self.rows) :]:
                table.add_row(*self.cells(record), key=str(record["id"]))
            self.rows = rows
            self.records = {str(r["id"]): r for r in rows}
        else:
            height = table.cursor_row - round(table.scroll_y)
            self.rows = rows
            self.records = {str(r["id"]): r for r in rows}
            table.clear()
            for record in rows:
                table.add_row(*self.cells(record), key=str(record["id"]))
            if current in self.records:
                row = table.get_row_index(current)
                table.move_cursor(row=row, animate=False, scroll=False)
                table.scroll_to(y=max(0, row - height), animate=False, immediate=True)
        if table.row_count and (not self.detail_shown or current not in self.records):
            self.show_detail()

    @property
    def detail_shown(self) -> bool:
        return bool(self.query_one(".detail-text", Shown).shown_text)

    def clear(self) -> None:
        """No rows, no marks, from the first page again."""
        self.table.clear()
        self.rows = []
        self.records = {}
        self.marked.clear()
        self.after = None
        self.has_more = True
        self.has_before = False
        self.seen = 0
        self.generation += 1  # a page asked for before is not shown
        self.query_one(".detail-text", Shown).show(Text(""))

    def current_id(self) -> str | None:
        """The id of the row under the cursor."""
        table = self.table
        if not table.row_count:
            return None
        row_key, _ = table.coordinate_to_cell_key(table.cursor_coordinate)
        return row_key.value

    def record(self, id: str) -> dict[str, Any]:
        """A record of the window or a marked one."""
        return self.records.get(id) or self.marked[id]

    def targets(self) -> list[str]:
        """The marked rows (in the order marked), else the row under the cursor."""
        if self.marked:
            return list(self.marked)
        current = self.current_id()
        return [] if current is None else [current]

    def show_detail(self) -> None:
        current = self.current_id()
        record = self.records.get(current) if current is not None else None
        text = detail_text(self.kind, record) if record is not None else Text("")
        self.query_one(".detail-text", Shown).show(text)

    def replace(self, record: dict[str, Any]) -> None:
        """A row shown again with the record the service answered."""
        id = str(record.get("id", ""))
        if id in self.marked:
            self.marked[id] = record
        if id not in self.records:
            return
        self.records[id] = record
        self.rows = [record if str(r["id"]) == id else r for r in self.rows]
        for column, cell in zip(self.column_keys(), self.cells(record), strict=True):
            self.table.update_cell(id, column, cell)

    def drop(self, id: str) -> None:
        self.marked.pop(id, None)
        if id in self.records:
            del self.records[id]
            self.rows = [r for r in self.rows if str(r["id"]) != id]
            self.table.remove_row(id)

    def unmark(self, ids: Sequence[str]) -> None:
        """These rows no longer marked."""
        for id in ids:
            self.marked.pop(id, None)
            if id in self.records:
                self.table.update_cell(id, "mark", Text(" "))

    def toggle_mark(self) -> None:
        current = self.current_id()
        if current is None:
            return
        if current in self.marked:
            del self.marked[current]
        else:
            self.marked[current] = self.records[current]
        self.table.update_cell(current, "mark", Text(MARK if current in self.marked else " "))
