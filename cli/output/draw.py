"""What rich draws for a person at a terminal: the table (with the widths of our column policy),
JSON highlighting and the progress line. The only module that imports rich, and it is imported
only when one of these is drawn: JSON, JSON lines, TSV, CSV and ids never load it.

rich renders to text here (Console.capture) and the printer writes that text, so that the
printer stays the one place that writes to the streams. Data reaches rich only as `Text`
objects made of escaped text (`cells.shown`), never as markup: rich drops some control
characters instead of showing them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from convrisk.cli.output.iostreams import IOStreams

# Spaces at the end of a drawn line, before any closing SGR codes: rich pads the last column.
_TRAILING = re.compile(r" +((?:\x1b\[[0-9;]*m)*)$", re.MULTILINE)


def measure() -> Callable[[str], int]:
    """The width of a text in screen cells, as rich measures it."""
    from rich.cells import cell_len

    return cell_len


def console(streams: IOStreams, name: str, width: int) -> Console:
    """A rich Console for the terminal stream `name`, `width` cells wide, coloured when the
    terminal facts allow (NO_COLOR and TERM=dumb: no styles at all)."""
    from rich.console import Console

    colour = streams.colour(name)
    return Console(
        force_terminal=True,
        width=max(width, 1),
        color_system="auto" if colour else None,
        no_color=not colour,
        markup=False,
        emoji=False,
        highlight=False,
        legacy_windows=False,
        tab_size=1,
    )


def table(
    console: Console,
    titles: Sequence[str],
    widths: Sequence[int],
    rows: Sequence[Sequence[str]],
    *,
    header: bool,
) -> str:
    """A table of these (escaped) cells, each column exactly its width, cells cut with `…`,
    two spaces between columns and no border; the header in bold when `header`."""
    from rich.table import Table
    from rich.text import Text

    grid = Table(
        box=None,
        padding=(0, 1),
        pad_edge=False,
        show_edge=False,
        show_header=header,
        header_style="bold",
        expand=False,
    )
    for title, width in zip(titles, widths, strict=True):
        grid.add_column(Text(title), width=width, no_wrap=True, overflow="ellipsis")
    # One table row whose cells hold a column's lines: every line is one row (no cell has a
    # line break: cells are escaped, and none wraps), drawn three times faster than a table
    # row per row, and the same text.
    if rows:
        grid.add_row(*(Text("\n".join(column)) for column in zip(*rows, strict=True)))
    # Wide enough for the table: our policy has decided what fits (an id wider than the screen
    # stays whole), so rich must not shrink a column.
    needed = sum(widths) + 2 * (len(widths) - 1)
    screen = console.width
    console.width = max(needed, screen)  # print(width=) alone is capped at the console's
    try:
        with console.capture() as capture:
            console.print(grid)
    finally:
        console.width = screen
    return _TRAILING.sub(r"\1", capture.get())


def highlighted_json(console: Console, text: str) -> str:
    """JSON text (already escaped) with rich's JSON highlighting; the text itself unchanged."""
    from rich.highlighter import JSONHighlighter
    from rich.text import Text

    shown = Text(text)
    JSONHighlighter().highlight(shown)
    with console.capture() as capture:
        console.print(shown, soft_wrap=True, end="")
    return capture.get()


def progress_line(console: Console, text: str, done: float | None) -> str:
    """One line of rich's Progress: a bar and its percentage when `done` (0 to 1) is known,
    then `text` (escaped), cut with `…` to fit the console."""
    from rich.progress import BarColumn, Progress, ProgressColumn, TaskProgressColumn, TextColumn
    from rich.table import Column

    columns: list[ProgressColumn] = []
    if done is not None:
        columns = [BarColumn(bar_width=30), TaskProgressColumn()]
    label = TextColumn(
        "{task.description}",
        markup=False,
        style="dim",
        table_column=Column(no_wrap=True, overflow="ellipsis"),
    )
    progress = Progress(*columns, label, console=console, auto_refresh=False)
    # In thousandths: rich counts whole steps.
    progress.add_task(text, total=None if done is None else 1000, completed=int((done or 0) * 1000))
    with console.capture() as capture:
        console.print(progress.get_renderable(), end="")
    return _TRAILING.sub(r"\1", capture.get()).rstrip("\n")
