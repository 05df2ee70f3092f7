"""Our column policy for a table on a terminal: which columns fit, how wide each is, what gives
way first (empty columns, then times lose their time, then the kind's narrowing order); the id
column is never cut. rich draws the table with these widths and cuts its cells
(cli/output/draw.py), as the ui's DataTable does (cli/ui/rows.py); why rich's own widths are
not used: docs/design/output.md."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from convrisk.cli.output.cells import cell_width, date_only
from convrisk.cli.output.kinds import Kind, Narrowing

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
    (the drawing's). rich and Textual then cut each cell to its column's width with `…`.
    """
    fit = _Fit(kind, rows, width, measure)
    steps = list(kind.narrowing)
    if kind.fields is not None:
        _dates_first(fit, steps)
        _cut_asked(fit)
        return fit.placed(fit.sizes())
    fit.drop_empty()
    _dates_first(fit, steps)
    _narrow(fit, steps)
    return fit.placed(_give_way(fit, [key for action, key in steps if action == "drop"]))


class _Fit:
    """The columns of one table being fitted to a width: those shown, their natural widths,
    which show dates only and (with --fields) how far each may be cut."""

    def __init__(
        self,
        kind: Kind,
        rows: Sequence[Sequence[str]],
        width: int,
        measure: Callable[[str], int],
    ) -> None:
        self.kind = kind
        self.columns = kind.terminal_columns
        self.index = {column.key: i for i, column in enumerate(self.columns)}
        self.rows = rows
        self.width = width
        self.measure = measure
        self.shown = list(range(len(self.columns)))
        self.dates: set[int] = set()
        self.floors: dict[int, int] = {}  # with --fields: cut below the usual minimum
        self.widths = {i: self.natural(i) for i in self.shown}

    def natural(self, i: int) -> int:
        """The width of a column's title and cells, uncut."""
        cells = (date_only(row[i]) if i in self.dates else row[i] for row in self.rows)
        return max([self.measure(self.columns[i].title), *map(self.measure, cells)])

    def is_id(self, i: int) -> bool:
        return self.columns[i].key in self.kind.never_cut

    def minimum(self, i: int) -> int:
        """How far a column may be cut: an id and a time not at all, text to TEXT_MIN or its
        title (with --fields, to its floor)."""
        if i in self.floors:
            return self.floors[i]
        column = self.columns[i]
        if self.is_id(i) or column.kind == "time":
            return self.widths[i]
        return min(self.widths[i], max(TEXT_MIN, self.measure(column.title)))

    def total(self, size: Callable[[int], int]) -> int:
        """The width of the shown columns at these sizes, with the gaps between them."""
        return sum(size(i) for i in self.shown) + len(GAP) * (len(self.shown) - 1)

    def too_wide(self) -> bool:
        """Whether the shown columns uncut are wider than the screen."""
        return self.total(self.widths.__getitem__) > self.width

    def too_wide_cut(self) -> bool:
        """Whether the shown columns cut to their minimum are wider than the screen."""
        return self.total(self.minimum) > self.width

    def apply(self, action: str, key: str) -> None:
        """One narrowing step: a time column shows its date only, or a column goes."""
        i = self.index[key]
        if i not in self.shown:
            return
        if action == "date":
            self.dates.add(i)
            self.widths[i] = self.natural(i)
        else:
            self.shown.remove(i)

    def drop_empty(self) -> None:
        """Columns empty in every row go (the last first) while the columns do not fit."""
        empty = [i for i in self.shown if not self.is_id(i) and not any(r[i] for r in self.rows)]
        while empty and self.too_wide():
            self.shown.remove(empty.pop())

    def sizes(self) -> dict[int, int]:
        """Each shown column's width: its minimum, then the spare cells shared out evenly, then
        moved from less important columns (down to their minimum) to a more important one
        that is still cut."""
        size = {i: self.minimum(i) for i in self.shown}
        self._share_spare(size)
        order = _priority(self.kind, self.shown)
        for n, high in enumerate(order):
            for low in reversed(order[n + 1 :]):
                step = max(0, min(self.widths[high] - size[high], size[low] - self.minimum(low)))
                size[high] += step
                size[low] -= step
        return size

    def _share_spare(self, size: dict[int, int]) -> None:
        """The cells left over shared out evenly among the columns still cut."""
        spare = self.width - self.total(size.__getitem__)
        growing = [i for i in self.shown if size[i] < self.widths[i]]
        while spare > 0 and growing:
            share = max(1, spare // len(growing))
            for i in list(growing):
                step = min(share, self.widths[i] - size[i], spare)
                size[i] += step
                spare -= step
                if size[i] >= self.widths[i]:
                    growing.remove(i)

    def placed(self, size: dict[int, int]) -> list[Placed]:
        return [Placed(i, size[i], i in self.dates) for i in self.shown]


def _dates_first(fit: _Fit, steps: list[Narrowing]) -> None:
    """The narrowing's first steps that show dates only, while the columns do not fit."""
    while steps and steps[0][0] == "date" and fit.too_wide():
        fit.apply(*steps.pop(0))


def _cut_asked(fit: _Fit) -> None:
    """With --fields no column goes: when even their minimums do not fit, the room beside
    the ids is shared evenly, each column cut as far as its share (at least one cell)."""
    others = [i for i in fit.shown if not fit.is_id(i)]
    if not others or not fit.too_wide_cut():
        return
    room = fit.width - fit.total(lambda i: fit.widths[i] if fit.is_id(i) else 0)
    share = max(1, room // len(others))
    fit.floors.update({i: min(fit.minimum(i), share) for i in others})


def _narrow(fit: _Fit, steps: list[Narrowing]) -> None:
    """The rest of the narrowing, then columns from the right, while the columns cut to their
    minimum do not fit."""
    while steps and fit.too_wide_cut():
        fit.apply(*steps.pop(0))
    kept = max(1, sum(map(fit.is_id, fit.shown)))  # the ids stay, or at least one column
    while len(fit.shown) > kept and fit.too_wide_cut() and not _squeezed(fit, kept):
        fit.shown.remove(next(i for i in reversed(fit.shown) if not fit.is_id(i)))


def _squeezed(fit: _Fit, kept: int) -> bool:
    """Whether the one text column left beside the ids took what is left of the width (at
    least SQUEEZE_MIN) rather than go."""
    last = next(i for i in reversed(fit.shown) if not fit.is_id(i))
    left = fit.width - (fit.total(fit.minimum) - fit.minimum(last))
    beside = len(fit.shown) == kept + 1
    if beside and left >= SQUEEZE_MIN and fit.columns[last].kind == "text":
        fit.widths[last] = left
        return True
    return False


def _give_way(fit: _Fit, drops: list[str]) -> dict[int, int]:
    """The sizes, after the less important columns that are cut while a more important one is
    cut too went, in the narrowing's order, if their room makes it whole (DETAILS gives way
    before TYPE is cut); else they stay."""
    size = fit.sizes()
    pending: list[int] = []
    for key in drops:
        i, order = fit.index[key], _priority(fit.kind, fit.shown)
        cut = [j for j in order if size[j] < fit.widths[j]]
        if i not in cut or order.index(i) <= order.index(cut[0]):
            continue
        fit.shown.remove(i)
        pending.append(i)
        fewer = fit.sizes()
        if fewer[cut[0]] >= fit.widths[cut[0]]:
            size, pending = fewer, []
    if pending:
        fit.shown = sorted([*fit.shown, *pending])
        size = fit.sizes()
    return size


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
