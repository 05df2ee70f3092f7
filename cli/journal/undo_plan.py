"""The plan of `convrisk undo`: the write that puts back each chosen entry's record, decided from
the journal alone (nothing read from the service, nothing written), and the verdict on each
write given its record's state as read at the moment of the write (`judge`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from convrisk.cli.errors import describe
from convrisk.cli.journal.entries import Entry
from convrisk.cli.journal.undo_choice import Chosen, Refused, counted, light_of, reversible

if TYPE_CHECKING:
    from convrisk.api_client.resources import Resource
    from convrisk.cli.output.printer import Printer


Operation = Literal["create", "update", "delete"]


@dataclass
class Step:
    """One write that puts back one entry's record."""

    entry: str
    resource: str
    operation: Operation
    id: str  # the record's id as the entry knows it (a recreated one's old id)
    body: dict[str, Any] = field(default_factory=dict)
    # A create: the settable fields the create does not take, set by an update after it.
    then: dict[str, Any] = field(default_factory=dict)
    # What the record must hold when it is written: a delete's and an update's record as the
    # entry left it (on the fields the entry changed); a create's, the record deleted (to tell
    # whether an old id that exists again is as it was).
    expect: dict[str, Any] = field(default_factory=dict)
    # A create whose unit was cut short after the create: the record it made, to finish, and
    # that record as the create answered it (the values `then` may overwrite; None if unknown).
    made: str | None = None
    made_as: dict[str, Any] | None = None


@dataclass
class Plan:
    """The writes, newest entry first, and the entries refused (each already reported)."""

    steps: list[Step] = field(default_factory=list)
    refused: list[Refused] = field(default_factory=list)


def settable_of(resource: Resource, record: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of `record` a client sets (not the times the service moves on its own:
    created_at, updated_at, last_active_at, last_opened_at)."""
    return {f.name: record.get(f.name) for f in resource.writable()}


@dataclass(frozen=True)
class Verdict:
    """What to do with a step, given its record as it is: write it, or not, and why.

    `kind`: "write" (go on), "done" (nothing to do: a note), "refused" (cannot: exit 1),
    "changed" (changed since the entry: left alone, or put back with --force).
    """

    kind: Literal["write", "done", "refused", "changed"]
    message: str = ""
    fields: tuple[str, ...] = ()


WRITE = Verdict("write")


def judge(step: Step, current: Mapping[str, Any] | None) -> Verdict:
    """The verdict on `step` when its record is `current` (None: there is no such record; for
    a create, the old id's record)."""
    from convrisk.api_client.records import differs

    id = step.id
    if step.operation == "delete":
        if current is None:
            return Verdict("done", f"{id} is gone already: nothing to undo.")
        fields = differs(current, step.expect)
        return Verdict("changed", "it was created", tuple(fields)) if fields else WRITE
    if step.operation == "update":
        if current is None:
            return Verdict("refused", f"{id} was deleted since the update: nothing to put back.")
        fields = differs(current, step.expect)
        if fields and not differs(current, step.body):
            return Verdict("done", f"{id} is as it was before the update already: nothing to undo.")
        return Verdict("changed", "the update", tuple(fields)) if fields else WRITE
    if current is None:
        return WRITE
    fields = differs(current, step.expect)
    if not fields:
        return Verdict("done", f"{id} exists again as it was: nothing to undo.")
    return Verdict("changed", "the delete (it exists again)", tuple(fields))


def judge_finish(
    step: Step, id: str, made_as: Mapping[str, Any] | None, current: Mapping[str, Any] | None
) -> Verdict:
    """The verdict on the last write of a create's unit (the fields a create does not take, on
    the record `id` it made) when that record is `current` (None: gone): written only where it
    still holds what the create left there (`made_as`: its answer; None, unknown: not checked),
    or holds `then` already."""
    from convrisk.api_client.records import differs

    if current is None:
        return Verdict(
            "refused", f"{id}, made anew for {step.id} by this undo, was deleted since: left alone."
        )
    if made_as is None or not differs(current, step.then):
        return WRITE
    fields = differs(current, {name: made_as.get(name) for name in step.then})
    return Verdict("changed", f"it was made anew as {id}", tuple(fields)) if fields else WRITE


def changed_message(step: Step, verdict: Verdict, *, force: bool) -> str:
    """The line that says a record changed since its entry: left alone, or put back (--force)."""
    shown = ", ".join(verdict.fields)
    if force:
        return f"{step.id} changed since {verdict.message} ({shown}): --force, put back anyway."
    return (
        f"{step.id} changed since {verdict.message} ({shown}): left alone. --force puts it back "
        "anyway."
    )


class Planner:
    """Decides each entry's write from the journal alone."""

    def __init__(self, printer: Printer, chosen: Chosen) -> None:
        self.printer = printer
        self.chosen = chosen
        self.plan = Plan()
        # Entries of a whole command (a run id, --last) that need nothing, by reason.
        self.skipped: dict[str, int] = {}

    def refuse(self, entry: Entry, message: str) -> None:
        """Leave an entry alone and say why (exit 1 at the end)."""
        refusal = Refused(f"{entry['entry']}: {message}")
        self.printer.error(describe(refusal, remote=self.printer.remote))
        self.plan.refused.append(refusal)

    def note(self, entry: Entry, message: str) -> None:
        """Say on stderr why an entry needs nothing done."""
        self.printer.notice(f"{entry['entry']}: {message}")

    def skip(self, why: str) -> None:
        """Count an entry of a whole command that needs nothing (one note per reason)."""
        self.skipped[why] = self.skipped.get(why, 0) + 1

    def make(self) -> Plan:
        """Plan every chosen entry, newest first."""
        for entry in self.chosen.entries:
            self.entry(entry)
        for why, count in self.skipped.items():
            self.printer.notice(f"Skipped {counted(count, 'entry', 'entries')}: {why}.")
        return self.plan

    def entry(self, entry: Entry) -> None:
        """Plan one entry: a step, a note that nothing is needed, or a refusal."""
        from convrisk.api_client.resources import RESOURCES

        light = light_of(entry)
        name = entry["entry"]
        by = self.chosen.undone_by.get(name)
        if light.operation == "api":
            what = f"{entry.get('method', '')} {entry.get('path', '')}".strip()
            message = (
                f"an `api` request ({what}) cannot be undone by convrisk: put it back by hand "
                "with `convrisk api`."
            )
            if name in self.chosen.named:
                self.refuse(entry, message)
            else:
                self.skip("`api` requests (convrisk cannot undo them; see `convrisk history`)")
            return
        if by is not None:
            if name in self.chosen.named:
                self.refuse(entry, f"already undone by {by}.")
            else:
                self.skip("already undone")
            return
        if light.status in ("failed", "replayed"):
            if light.status == "failed":
                what, why = "failed", "undo puts back only what the service confirmed"
            else:
                what, why = "was a replay", "an earlier command made that record: undo that one"
            if name in self.chosen.named:
                self.note(entry, f"its {light.operation} {what}: skipped ({why}).")
            else:
                self.skip(f"their {light.operation} {what} ({why})")
            return
        resource = RESOURCES.get(light.resource) if light.resource else None  # type: ignore[call-overload]
        id = entry.get("id")
        if not reversible(light) or resource is None or not isinstance(id, str):
            self.refuse(entry, "the entry does not say which record it wrote: cannot undo it.")
            return
        if entry.get("redacted"):
            self.refuse(
                entry,
                f"the journal holds {id} with the token's text hidden (as ***): undo would write "
                "*** in its place, so it leaves it alone.",
            )
            return
        if entry.get("non_finite"):
            self.refuse(
                entry,
                f"the journal holds {id} with numbers JSON cannot hold (NaN, Infinity, 1e400) "
                "written as strings: undo would write the strings in their place, so it leaves "
                "it alone.",
            )
            return
        before, after = entry.get("before"), entry.get("after")
        if light.operation == "create":
            if not isinstance(after, dict):
                self.refuse(entry, "the entry lacks the record it created: cannot undo it.")
                return
            step = Step(name, resource.name, "delete", id, expect=settable_of(resource, after))
            self.plan.steps.append(step)
        elif light.operation == "update":
            self.undo_update(entry, resource, id, before, after)
        elif not isinstance(before, dict):
            self.refuse(entry, "the entry lacks the record it deleted: cannot undo it.")
        else:
            body, then = recreation(resource, before)
            expect = settable_of(resource, before)
            step = Step(name, resource.name, "create", id, body, then, expect)
            started = self.chosen.started.get(name)
            if started is not None:
                made_as = started.get("after")
                step.made = started.get("id")
                step.made_as = made_as if isinstance(made_as, dict) else None
            self.plan.steps.append(step)

    def undo_update(
        self,
        entry: Entry,
        resource: Resource,
        id: str,
        before: dict[str, Any] | None,
        after: dict[str, Any] | None,
    ) -> None:
        """An update is undone by an update of the fields its command set, back to their values
        before it, when the record still holds the values the update left in them."""
        if not isinstance(before, dict) or not isinstance(after, dict):
            self.refuse(entry, "the entry lacks the record before or after it: cannot undo it.")
            return
        settable = [f.name for f in resource.updatable()]
        given = entry.get("set")
        names = [n for n in given if n in settable] if isinstance(given, list) else settable
        back = {n: before.get(n) for n in names if n in before and before.get(n) != after.get(n)}
        if not back:
            self.note(entry, f"the update of {id} changed nothing a client sets: nothing to undo.")
            return
        expect = {n: after.get(n) for n in back}
        self.plan.steps.append(Step(entry["entry"], resource.name, "update", id, back, {}, expect))


def recreation(
    resource: Resource, before: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A deleted record's create body, and the settable fields a create does not take (set by
    an update after it), split as `import --copy` splits an export."""
    from convrisk.cli.importing.run import import_spec
    from convrisk.cli.output.resource_kinds import CONVERSATIONS, RISK_PROFILES

    kind = CONVERSATIONS if resource.name == "conversations" else RISK_PROFILES
    spec = import_spec(kind, resource)
    body = {n: v for n, v in before.items() if n in spec.create_fields and v is not None}
    then = {n: v for n, v in before.items() if n in spec.copy_updates}
    return {**spec.create_defaults, **body}, then
