"""`convrisk undo`: put back the records that journal entries wrote (DESIGN 5.3).

Which entries: `j_...` ids, `r_...` run ids (every entry one command wrote), or `--last [N]`
(the last N commands that wrote to the current profile's service, not counting undo's own and
those already undone). Each entry is reversed, newest first: a create by a delete, an update by
an update of the fields it changed back to their values before, a delete by a create of the old
fields (a new id, which stands for the old one). A record whose current state is not the entry's
`after` (compared on the fields a client sets) is left alone unless --force.

The plan is made first (the journal read newest first, only as far back as the choice needs;
every record retrieved; nothing written), then the writes are counted and checked (read-only,
protected, --max-affected), then run through the journaled Client, each write noting the entry
it undoes. --dry-run prints the plan; --as-curl prints its requests.
"""

from __future__ import annotations

from typing import Annotated

import typer

from convrisk.cli.context import app_context
from convrisk.cli.errors import Failures, UsageProblem
from convrisk.cli.guard import check_write, refuse_read_only
from convrisk.cli.journal.entries import journal_off, journal_path
from convrisk.cli.journal.undo_choice import choose, light_of, place_of, reversible
from convrisk.cli.journal.undo_plan import Planner
from convrisk.cli.journal.undo_writes import Undoer, preview, print_requests
from convrisk.cli.options import common as opt
from convrisk.cli.output.kinds import UNDONE

# `--last N` takes at most this many commands (a bound, far above any use by hand).
MAX_LAST = 10_000

Force = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Put back records that changed since the entry too (default: leave them, exit 1).",
    ),
]
Last = Annotated[
    bool,
    typer.Option(
        "--last",
        help="Undo the last command that wrote here (or the last N: `--last 3`), not counting "
        "undo's own and commands already undone.",
    ),
]
Entries = Annotated[
    list[str] | None,
    typer.Argument(
        metavar="ENTRY",
        help="Journal entry ids (j_...) or run ids (r_..., every entry of one command), as "
        "`convrisk history` shows them; with --last, the number of commands N.",
        show_default=False,
    ),
]


def undo(
    ctx: typer.Context,
    entries: Entries = None,
    last: Last = False,
    force: Force = False,
    dry_run: opt.DryRun = False,
    max_affected: opt.MaxAffected = None,
    yes: opt.WriteYes = False,
    output: opt.Output = None,
) -> None:
    """Put back the records that journal entries wrote, newest first: a create is undone by a
    delete, an update by an update back to the values before it, a delete by a create of the
    old fields (a new id, printed beside the old one).

    A record that changed since its entry is left alone (exit 1, naming it) unless --force.
    Entries of another profile or service than the current one are refused (exit 2), as is an
    unknown id. `api` requests cannot be undone. The writes are journaled too, each naming
    the entry it undoes.

    \b
    Example:
      convrisk undo --last
      convrisk undo --last 3 --dry-run
      convrisk undo j_0193a4b5c6d7e8f9a0 j_0193a4b5c6d8a1b2c3
      convrisk undo r_0193a4b5c6d7e8f9a0 --max-affected 1000 --yes
    """
    run = app_context(ctx)
    printer = run.printer(output)
    printer.format_for(UNDONE)
    ids, count = _arguments(entries or [], last)
    cap = opt.max_affected(max_affected)
    if not dry_run:
        refuse_read_only(run, "undo")  # before the journal is read or anything is retrieved
    settings = run.settings()
    here = place_of(settings)
    if journal_off(run.env):
        raise UsageProblem(
            "The journal is off (CONVRISK_JOURNAL=off): undo has no entries to read.",
            param="CONVRISK_JOURNAL",
        )
    path = journal_path(run.env)
    chosen = choose(path, here, printer, ids=ids, last=count)
    to_touch = sum(
        1
        for entry in chosen.entries
        if reversible(light_of(entry)) and entry["entry"] not in chosen.undone_by
    )
    if not dry_run:
        check_write(run, count=to_touch, what="undo journal entries", max_affected=cap, yes=yes)
    plan = Planner(printer, chosen).make()
    first: BaseException | None = plan.refused[0] if plan.refused else None
    failed = len(plan.refused)
    if run.as_curl and not dry_run:
        print_requests(run, printer, plan.steps)
    else:
        if dry_run:
            undoer = preview(run, printer, plan.steps, force=force)
        else:
            undoer = Undoer(run, printer, force=force)
            undoer.execute(plan.steps)
        failed += undoer.refused
        first = first or undoer.first
    if first is not None:
        raise Failures(first, failed)


def _arguments(given: list[str], last: bool) -> tuple[list[str], int | None]:
    """The ids to undo, or with --last the number of commands (default 1)."""
    if not last:
        if not given:
            raise UsageProblem(
                "Name the entries to undo (j_... or r_..., see `convrisk history`), or give "
                "--last.",
                param="ENTRY",
            )
        return list(dict.fromkeys(given)), None
    if len(given) > 1 or (given and not given[0].isdecimal()):
        raise UsageProblem(
            f"--last takes one number of commands (--last 3), not {' '.join(given)!r}; "
            "name entries without --last.",
            param="--last",
        )
    count = int(given[0]) if given else 1
    if not 1 <= count <= MAX_LAST:
        raise UsageProblem(
            f"--last takes a number of commands from 1 to {MAX_LAST:,}, not {given[0]}.",
            param="--last",
        )
    return [], count
