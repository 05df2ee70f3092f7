"""The plan of `convrisk undo`: the write that puts back each chosen entry's record, decided
from the journal and the record's current state (every record retrieved, nothing written)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from .errors import describe
from .journal import Entry
from .undo_choice import Chosen, Refused, counted, light_of, reversible

if TYPE_CHECKING:
    from convrisk.api_client.client import ResourceClient
    from convrisk.api_client.resources import Resource

    from .context import AppContext
    from .output import Printer


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


@dataclass
class Plan:
    """The writes, newest entry first, and the entries refused (each already reported)."""

    steps: list[Step] = field(default_factory=list)
    refused: list[Refused] = field(default_factory=list)


def compared(resource: Resource) -> tuple[str, ...]:
    """The fields that say whether a record changed: those a client sets (not the times the
    service moves on its own: created_at, updated_at, last_active_at, last_opened_at)."""
    return tuple(f.name for f in resource.writable())


def differs(
    current: Mapping[str, Any], expected: Mapping[str, Any], names: Sequence[str]
) -> list[str]:
    """The fields among `names` where the two records differ (a field neither has is equal)."""
    return [
        n for n in names if (n in current or n in expected) and current.get(n) != expected.get(n)
    ]


class Planner:
    """Decides each entry's write from the journal and the records' current state."""

    def __init__(self, run: AppContext, printer: Printer, chosen: Chosen, *, force: bool) -> None:
        self.run = run
        self.printer = printer
        self.chosen = chosen
        self.force = force
        self.plan = Plan()
        # The state each record will be in once the steps planned so far are done (None: gone).
        self.state: dict[tuple[str, str], dict[str, Any] | None] = {}
        # Entries of a whole command (a run id, --last) that need nothing, by reason.
        self.skipped: dict[str, int] = {}

    def target(self, resource: str) -> ResourceClient[Any, Any, Any, Any]:
        """The Client's resource of this name."""
        target: ResourceClient[Any, Any, Any, Any] = getattr(self.run.client(), resource)
        return target

    def current(
        self, resource: str, id: str, assumed: Mapping[str, Any] | None
    ) -> dict[str, Any] | None:
        """The record as it is (or will be after the planned steps); None when it is gone.

        Under --as-curl the read is printed, not sent: the record is taken to be `assumed`,
        as its entry left it.
        """
        from convrisk.api_client.errors import NotFoundError

        key = (resource, id)
        if key not in self.state:
            try:
                self.state[key] = dict(self.target(resource).retrieve(id))
            except NotFoundError:
                self.state[key] = None
            except self.run.captured():
                self.state[key] = None if assumed is None else dict(assumed)
        return self.state[key]

    def refuse(self, entry: Entry, message: str) -> None:
        """Leave an entry alone and say why (exit 1 at the end)."""
        refusal = Refused(f"{entry['entry']}: {message}")
        info = describe(refusal, remote=self.printer.remote)
        self.printer.error(info)
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
        before, after = entry.get("before"), entry.get("after")
        if light.operation == "create":
            self.undo_create(entry, resource, id, after)
        elif light.operation == "update":
            self.undo_update(entry, resource, id, before, after)
        else:
            self.undo_delete(entry, resource, id, before)

    def changed(self, entry: Entry, id: str, fields: Sequence[str], since: str) -> bool:
        """Whether to leave a changed record alone (refused, said why), or go on (--force)."""
        shown = ", ".join(fields)
        if self.force:
            self.note(entry, f"{id} changed since {since} ({shown}): --force, put back anyway.")
            return False
        self.refuse(
            entry,
            f"{id} changed since {since} ({shown}): left alone. --force puts it back anyway.",
        )
        return True

    def undo_create(
        self, entry: Entry, resource: Resource, id: str, after: dict[str, Any] | None
    ) -> None:
        """A create is undone by a delete, when the record is still as created."""
        if not isinstance(after, dict):
            self.refuse(entry, "the entry lacks the record it created: cannot undo it.")
            return
        current = self.current(resource.name, id, after)
        if current is None:
            self.note(entry, f"{id} is gone already: nothing to undo.")
            return
        fields = differs(current, after, compared(resource))
        if fields and self.changed(entry, id, fields, "it was created"):
            return
        self.plan.steps.append(Step(entry["entry"], resource.name, "delete", id))
        self.state[(resource.name, id)] = None

    def undo_update(
        self,
        entry: Entry,
        resource: Resource,
        id: str,
        before: dict[str, Any] | None,
        after: dict[str, Any] | None,
    ) -> None:
        """An update is undone by an update of the fields it changed, back to their values
        before it, when the record is still as the update left it."""
        if not isinstance(before, dict) or not isinstance(after, dict):
            self.refuse(entry, "the entry lacks the record before or after it: cannot undo it.")
            return
        settable = [f.name for f in resource.updatable()]
        back = {n: before[n] for n in settable if n in before and before.get(n) != after.get(n)}
        if not back:
            self.note(entry, f"the update of {id} changed nothing a client sets: nothing to undo.")
            return
        current = self.current(resource.name, id, after)
        if current is None:
            self.refuse(entry, f"{id} was deleted since the update: nothing to put back.")
            return
        names = compared(resource)
        fields = differs(current, after, names)
        if fields and not differs(current, before, names):
            self.note(entry, f"{id} is as it was before the update already: nothing to undo.")
            return
        if fields and self.changed(entry, id, fields, "the update"):
            return
        self.plan.steps.append(Step(entry["entry"], resource.name, "update", id, back))
        self.state[(resource.name, id)] = {**current, **back}

    def undo_delete(
        self, entry: Entry, resource: Resource, id: str, before: dict[str, Any] | None
    ) -> None:
        """A delete is undone by a create of the old fields (a new id), when the record is
        still gone; a record with the old id that exists again is updated back (--force)."""
        if not isinstance(before, dict):
            self.refuse(entry, "the entry lacks the record it deleted: cannot undo it.")
            return
        current = self.current(resource.name, id, None)
        if current is not None:
            names = compared(resource)
            fields = differs(current, before, names)
            if not fields:
                self.note(entry, f"{id} exists again as it was: nothing to undo.")
                return
            if self.changed(entry, id, fields, "the delete (it exists again)"):
                return
            back = {f.name: before[f.name] for f in resource.updatable() if f.name in fields}
            self.plan.steps.append(Step(entry["entry"], resource.name, "update", id, back))
            self.state[(resource.name, id)] = {**current, **back}
            return
        body, then = recreation(resource, before)
        self.plan.steps.append(Step(entry["entry"], resource.name, "create", id, body, then))
        self.state[(resource.name, id)] = dict(before)


def recreation(
    resource: Resource, before: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A deleted record's create body, and the settable fields a create does not take (set by
    an update after it), split as `import --copy` splits an export."""
    from .importer import import_spec
    from .resource_kinds import CONVERSATIONS, RISK_PROFILES

    kind = CONVERSATIONS if resource.name == "conversations" else RISK_PROFILES
    spec = import_spec(kind, resource)
    body = {n: v for n, v in before.items() if n in spec.create_fields and v is not None}
    then = {n: v for n, v in before.items() if n in spec.copy_updates}
    return {**spec.create_defaults, **body}, then
