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

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from . import options as opt
from .context import AppContext, app_context
from .errors import CliError, Failures, UsageProblem, describe, stops_the_loop
from .guard import check_write, refuse_read_only
from .journal import Entry, JournalError, Problem, journal_off, journal_path
from .kinds import UNDONE

if TYPE_CHECKING:
    from convrisk.api_client.client import ResourceClient
    from convrisk.api_client.resources import Resource

    from .output import Printer
    from .settings import Settings

# `--last N` takes at most this many commands (a bound, far above any use by hand).
MAX_LAST = 10_000
# How many names a refusal lists before it says "and N more".
NAMED = 5
# Bad lines of the journal named one by one before one line says there are more (as history).
NAMED_PROBLEMS = 10


class Refused(CliError):
    """An entry undo leaves alone: its record changed since, it was undone already, or it
    cannot be reversed (exit 1)."""

    error_type = "undo_refused"


@dataclass(frozen=True)
class Place:
    """Where writes go: the profile, the backend and its target (base_url or database path),
    as the journal records them."""

    profile: str
    backend: str
    target: str

    def describe(self) -> str:
        """`profile prod (remote https://...)`."""
        return f"profile {self.profile} ({self.backend} {self.target})"


def place_of(settings: Settings) -> Place:
    """The place the current settings write to."""
    from .context import journal_target

    backend = "local" if settings.base_url is None else "remote"
    return Place(settings.profile, backend, journal_target(settings))


def entry_place(entry: Mapping[str, Any]) -> Place:
    """The place an entry was written to."""
    return Place(str(entry.get("profile")), str(entry.get("backend")), str(entry.get("target")))


# -- which entries ------------------------------------------------------------------------------

# The journal is read newest first and no further back than needed. Entries are stamped as they
# are written and appended at once, so a line stands at most a little out of time order (two
# processes appending): reading goes on this far (in ms) past the start of a run still wanted.
OVERLAP_MS = 60 * 60 * 1000


@dataclass(frozen=True)
class Light:
    """What the choice needs of one entry."""

    entry: str
    run: str
    place: Place
    operation: str
    status: str
    undoes: str | None
    resource: str | None


@dataclass
class Chosen:
    """The entries to undo, newest first; for each already undone, the entry that undid it;
    the entries named one by one (an already undone one is refused rather than skipped)."""

    entries: list[Entry]
    undone_by: dict[str, str]
    named: set[str]


def reversible(light: Light) -> bool:
    """Whether an entry wrote a record that undo can put back (a create, update or delete that
    the service did; not an `api` request, a failure or a replayed answer)."""
    return (
        light.operation in ("create", "update", "delete")
        and light.status == "ok"
        and light.resource in ("conversations", "risk_profiles")
    )


def _light(entry: Entry) -> Light:
    """What the choice and the plan read of an entry, its optional keys checked."""
    undoes = entry.get("undoes")
    resource = entry.get("resource")
    return Light(
        entry["entry"],
        entry["run"],
        entry_place(entry),
        entry["operation"],
        str(entry["outcome"].get("status")),
        undoes if isinstance(undoes, str) else None,
        resource if isinstance(resource, str) else None,
    )


def stamp(id: str) -> int | None:
    """The Unix milliseconds an entry or run id was made at (`j_` + 12 hex digits + ...)."""
    try:
        return int(id[2:14], 16) if len(id) >= 14 else None
    except ValueError:
        return None


def _newest_first(path: Path, printer: Printer) -> Iterator[Entry]:
    """The journal's entries, newest first; each line that is not one is named on stderr and
    the rest read all the same."""
    from .journal import read_newest

    problems = 0
    try:
        for item in read_newest(path):
            if isinstance(item, Problem):
                problems += 1
                if problems <= NAMED_PROBLEMS:
                    printer.warning(f"The journal {item.describe()}.")
                elif problems == NAMED_PROBLEMS + 1:
                    printer.warning(
                        f"More lines of the journal {path} cannot be read (skipped, not named): "
                        "`convrisk history --all` counts them."
                    )
                continue
            yield item
    except JournalError as exc:
        raise UsageProblem(str(exc)) from None
    except OSError as exc:
        raise UsageProblem(f"Cannot read the journal {path}: {exc.strerror or exc}.") from None


@dataclass
class Run:
    """The entries of one command seen so far (newest first) and what they say of it."""

    id: str
    # Each with its place in the reading (0: the newest line), to keep the journal's order.
    entries: list[tuple[int, Entry]] = field(default_factory=list)
    undo: bool = False  # written by undo
    elsewhere: bool = False  # written to another place than the current one
    reversible: list[str] = field(default_factory=list)  # its entries undo can reverse
    api: list[str] = field(default_factory=list)  # its `api` requests the service did

    def before(self, now: int | None) -> bool:
        """Whether reading has gone past this run's start (no entry of it can come later)."""
        start = stamp(self.id)
        return now is not None and start is not None and now < start - OVERLAP_MS


class Choice:
    """One newest-first reading of the journal, kept to what the choice needs."""

    def __init__(self, here: Place, ids: Sequence[str], last: int | None) -> None:
        self.here = here
        self.last = last
        self.wanted_entries = {i for i in ids if i.startswith("j_")}
        self.wanted_runs = {i for i in ids if i.startswith("r_")}
        self.found: dict[str, tuple[int, Entry]] = {}
        self.runs: dict[str, Run] = {}
        self.order: list[Run] = []  # the runs in the order met: newest last entry first
        self.read = 0
        self.undone_by: dict[str, str] = {}
        self.picked: list[Run] = []
        self._checked = 0  # runs[:_checked] are complete and judged (--last)

    def add(self, entry: Entry) -> None:
        """Take one entry into account."""
        light = _light(entry)
        position = self.read
        self.read += 1
        if light.undoes is not None and light.status in ("ok", "replayed"):
            self.undone_by.setdefault(light.undoes, light.entry)
        if self.last is None:
            if light.entry in self.wanted_entries:
                self.found[light.entry] = (position, entry)
            if light.run not in self.wanted_runs:
                return
        run = self.runs.get(light.run)
        if run is None:
            run = self.runs[light.run] = Run(light.run)
            self.order.append(run)
        run.undo = run.undo or light.undoes is not None
        run.elsewhere = run.elsewhere or light.place != self.here
        if self.last is not None and (run.undo or run.elsewhere):
            run.entries.clear()  # never chosen by --last: kept no longer
            return
        run.entries.append((position, entry))
        if reversible(light):
            run.reversible.append(light.entry)
        elif light.operation == "api" and light.status == "ok":
            run.api.append(light.entry)

    def done(self, now: int | None) -> bool:
        """Whether nothing older can change the choice."""
        if self.last is None:
            return self.wanted_entries <= self.found.keys() and all(
                run_id in self.runs and self.runs[run_id].before(now) for run_id in self.wanted_runs
            )
        while self._checked < len(self.order) and self.order[self._checked].before(now):
            run = self.order[self._checked]
            self._checked += 1
            if self.wanted(run):
                self.picked.append(run)
                if len(self.picked) == self.last:
                    return True
        return False

    def wanted(self, run: Run) -> bool:
        """--last: a command that wrote here, not undo's, with a record left to put back; or
        an `api` command that wrote here (undo cannot put it back, and says so: passing over it
        would undo an older command than the last one instead)."""
        return (
            not run.undo
            and not run.elsewhere
            and (
                any(e not in self.undone_by for e in run.reversible)
                or (bool(run.api) and not run.reversible)
            )
        )

    def finish(self) -> None:
        """The whole journal is read: judge the runs not judged yet (--last)."""
        if self.last is None:
            return
        for run in self.order[self._checked :]:
            if len(self.picked) < self.last and self.wanted(run):
                self.picked.append(run)
        self._checked = len(self.order)


def choose(
    path: Path, here: Place, printer: Printer, *, ids: Sequence[str], last: int | None
) -> Chosen:
    """The entries to undo: those named (entry or run ids) or the last `last` commands.

    Unknown ids and entries of another place are usage errors (exit 2), before anything else.
    """
    for given in ids:
        if not given.startswith(("j_", "r_")):
            raise UsageProblem(
                f"{given!r} is not an entry id (j_...) or a run id (r_...): see `convrisk "
                "history` for them.",
                param="ENTRY",
            )
    choice = Choice(here, ids, last)
    for entry in _newest_first(path, printer):
        choice.add(entry)
        if choice.done(stamp(entry["entry"])):
            break
    else:
        choice.finish()
    if last is not None:
        picked = _picked(choice, here, printer)
        # An `api` command picked is refused (exit 1), as if named: it is what was asked for.
        api = {e for run in choice.picked if not run.reversible for e in run.api}
        return Chosen(picked, choice.undone_by, api)
    unknown = [i for i in ids if i not in choice.found and i not in choice.runs]
    if unknown:
        raise UsageProblem(
            f"No entry {', '.join(unknown)} in the journal {path} (see `convrisk history`).",
            param="ENTRY",
        )
    kept = {e["entry"]: (at, e) for run in choice.runs.values() for at, e in run.entries}
    kept.update(choice.found)
    chosen = [e for _, e in sorted(kept.values(), key=lambda pair: pair[0])]  # newest first
    elsewhere = [e for e in chosen if entry_place(e) != here]
    if elsewhere:
        shown = ", ".join(f"{e['entry']} ({entry_place(e).describe()})" for e in elsewhere[:NAMED])
        more = f" and {len(elsewhere) - NAMED} more" if len(elsewhere) > NAMED else ""
        raise UsageProblem(
            f"{shown}{more} {'was' if len(elsewhere) == 1 else 'were'} written elsewhere than the "
            f"current {here.describe()}: undo acts only on the service an entry was written to. "
            "Choose it with --profile (and --base-url or --db)."
        )
    return Chosen(chosen, choice.undone_by, choice.wanted_entries)


def _picked(choice: Choice, here: Place, printer: Printer) -> list[Entry]:
    """--last: the entries of the commands picked, newest first."""
    assert choice.last is not None
    if not choice.picked:
        raise Refused(
            f"Nothing to undo on the {here.describe()}: the journal holds no write there that "
            "is not undone already."
        )
    if len(choice.picked) < choice.last:
        printer.notice(f"Only {_counted(len(choice.picked), 'command', 'commands')} to undo here.")
    kept = sorted((pair for run in choice.picked for pair in run.entries), key=lambda p: p[0])
    return [entry for _, entry in kept]  # newest first, as read


# -- the plan -----------------------------------------------------------------------------------


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
            self.printer.notice(f"Skipped {_counted(count, 'entry', 'entries')}: {why}.")
        return self.plan

    def entry(self, entry: Entry) -> None:
        """Plan one entry: a step, a note that nothing is needed, or a refusal."""
        from convrisk.api_client.resources import RESOURCES

        light = _light(entry)
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


# -- the writes ---------------------------------------------------------------------------------


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
        untold.append(_counted(later, "write to a record made anew", "writes to records made anew"))
    if updates:
        untold.append(
            f"the update of the fields a create does not take, where the answer differs from "
            f"them ({_counted(updates, 'record', 'records')})"
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


# -- the command --------------------------------------------------------------------------------

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
        if reversible(_light(entry)) and entry["entry"] not in chosen.undone_by
    )
    if not dry_run:
        check_write(run, count=to_touch, what="undo journal entries", max_affected=cap, yes=yes)
    plan = Planner(run, printer, chosen, force=force).make()
    first: BaseException | None = plan.refused[0] if plan.refused else None
    failed = len(plan.refused)
    if run.as_curl:
        if not dry_run:  # a dry run's requests are its reads, printed as the plan made them
            print_requests(run, printer, plan.steps)
    elif dry_run:
        with printer.records(UNDONE, many=True) as sink:
            sink.write([row(step, "planned") for step in plan.steps])
        printer.notice(
            f"Dry run: {_counted(len(plan.steps), 'write', 'writes')} planned, "
            f"{failed:,} refused. Nothing was written."
        )
    else:
        error = execute(run, printer, plan.steps)
        first = first or error
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


def _counted(count: int, one: str, many: str) -> str:
    """`1 entry`, `2 entries`."""
    return f"{count:,} {one if count == 1 else many}"
