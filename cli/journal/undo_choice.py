"""Which journal entries `convrisk undo` takes: those named (entry or run ids), or the last N
commands that wrote to the current place, the journal read newest first and no further back
than the choice needs."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from convrisk.cli.errors import CliError, UsageProblem
from convrisk.cli.journal.entries import Entry, JournalError, Problem

if TYPE_CHECKING:
    from convrisk.cli.output.printer import Printer
    from convrisk.cli.settings import Settings

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
    from convrisk.cli.context import journal_target

    backend = "local" if settings.base_url is None else "remote"
    return Place(settings.profile, backend, journal_target(settings))


def entry_place(entry: Mapping[str, Any]) -> Place:
    """The place an entry was written to."""
    return Place(str(entry.get("profile")), str(entry.get("backend")), str(entry.get("target")))


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
    unit: str | None  # "started": the first write of a reverse of several, not yet finished


@dataclass
class Chosen:
    """The entries to undo, newest first; for each already undone, the entry that undid it;
    the entries named one by one (an already undone one is refused rather than skipped); for
    each whose reverse of several writes was cut short, the entry of its first write (the
    record that write made, as it answered)."""

    entries: list[Entry]
    undone_by: dict[str, str]
    named: set[str]
    started: dict[str, Entry] = field(default_factory=dict)


def reversible(light: Light) -> bool:
    """Whether an entry wrote a record that undo can put back (a create, update or delete that
    the service did; not an `api` request, a failure or a replayed answer)."""
    return (
        light.operation in ("create", "update", "delete")
        and light.status == "ok"
        and light.resource in ("conversations", "risk_profiles")
    )


def light_of(entry: Entry) -> Light:
    """What the choice and the plan read of an entry, its optional keys checked."""
    undoes = entry.get("undoes")
    resource = entry.get("resource")
    unit = entry.get("unit")
    return Light(
        entry["entry"],
        entry["run"],
        entry_place(entry),
        entry["operation"],
        str(entry["outcome"].get("status")),
        undoes if isinstance(undoes, str) else None,
        resource if isinstance(resource, str) else None,
        unit if isinstance(unit, str) else None,
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
    from convrisk.cli.journal.entries import read_newest

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
        self.started: dict[str, Entry] = {}
        self.picked: list[Run] = []
        self._checked = 0  # runs[:_checked] are complete and judged (--last)

    def add(self, entry: Entry) -> None:
        """Take one entry into account."""
        light = light_of(entry)
        position = self.read
        self.read += 1
        if light.undoes is not None and light.status in ("ok", "replayed"):
            if light.unit != "started":
                self.undone_by.setdefault(light.undoes, light.entry)
            elif isinstance(entry.get("id"), str):
                # Newest first: the latest try of the unit.
                self.started.setdefault(light.undoes, entry)
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
        return Chosen(picked, choice.undone_by, api, choice.started)
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
    return Chosen(chosen, choice.undone_by, choice.wanted_entries, choice.started)


def _picked(choice: Choice, here: Place, printer: Printer) -> list[Entry]:
    """--last: the entries of the commands picked, newest first."""
    assert choice.last is not None
    if not choice.picked:
        raise Refused(
            f"Nothing to undo on the {here.describe()}: the journal holds no write there that "
            "is not undone already."
        )
    if len(choice.picked) < choice.last:
        printer.notice(f"Only {counted(len(choice.picked), 'command', 'commands')} to undo here.")
    kept = sorted((pair for run in choice.picked for pair in run.entries), key=lambda p: p[0])
    return [entry for _, entry in kept]  # newest first, as read


def counted(count: int, one: str, many: str) -> str:
    """`1 entry`, `2 entries`."""
    return f"{count:,} {one if count == 1 else many}"
