"""Our column policy for a table on a terminal: which columns fit, how wide each is, what gives
way first (empty columns, then times lose their time, then the kind's narrowing order); the id
column is never cut. rich draws the table with these widths (cli/output/draw.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from convrisk.cli.output.cells import cell_width, date_only
from convrisk.cli.output.kinds import Kind

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
    the right (one text column beside the id may shrink to SQUEEZE_MIN).

    Columns asked for with --fields (`kind.fields`) never go: they are cut instead, as far as
    needed (to one cell each; only a screen narrower than the id and a cell per column
    overflows).

    The cells left over are shared out, then a column that is still cut takes them from the
    less important ones (those the narrowing drops earlier; with --fields, those asked for
    later), and a less important column that is cut too goes when that makes it whole:
    DETAILS gives way before TYPE is cut. `measure` is the width of a text in screen cells
    (the drawing's).
    """
    columns = kind.terminal_columns
    index = {column.key: i for i, column in enumerate(columns)}
    shown = list(range(len(columns)))
    dates: set[int] = set()
    asked = kind.fields is not None
    floors: dict[int, int] = {}  # with --fields: cut below the usual minimum

    def natural(i: int) -> int:
        cells = (date_only(row[i]) if i in dates else row[i] for row in rows)
        return max([measure(columns[i].title), *map(measure, cells)])

    widths = {i: natural(i) for i in shown}

    def is_id(i: int) -> bool:
        return columns[i].key in kind.never_cut

    def minimum(i: int) -> int:
        if i in floors:
            return floors[i]
        column = columns[i]
        if is_id(i) or column.kind == "time":
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
    empty = [i for i in shown if not is_id(i) and not any(row[i] for row in rows)]
    while empty and not asked and total(widths.__getitem__) > width:
        shown.remove(empty.pop())
    while steps and steps[0][0] == "date" and total(widths.__getitem__) > width:
        apply(*steps.pop(0))
    if asked:
        others = [i for i in shown if not is_id(i)]
        if others and total(minimum) > width:
            room = width - total(lambda i: widths[i] if is_id(i) else 0)
            share = max(1, room // len(others))
            floors.update({i: min(minimum(i), share) for i in others})
    else:
        while steps and total(minimum) > width:
            apply(*steps.pop(0))
        kept = max(1, sum(map(is_id, shown)))  # the ids stay, or at least one column
        while len(shown) > kept and total(minimum) > width:
            last = next(i for i in reversed(shown) if not is_id(i))
            left = width - (total(minimum) - minimum(last))
            beside = len(shown) == kept + 1
            if beside and left >= SQUEEZE_MIN and columns[last].kind == "text":
                widths[last] = left  # the one column beside the id gets what is left
                break
            shown.remove(last)

    def sizes() -> dict[int, int]:
        """Each shown column's width: its minimum, then the spare cells shared out evenly, then
        moved from less important columns (down to their minimum) to a more important one
        that is still cut."""
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
        order = _priority(kind, shown)
        for n, high in enumerate(order):
            for low in reversed(order[n + 1 :]):
                step = max(0, min(widths[high] - size[high], size[low] - minimum(low)))
                size[high] += step
                size[low] -= step
        return size

    size = sizes()
    # While a column is cut, less important ones that are cut too go, in the narrowing's order,
    # if their room makes it whole: DETAILS gives way before TYPE is cut. Else they stay.
    drops = [key for action, key in steps if action == "drop"] if not asked else []
    pending: list[int] = []
    for key in drops:
        i, order = index[key], _priority(kind, shown)
        cut = [j for j in order if size[j] < widths[j]]
        if i not in cut or order.index(i) <= order.index(cut[0]):
            continue
        shown.remove(i)
        pending.append(i)
        fewer = sizes()
        if fewer[cut[0]] >= widths[cut[0]]:
            size, pending = fewer, []
    if pending:
        shown = sorted([*shown, *pending])
        size = sizes()
    return [Placed(i, size[i], i in dates) for i in shown]


def _priority(kind: Kind, shown: Sequence[int]) -> list[int]:
    """The shown columns, the one to keep whole first: the columns the narrowing never drops
    (in their order), then those it drops, the last dropped first; with --fields, the order
    they were asked in."""
    if kind.fields is not None:
        return list(shown)
    columns = kind.terminal_columns
    dropped = [key for action, key in kind.narrowing if action == "drop"]
    rank = {key: len(dropped) - n for n, key in enumerate(dropped)}
    return sorted(shown, key=lambda i: rank.get(columns[i].key, 0))
