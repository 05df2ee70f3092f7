"""`convrisk history`: the journal of writes, newest first, in every output format."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated, Any

import typer

from convrisk.cli.context import app_context
from convrisk.cli.errors import UsageProblem
from convrisk.cli.options import common as opt
from convrisk.cli.options import values
from convrisk.cli.output.kinds import HISTORY

if TYPE_CHECKING:
    from convrisk.api_client.page import Page
    from convrisk.cli.journal.entries import Entry, Problem
    from convrisk.cli.output.printer import Printer

DEFAULT_HISTORY_LIMIT = 20
# Bad lines named one by one, then counted: a journal of garbage is not a screen of warnings.
MAX_NAMED_PROBLEMS = 10
_PAGE = 100


def history(
    ctx: typer.Context,
    limit: Annotated[
        str | None,
        typer.Option(
            "--limit",
            metavar="N",
            help=f"How many entries (default {DEFAULT_HISTORY_LIMIT}).",
            show_default=False,
        ),
    ] = None,
    all_items: Annotated[bool, typer.Option("--all", help="Every entry.")] = False,
    id: Annotated[
        str | None,
        typer.Option(
            "--id",
            metavar="ID",
            help="Only entries about this record (also the record a re-created one stands for), "
            "or this entry or run id.",
            show_default=False,
        ),
    ] = None,
    output: opt.Output = None,
    jq: opt.Jq = None,
) -> None:
    """List the journal of writes, newest first: each record a command created, changed or
    deleted, with the record before and after (CONVRISK_JOURNAL names another journal file).

    \b
    Example:
      convrisk history
      convrisk history --id conv_01HVZ8Q2K4M6P8R0T2V4X6Z8B0 -o json
      convrisk history --limit 3 -o id
    """
    from convrisk.cli.journal.entries import JournalError, journal_path, read_newest

    run = app_context(ctx)
    if all_items and limit is not None:
        raise UsageProblem("Give --limit or --all, not both.", param="--limit")
    total = None if all_items else DEFAULT_HISTORY_LIMIT
    if limit is not None:
        total = values.whole_number(limit, "--limit", low=1)
    wanted = values.nonempty(id, "--id")
    printer = run.printer(output)
    printer.format_for(HISTORY)
    path = journal_path(run.env)
    try:
        items = read_newest(path)
        more = [False]
        printer.pages(HISTORY, _pages(printer, items, wanted, total, more), hint_more=False)
    except JournalError as exc:
        raise UsageProblem(str(exc), param="CONVRISK_JOURNAL") from None
    if more[0]:
        printer.hint(f"More {HISTORY.plural} exist: use --all, or --limit N to see them.")


def _pages(
    printer: Printer,
    items: Iterator[Entry | Problem],
    wanted: str | None,
    total: int | None,
    more: list[bool],
) -> Iterator[Page[Any]]:
    """The entries that match, in pages; each bad line a warning (the first few named)."""
    from convrisk.api_client.page import Page
    from convrisk.cli.journal.entries import Problem

    page: list[Any] = []
    shown = problems = 0
    for item in items:
        if isinstance(item, Problem):
            problems += 1
            if problems <= MAX_NAMED_PROBLEMS:
                printer.warning(f"The journal {item.describe()}.")
            continue
        if wanted is not None and wanted not in _ids(item):
            continue
        if total is not None and shown == total:
            more[0] = True
            break
        page.append(item)
        shown += 1
        if len(page) == _PAGE:
            yield Page(True, records=page)
            page = []
    if problems > MAX_NAMED_PROBLEMS:
        printer.warning(
            f"{problems - MAX_NAMED_PROBLEMS} more lines of the journal could not be read "
            "(skipped)."
        )
    yield Page(False, records=page)


def _ids(entry: Entry) -> tuple[object, ...]:
    """The ids --id matches: the record's, the old one it stands for, the entry's, the run's."""
    return (entry.get("id"), entry.get("stands_for"), entry.get("entry"), entry.get("run"))
