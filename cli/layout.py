"""Our column policy for a table on a terminal: which columns fit, how wide each is, what gives
way first (empty columns, then times lose their time, then the kind's narrowing order); the id
column is never cut. rich draws the table with these widths (cli/draw.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .cells import cell_width, date_only
from .kinds import Kind

# Between two columns of a terminal table.
GAP = "  "
# A text column is cut no narrower than this (or its title), before it is dropped.
TEXT_MIN = 8
# ... or, when it is the only column beside the id, to this.
SQUEEZE_MIN = 5


@dataclass(frozen=True)
class Placed:
    """A column of a terminal table as laid out: its index, width, and whether dates only."""

    index: int
    width: int
    date_only: bool = False


def table_layout(
    kind: Kind,
    rows: Sequence[Sequence[str]],
    width: int,
    measure: Callable[[str], int] = cell_width,
) -> list[Placed]:
    """Which terminal columns fit `width` cells, how wide each is, which show dates only.

    Every row then fits one screen line. The id column is never cut. While the columns at full
    width do not fit, columns empty in every row go, then the time columns that
    `kind.narrowing` names first show their date only; then, while the columns cut to their
    minimum (a text column to TEXT_MIN or its title) still do not fit, the rest of
    `kind.narrowing` applies in order (dropping columns), and at last columns are dropped from
    the right (one text column beside the id may shrink to SQUEEZE_MIN). The cells left over
    share the spare width. `measure` is the width of a text in screen cells (the drawing's).
    """
    columns = kind.terminal_columns
    index = {column.key: i for i, column in enumerate(columns)}
    shown = list(range(len(columns)))
    dates: set[int] = set()

    def natural(i: int) -> int:
        cells = (date_only(row[i]) if i in dates else row[i] for row in rows)
        return max([measure(columns[i].title), *map(measure, cells)])

    widths = {i: natural(i) for i in shown}

    def minimum(i: int) -> int:
        column = columns[i]
        if column.key == "id" or column.kind == "time":
            return widths[i]
        return min(widths[i], max(TEXT_MIN, measure(column.title)))

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
