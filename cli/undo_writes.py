"""The writes of `convrisk undo`: each step of the plan run (or printed, --as-curl), journaled
as undoing its entry."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .errors import describe, stops_the_loop
from .kinds import UNDONE
from .undo_choice import Refused, counted

if TYPE_CHECKING:
    from convrisk.api_client.client import ResourceClient

    from .context import AppContext
    from .output import Printer
    from .undo_plan import Step


def row(step: Step, status: str, *, id: str | None = None) -> dict[str, Any]:
    """One result: the entry undone, the write that undid it and the record it touched (a
    create's: the new record, whose id is not known before it is made; it stands for the old)."""
    made: str | None
    stands_for: str | None
    if step.operation == "create":
        made, stands_for = id, step.id
    else:
        made = id if id is not None else step.id
        stands_for = step.id if made != step.id else None
    return {
        "entry": step.entry,
        "status": status,
        "operation": step.operation,
        "id": made,
        "stands_for": stands_for,
        "body": {**step.body, **step.then},
    }


def execute(run: AppContext, printer: Printer, steps: Sequence[Step]) -> BaseException | None:
    """Run the steps in order, each write journaled as undoing its entry; print each result.

    A failure is reported with its entry and the rest go on (a refused token or an unreachable
    service stops them); the first failure is returned.
    """
    from convrisk.api_client.errors import ConvriskError

    renamed: dict[tuple[str, str], str] = {}
    lost: set[tuple[str, str]] = set()
    first: BaseException | None = None
    with printer.records(UNDONE, many=True) as sink:
        for step in steps:
            key = (step.resource, step.id)
            if key in lost:
                refusal = Refused(f"{step.entry}: not undone: putting back {step.id} failed above.")
                printer.error(describe(refusal, remote=printer.remote))
                first = first or refusal
                continue
            try:
                id = write(run, step, renamed.get(key, step.id))
            except ConvriskError as exc:
                printer.error(
                    describe(exc, remote=printer.remote, id=step.entry, settings=run.settings)
                )
                first = first or exc
                if step.operation == "create":
                    lost.add(key)
                if stops_the_loop(exc):
                    break
                continue
            renamed[key] = id
            sink.write([row(step, "undone", id=id)])
    return first


def write(run: AppContext, step: Step, id: str) -> str:
    """One step's write to the record `id` (a recreated record's new id once made), journaled
    as undoing its entry; the id of the record it wrote."""
    target: ResourceClient[Any, Any, Any, Any] = getattr(run.client(), step.resource)
    # A record made anew stands for the deleted one, and so do later writes to it.
    stands_for = step.id if step.operation == "create" or id != step.id else None
    with run.journal_note(undoes=step.entry, stands_for=stands_for):
        if step.operation == "delete":
            target.delete(id)
        elif step.operation == "update":
            target.update(id, step.body)
        else:
            id = recreate(target, step)
    return id


def print_requests(run: AppContext, printer: Printer, steps: Sequence[Step]) -> None:
    """--as-curl: each step's write printed as a curl command line, not sent. A write to a
    record made anew (the update after its create, an older entry's write) goes to the id the
    create answers: it is not printed, and a hint says so."""
    captured = run.captured()
    made: set[tuple[str, str]] = set()
    later = updates = 0
    for step in steps:
        key = (step.resource, step.id)
        if key in made:
            later += 1
            continue
        try:
            write(run, step, step.id)
        except captured:
            if step.operation == "create":
                made.add(key)
                updates += bool(step.then)
    untold = []
    if later:
        untold.append(counted(later, "write to a record made anew", "writes to records made anew"))
    if updates:
        untold.append(
            f"the update of the fields a create does not take, where the answer differs from "
            f"them ({counted(updates, 'record', 'records')})"
        )
    if untold:
        printer.hint(
            f"--as-curl: not printed, as they go to the id a create would answer: "
            f"{' and '.join(untold)}."
        )


def recreate(target: ResourceClient[Any, Any, Any, Any], step: Step) -> str:
    """Create a deleted record anew with its old fields; its new id.

    The Idempotency-Key is the entry's, so that undo run again after an interruption replays
    the create instead of making a second record.
    """
    made = target.create(step.body, idempotency_key=f"undo-{step.entry}")
    new_id: str = made["id"]
    changes = {n: v for n, v in step.then.items() if made.get(n) != v}
    if changes:
        target.update(new_id, changes)
    return new_id
