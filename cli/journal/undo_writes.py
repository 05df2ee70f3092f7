"""The writes of `convrisk undo`: each step of the plan checked against its record at the moment
it is written (locally in the write's own transaction, remotely by a read right before it), then
written and journaled as undoing its entry; or previewed (--dry-run), or printed (--as-curl)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from convrisk.cli.errors import describe, stops_the_loop
from convrisk.cli.journal.undo_choice import Refused, counted
from convrisk.cli.journal.undo_plan import Verdict, changed_message, judge, judge_finish
from convrisk.cli.output.kinds import UNDONE

if TYPE_CHECKING:
    from convrisk.api_client.client import ResourceClient
    from convrisk.cli.context import AppContext
    from convrisk.cli.journal.undo_plan import Step
    from convrisk.cli.output.printer import Printer
    from convrisk.cli.output.sinks import Sink


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


class Undoer:
    """Runs the steps in order, each compared with its record as it is written."""

    def __init__(self, run: AppContext, printer: Printer, *, force: bool) -> None:
        self.run = run
        self.printer = printer
        self.force = force
        # A record made anew stands for the deleted one: later steps on the old id go to it.
        self.renamed: dict[tuple[str, str], str] = {}
        self.first: BaseException | None = None
        self.refused = 0
        # Records not put back (a create that failed, a unit left unfinished): later steps on
        # their old ids are refused.
        self.lost: set[tuple[str, str]] = set()

    def target(self, resource: str) -> ResourceClient[Any, Any, Any, Any]:
        """The Client's resource of this name."""
        target: ResourceClient[Any, Any, Any, Any] = getattr(self.run.client(), resource)
        return target

    def refuse(self, step: Step, message: str) -> None:
        """Leave a step's record alone and say why (exit 1 at the end)."""
        refusal = Refused(f"{step.entry}: {message}")
        self.printer.error(describe(refusal, remote=self.printer.remote))
        self.first = self.first or refusal
        self.refused += 1

    def note(self, step: Step, message: str) -> None:
        """Say on stderr why a step needs nothing done."""
        self.printer.notice(f"{step.entry}: {message}")

    def settle(self, step: Step, verdict: Verdict) -> bool:
        """Report a verdict that is not a plain write; whether to write all the same (--force)."""
        if verdict.kind == "done":
            self.note(step, verdict.message)
        elif verdict.kind == "refused":
            self.refuse(step, verdict.message)
        elif verdict.kind == "changed":
            if self.force:
                self.note(step, changed_message(step, verdict, force=True))
                return True
            self.refuse(step, changed_message(step, verdict, force=False))
        return verdict.kind == "write"

    def execute(self, steps: Sequence[Step]) -> None:
        """Run the steps in order, each journaled as undoing its entry; print each result.

        A failure is reported with its entry and the rest go on (a refused token or an
        unreachable service stops them); the first failure or refusal is kept in `first`.
        """
        from convrisk.api_client.errors import ConvriskError

        with self.printer.records(UNDONE, many=True) as sink:
            for step in steps:
                key = (step.resource, step.id)
                if key in self.lost:
                    self.refuse(step, f"not undone: putting back {step.id} failed above.")
                    continue
                try:
                    self.step(step, sink)
                except ConvriskError as exc:
                    info = describe(
                        exc, remote=self.printer.remote, id=step.entry, settings=self.run.settings
                    )
                    self.printer.error(info)
                    self.first = self.first or exc
                    if step.operation == "create":
                        self.lost.add(key)
                    if stops_the_loop(exc):
                        break

    def step(self, step: Step, sink: Sink) -> None:
        """One step: checked and written, or left alone with a line saying why."""
        from convrisk.api_client.errors import ChangedSince, NotFoundError

        key = (step.resource, step.id)
        id = self.renamed.get(key, step.id)
        target = self.target(step.resource)
        if step.operation == "create" and step.made is not None:
            # A unit cut short after its create: finished on the record that create made.
            finished = self.finish(step, target, step.made, step.made_as)
            self.made_anew(step, sink, step.made if finished else None)
            return
        if step.operation == "create":
            try:
                current: Mapping[str, Any] | None = target.retrieve(step.id)
            except NotFoundError:
                current = None
            verdict = judge(step, current)
            if verdict.kind == "write":
                self.made_anew(step, sink, self.recreate(step, target))
                return
            if not self.settle(step, verdict):
                return
            step = put_in_place(step, verdict)
        stands_for = step.id if id != step.id else None
        with self.run.journal_note(undoes=step.entry, stands_for=stands_for):
            try:
                self.write(step, target, id, expect=step.expect or None)
            except NotFoundError:
                self.settle(step, judge(step, None))
                return
            except ChangedSince as changed:
                if not self.settle(step, judge(step, changed.current)):
                    return
                self.write(step, target, id, expect=None)
        sink.write([row(step, "undone", id=id)])

    def made_anew(self, step: Step, sink: Sink, made: str | None) -> None:
        """A deleted record made anew as `made` (later steps on its old id go to it), or left
        unfinished, None (they are refused)."""
        key = (step.resource, step.id)
        if made is None:
            self.lost.add(key)
            return
        self.renamed[key] = made
        sink.write([row(step, "undone", id=made)])

    @staticmethod
    def write(
        step: Step,
        target: ResourceClient[Any, Any, Any, Any],
        id: str,
        *,
        expect: Mapping[str, Any] | None,
    ) -> None:
        """A delete's or an update's write, with `expect` compared as it is written."""
        if step.operation == "delete":
            target.delete(id, expect=expect)
        else:
            target.update(id, step.body, expect=expect)

    def recreate(self, step: Step, target: ResourceClient[Any, Any, Any, Any]) -> str | None:
        """A deleted record made anew with its old fields, as one unit: the create (journaled as
        the unit started) and the update of the fields a create does not take (journaled as
        undoing the entry); the new record's id, None when the unit was left unfinished."""
        unit = {"unit": "started"} if step.then else {}
        with self.run.journal_note(undoes=step.entry, stands_for=step.id, **unit):
            # The Idempotency-Key is the entry's: a create cut short before its answer was
            # journaled is replayed by the next run, not made twice.
            made = target.create(step.body, idempotency_key=f"undo-{step.entry}")
        new_id: str = made["id"]
        if step.then and not self.finish(step, target, new_id, made):
            return None
        return new_id

    def finish(
        self,
        step: Step,
        target: ResourceClient[Any, Any, Any, Any],
        id: str,
        made_as: Mapping[str, Any] | None,
    ) -> bool:
        """The last write of a recreate's unit: the fields a create does not take, set on the
        record made anew (`id`) where it still holds what its create left there (`made_as`, the
        create's answer), checked as it is written; another writer's change since is left alone
        (exit 1, the unit unfinished) unless --force. Whether it was written."""
        from convrisk.api_client.errors import ChangedSince, NotFoundError

        expect = None if made_as is None else {n: made_as.get(n) for n in step.then}
        with self.run.journal_note(undoes=step.entry, stands_for=step.id):
            try:
                target.update(id, step.then, expect=expect)
            except NotFoundError:
                return self.settle(step, judge_finish(step, id, made_as, None))
            except ChangedSince as changed:
                if not self.settle(step, judge_finish(step, id, made_as, changed.current)):
                    return False
                target.update(id, step.then)
        return True


def put_in_place(step: Step, verdict: Verdict) -> Step:
    """--force on a deleted record whose id exists again, changed: an update of its changed
    settable fields back to the values deleted, in place of the create."""
    from dataclasses import replace

    from convrisk.api_client.resources import RESOURCES

    settable = {f.name for f in RESOURCES[step.resource].updatable()}  # type: ignore[index]
    back = {n: step.expect.get(n) for n in verdict.fields if n in settable}
    return replace(step, operation="update", body=back, then={}, expect={})


def preview(run: AppContext, printer: Printer, steps: Sequence[Step], *, force: bool) -> Undoer:
    """--dry-run: each step judged against its record as it is now (or as the steps before it
    would leave it), printed as planned; nothing written. Under --as-curl the reads are printed
    and each record taken to be as its entry left it. What was refused is in the Undoer."""
    from convrisk.api_client.errors import NotFoundError

    undoer = Undoer(run, printer, force=force)
    captured = run.captured()
    state: dict[tuple[str, str], dict[str, Any] | None] = {}
    planned: list[tuple[Step, str | None]] = []
    for step in steps:
        key = (step.resource, step.id)
        if step.made is not None:  # a unit to finish: judged on the record it made
            try:
                made: dict[str, Any] | None = dict(undoer.target(step.resource).retrieve(step.made))
            except NotFoundError:
                made = None
            except captured:
                made = dict(step.made_as or {})
            if undoer.settle(step, judge_finish(step, step.made, step.made_as, made)):
                planned.append((step, step.made))
                state[key] = {**(made or {}), **step.then}
            continue
        if key not in state:
            try:
                state[key] = dict(undoer.target(step.resource).retrieve(step.id))
            except NotFoundError:
                state[key] = None
            except captured:
                state[key] = None if step.operation == "create" else dict(step.expect)
        current = state[key]
        verdict = judge(step, current)
        if verdict.kind != "write":
            if not undoer.settle(step, verdict):
                continue
            if step.operation == "create":
                step = put_in_place(step, verdict)
        planned.append((step, None))
        if step.operation == "delete":
            state[key] = None
        elif step.operation == "update" or current is not None:
            state[key] = {**(current or {}), **step.body}
        else:
            state[key] = {**step.expect}
    with printer.records(UNDONE, many=True) as sink:
        sink.write([row(step, "planned", id=id) for step, id in planned])
    printer.notice(
        f"Dry run: {counted(len(planned), 'write', 'writes')} planned, "
        f"{undoer.refused:,} refused. Nothing was written."
    )
    return undoer


def print_requests(run: AppContext, printer: Printer, steps: Sequence[Step]) -> None:
    """--as-curl: each step's read (the check made right before its write) and its write,
    printed as curl command lines, not sent. A write to a record made anew (the update after
    its create, an older entry's write) goes to the id the create answers: it is not printed,
    and a hint says so."""
    captured = run.captured()
    made: set[tuple[str, str]] = set()
    renamed: dict[tuple[str, str], str] = {}
    later = updates = 0
    for step in steps:
        key = (step.resource, step.id)
        if key in made:
            later += 1
            continue
        target: ResourceClient[Any, Any, Any, Any] = getattr(run.client(), step.resource)
        if step.made is not None:  # a unit to finish: the update of the record it made
            renamed[key] = step.made
            with suppress(captured):
                target.retrieve(step.made)
            with suppress(captured):
                target.update(step.made, step.then)
            continue
        id = renamed.get(key, step.id)
        with suppress(captured):
            target.retrieve(id)
        try:
            if step.operation == "create":
                target.create(step.body, idempotency_key=f"undo-{step.entry}")
            else:
                Undoer.write(step, target, id, expect=None)
        except captured:
            if step.operation == "create":
                made.add(key)
                updates += bool(step.then)
    untold = []
    if later:
        untold.append(counted(later, "write to a record made anew", "writes to records made anew"))
    if updates:
        untold.append(
            f"the update of the fields a create does not take "
            f"({counted(updates, 'record', 'records')})"
        )
    if untold:
        printer.hint(
            f"--as-curl: not printed, as they go to the id a create would answer: "
            f"{' and '.join(untold)}."
        )
