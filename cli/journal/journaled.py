"""A Backend that journals every write of the one it wraps (DESIGN 5.3): create, create_many,
update, delete, and `send` with a method other than GET or HEAD.

What each entry holds: a create's `after` is the answer (its outcome `replayed` when the service
answered an earlier request with the same Idempotency-Key); an update's and a delete's `before` is
the record the write was computed from (locally read in the write's own transaction, remotely one
GET just before it: `Backend.change`/`remove`), `after` the update's answer, and an update's `set`
the fields its command set. An `api` request records its method, path and status; its `after` is the
answer when a POST or PUT answered a record, its `before` is never fetched (`api` sends the requests
it is given, no other). A write that fails is journaled as `failed` with its error, unless a check
refused it before anything was attempted (nothing was written: no entry); a batch's items that
were never sent, and a remote update or delete whose read right before it failed (the write was not
sent), are not journaled either. Entries are appended as each write returns: a create_many's
entries together (an import's batch), so a killed command loses at most the entries of the batch in
flight.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, cast

from convrisk.api_client.errors import (
    APIError,
    ChangedSince,
    ConvriskError,
    InvalidRequestError,
    NotSent,
)
from convrisk.api_client.params import DEFAULT_LIMIT
from convrisk.api_client.records import Change, Created, Record, Removal

if TYPE_CHECKING:
    from pathlib import Path

    from convrisk.api_client.endpoint import Scrubber
    from convrisk.api_client.page import Page, View
    from convrisk.api_client.protocol import (
        Backend,
        ConversationsBackend,
        ResourceBackend,
        RiskProfilesBackend,
    )
    from convrisk.api_client.raw import RawAnswer
    from convrisk.api_client.records import Deleted
    from convrisk.cli.journal.entries import Entry, Operation, Outcome

M = TypeVar("M", bound=Record)
C = TypeVar("C")
U = TypeVar("U")
F = TypeVar("F")

# `api` requests that change nothing: not journaled.
_READS = ("GET", "HEAD")


# Options whose value is a secret, wherever they stand in a command line.
_SECRET_OPTIONS = ("--token",)
_HEADER_OPTIONS = ("-H", "--header")
_SECRET_HEADERS = ("authorization:", "proxy-authorization:", "cookie:")


def redact_argv(argv: Sequence[str], secrets: Sequence[str] = ()) -> list[str]:
    """The command line with every secret replaced by `***`: the value of --token, an
    Authorization (or Cookie) header given with -H, and each of `secrets` wherever it appears."""
    from convrisk.api_client.endpoint import Scrubber

    scrubbers = [Scrubber(secret) for secret in secrets if secret]
    shown: list[str] = []
    hide_next: str | None = None
    for arg in argv:
        if hide_next is not None:
            arg = _hidden(hide_next, arg)
            hide_next = None
        elif arg in _SECRET_OPTIONS:
            hide_next = "value"
        elif arg in _HEADER_OPTIONS:
            hide_next = "header"
        else:
            name, equals, value = arg.partition("=")
            if equals and name in _SECRET_OPTIONS:
                arg = f"{name}=***"
            elif equals and name == "--header":
                arg = f"{name}={_hidden('header', value)}"
            elif arg.startswith("-H") and len(arg) > 2 and not arg.startswith("--"):
                arg = "-H" + _hidden("header", arg[2:])
        for scrubber in scrubbers:
            arg = scrubber.text(arg)
        shown.append(arg)
    return shown


def _hidden(kind: str, value: str) -> str:
    """An option's value with its secret hidden: all of it, or a secret header's value."""
    if kind == "value":
        return "***"
    if value.lstrip().lower().startswith(_SECRET_HEADERS):
        return value.partition(":")[0] + ": ***"
    return value


def _scrubbed(value: Any, scrub: Callable[[str], str]) -> Any:
    """`value` (JSON data) with `scrub` applied to every string in it, keys included."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {scrub(key): _scrubbed(item, scrub) for key, item in value.items()}
    if isinstance(value, list):
        return [_scrubbed(item, scrub) for item in value]
    return value


def journal_off(env: Mapping[str, str]) -> bool:
    """Whether `CONVRISK_JOURNAL=off` turns the journal off (journal.journal_off's rule, here
    so that a command that writes nothing need not import the journal to know it)."""
    return env.get("CONVRISK_JOURNAL", "").strip().lower() == "off"


class Recorder:
    """The journal of one command: what its entries share (run, profile, target, command
    line), the keys a note adds to them, and the appends, which never raise: a journal that
    cannot be written is one warning, and the command's writes go on."""

    def __init__(
        self,
        path: Path | None,
        *,
        env: Mapping[str, str] | None = None,
        profile: str,
        backend: Literal["local", "remote"],
        target: str,
        argv: Sequence[str],
        secrets: Sequence[str] = (),
        warn: Callable[[str], None],
    ) -> None:
        # None: the file `env` names (journal.journal_path), found at the first write.
        self._path = path
        self._env = env or {}
        self._secrets = [secret for secret in secrets if secret]
        self._given: dict[str, Any] = {"profile": profile, "backend": backend, "target": target}
        self._argv = list(argv)
        # Made at the first entry: a command that writes nothing pays nothing.
        self._run: str | None = None
        self._shared: dict[str, Any] | None = None
        # The same, as the middle of a JSON line (see created_line), and journal's functions
        # that make a line's text (imported with it).
        self._shared_text: str | None = None
        self._text_makers: tuple[Callable[[object], str], Callable[[str], str], Callable[[], str]]
        # Per (resource, outcome status): the fixed parts of a create's line.
        self._created_text: dict[tuple[str, str], tuple[str, str]] = {}
        self._scrubbers: list[Scrubber] | None = None
        self._extra: dict[str, Any] = {}
        self._warn = warn
        self._failed = False
        self.written = 0

    @property
    def remote(self) -> bool:
        """Whether the writes go to a remote service (over HTTP)."""
        return bool(self._given["backend"] == "remote")

    @contextmanager
    def note(self, **extra: Any) -> Iterator[None]:
        """Entries written inside carry these keys too (`undoes`, `stands_for`)."""
        saved = self._extra
        self._extra = {**saved, **extra}
        try:
            yield
        finally:
            self._extra = saved

    @property
    def path(self) -> Path:
        """The journal file this command appends to."""
        if self._path is None:
            from convrisk.cli.journal.entries import journal_path

            self._path = journal_path(self._env)
        return self._path

    @property
    def run(self) -> str:
        """This command's run id, shared by its entries."""
        if self._run is None:
            from convrisk.cli.journal.entries import new_id

            self._run = new_id("r_")
        return self._run

    def entry(
        self,
        operation: Operation,
        outcome: Outcome,
        *,
        resource: str | None = None,
        id: str | None = None,
        before: Mapping[str, Any] | None = None,
        after: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
        **more: Any,
    ) -> Entry:
        """One entry of this command, stamped now."""
        from convrisk.cli.journal.entries import new_id, utc_now

        if self._shared is None:
            self._shared = {**self._given, "argv": redact_argv(self._argv, self._secrets)}
        made: dict[str, Any] = {
            "entry": new_id("j_"),
            "run": self.run,
            "time": utc_now(),
            **self._shared,
            "operation": operation,
            "resource": resource,
            "id": id,
            "before": None if before is None else dict(before),
            "after": None if after is None else dict(after),
            "idempotency_key": idempotency_key,
            "outcome": outcome,
            **more,
            **self._extra,
        }
        return cast("Entry", made)

    def created_line(
        self,
        resource: str,
        made: Created[Any],
        outcome: Outcome,
        idempotency_key: str | None,
    ) -> Entry | str:
        """The entry of a create: as the JSON line `journal.append` would write for
        `entry("create", ...)`, byte for byte, when the record's text came with it (then it is
        not encoded again), else as that entry. Always the entry when secrets are scrubbed."""
        record_id = made.record.get("id")
        record_id = record_id if isinstance(record_id, str) else None
        if made.text is None or self._secrets:
            return self.entry(
                "create",
                outcome,
                resource=resource,
                id=record_id,
                after=made.record,
                idempotency_key=idempotency_key,
            )
        if self._shared_text is None:
            from convrisk.cli.journal import entries as journal

            self._text_makers = (journal.line_text, journal.new_id, journal.utc_now)
            self._shared_text = journal.line_text(
                {**self._given, "argv": redact_argv(self._argv, self._secrets)}
            )[1:-1]
        line_text, new_id, utc_now = self._text_makers
        status = outcome["status"]
        fixed = self._created_text.get((resource, status)) if len(outcome) == 1 else None
        if fixed is None:
            fixed = (
                f'"operation":"create","resource":{line_text(resource)}',
                f',"outcome":{line_text(outcome)}',
            )
            if len(outcome) == 1:
                self._created_text[(resource, status)] = fixed
        extra = f",{line_text(self._extra)[1:-1]}" if self._extra else ""
        # new_id and utc_now give letters, digits and punctuation that JSON takes as they are.
        return (
            f'{{"entry":"{new_id("j_")}","run":"{self.run}","time":"{utc_now()}",'
            f"{self._shared_text},{fixed[0]},"
            f'"id":{line_text(record_id)},"before":null,"after":{made.text},'
            f'"idempotency_key":{line_text(idempotency_key)}{fixed[1]}{extra}}}'
        )

    def write(self, entries: Sequence[Entry | str]) -> None:
        """Append entries (an entry, or its line already made by `created_line`) now; on
        failure, warn once and write nothing more for this command."""
        if not entries or self._failed:
            return
        from convrisk.cli.journal.entries import JournalError, append

        if self._secrets:
            # created_line makes no line when there are secrets: every entry here is a dict.
            entries = [
                entry if isinstance(entry, str) else self._redacted(entry) for entry in entries
            ]
        try:
            append(self.path, entries)
        except (OSError, JournalError, ValueError) as exc:
            self._failed = True
            where = f"{self.path}: {exc.strerror or exc}" if isinstance(exc, OSError) else None
            reason = where or str(exc)
            self._warn(
                f"The journal was not written ({reason}): this command's writes were done, "
                "but `history` and `undo` will not know them."
            )
            return
        self.written += len(entries)

    def _redacted(self, entry: Entry) -> Entry:
        """`entry` with every secret hidden; marked `redacted` when a record in it (before or
        after) held one, so that `undo` does not write `***` back in its place."""
        scrubbed: Entry = _scrubbed(entry, self._scrub)
        if any(scrubbed.get(key) != entry.get(key) for key in ("before", "after")):
            scrubbed["redacted"] = True
        return scrubbed

    def _scrub(self, text: str) -> str:
        if self._scrubbers is None:
            from convrisk.api_client.endpoint import Scrubber

            self._scrubbers = [Scrubber(secret) for secret in self._secrets]
        for scrubber in self._scrubbers:
            text = scrubber.text(text)
        return text


def attempted(error: BaseException) -> bool:
    """Whether a write that raised `error` may have written something: not when a check of the
    input refused it before any request (or transaction), nor when it was never sent (a
    batch's item after an error, a remote update or delete whose read right before it failed)."""
    if isinstance(error, NotSent) or (isinstance(error, ConvriskError) and error.before_write):
        return False
    return not (isinstance(error, InvalidRequestError) and not error.answered)


def failed(error: BaseException) -> Outcome:
    """The outcome of a write that raised `error`: its one-line message, its HTTP status."""
    if isinstance(error, KeyboardInterrupt):
        return {
            "status": "failed",
            "error": "Interrupted: the write may or may not have been done.",
        }
    message = getattr(error, "message", None) or str(error) or type(error).__name__
    status = error.status if isinstance(error, APIError) and error.answered else None
    return {"status": "failed", "error": message.splitlines()[0], "http_status": status}


OK: Outcome = {"status": "ok"}
REPLAYED: Outcome = {"status": "replayed"}


class JournaledResource(Generic[M, C, U, F]):
    """One resource's operations, its writes journaled; reads pass straight through."""

    def __init__(self, inner: ResourceBackend[M, C, U, F], name: str, journal: Recorder) -> None:
        self._inner = inner
        self._name = name
        self._journal = journal

    # -- reads ----------------------------------------------------------------------------------

    def list(
        self,
        filters: F | None = None,
        *,
        limit: int = DEFAULT_LIMIT,
        starting_after: str | None = None,
        ending_before: str | None = None,
        view: View = "records",
    ) -> Page[M]:
        """One page, as the wrapped backend gives it."""
        return self._inner.list(
            filters,
            limit=limit,
            starting_after=starting_after,
            ending_before=ending_before,
            view=view,
        )

    def scanned_filters(self, filters: F | None) -> tuple[str, ...]:
        """The filters a list applies by a scan, as the wrapped backend says."""
        return self._inner.scanned_filters(filters)

    def watch_scan(self, report: Callable[[int, int], None] | None) -> None:
        """Passed on to the wrapped backend."""
        self._inner.watch_scan(report)

    def read_ahead(self, on: bool) -> None:
        """Passed on to the wrapped backend."""
        self._inner.read_ahead(on)

    def replays(self, items: Sequence[tuple[C, str | None]]) -> builtins.list[M | None] | None:
        """Read-only (a dry run): passed on."""
        return self._inner.replays(items)

    def retrieve(self, id: str) -> M:
        """The object with this id."""
        return self._inner.retrieve(id)

    # -- writes ---------------------------------------------------------------------------------

    def create(self, params: C, *, idempotency_key: str | None = None) -> M:
        """Create an object and journal it (replayed when the key's earlier answer came back).

        A remote create always carries an Idempotency-Key (the Session makes one when none is
        given): it is made here instead, so that the journal records the key that was sent.
        """
        if idempotency_key is None and self._journal.remote:
            import uuid

            idempotency_key = str(uuid.uuid4())
        try:
            if idempotency_key is None:
                made = Created(self._inner.create(params), False)
            else:
                # The batch form says whether the answer was replayed; the single form does not.
                (result,) = self._inner.create_many([(params, idempotency_key)])
                if isinstance(result, ConvriskError):
                    raise result
                made = result
        except BaseException as exc:
            self._failed("create", None, None, exc, idempotency_key)
            raise
        self._journal.write([self._created(made, idempotency_key)])
        return made.record

    def create_many(
        self,
        items: Sequence[tuple[C, str | None]],
        *,
        stop_on_error: bool = False,
    ) -> builtins.list[Created[M] | ConvriskError]:
        """Create several objects; one entry per item attempted, appended together."""
        try:
            results = self._inner.create_many(items, stop_on_error=stop_on_error)
        except BaseException as exc:
            # The whole batch failed (a database error rolled it back, or an interruption):
            # one entry, since which items landed is not known.
            self._failed("create", None, None, exc, None)
            raise
        entries: builtins.list[Entry | str] = []
        for (_, key), result in zip(items, results, strict=False):
            if isinstance(result, ConvriskError):
                if attempted(result):
                    entries.append(self._entry("create", failed(result), None, None, None, key))
            else:
                entries.append(self._created(result, key))
        self._journal.write(entries)
        return results

    def update(self, id: str, params: U) -> M:
        """Change an object; journaled with the object as it was just before."""
        return self.change(id, params).after

    def delete(self, id: str) -> Deleted:
        """Remove an object; journaled with the object as it was just before."""
        return self.remove(id).answer

    def change(self, id: str, params: U, *, expect: Mapping[str, Any] | None = None) -> Change[M]:
        """Update, journaled with the fields the command set and the record the write was
        computed from (locally read in its own transaction). A record not as `expect` says
        (ChangedSince) was not written: no entry."""
        set_fields = list(cast("Mapping[str, Any]", params))
        try:
            change = self._inner.change(id, params, expect=expect)
        except ChangedSince:
            raise
        except BaseException as exc:
            self._failed("update", id, None, exc, None, set=set_fields)
            raise
        entry = self._entry("update", OK, id, change.before, change.after, None, set=set_fields)
        self._journal.write([entry])
        return change

    def remove(self, id: str, *, expect: Mapping[str, Any] | None = None) -> Removal[M]:
        """Delete, journaled with the record as it was just before (see `change`)."""
        try:
            removal = self._inner.remove(id, expect=expect)
        except ChangedSince:
            raise
        except BaseException as exc:
            self._failed("delete", id, None, exc, None)
            raise
        self._journal.write([self._entry("delete", OK, id, removal.before, None, None)])
        return removal

    # -- entries --------------------------------------------------------------------------------

    def _created(self, made: Created[M], key: str | None) -> Entry | str:
        outcome = REPLAYED if made.replayed else OK
        return self._journal.created_line(self._name, made, outcome, key)

    def _failed(
        self,
        operation: Operation,
        id: str | None,
        before: Mapping[str, Any] | None,
        error: BaseException,
        key: str | None,
        **more: Any,
    ) -> None:
        if isinstance(error, Exception | KeyboardInterrupt) and attempted(error):
            entry = self._entry(operation, failed(error), id, before, None, key, **more)
            self._journal.write([entry])

    def _entry(
        self,
        operation: Operation,
        outcome: Outcome,
        id: object,
        before: Mapping[str, Any] | None,
        after: Mapping[str, Any] | None,
        key: str | None,
        **more: Any,
    ) -> Entry:
        return self._journal.entry(
            operation,
            outcome,
            resource=self._name,
            id=id if isinstance(id, str) else None,
            before=before,
            after=after,
            idempotency_key=key,
            **more,
        )


class JournaledBackend:
    """The Backend `build_client` hands out: the one it wraps, with every write journaled."""

    def __init__(self, inner: Backend, journal: Recorder) -> None:
        self._inner = inner
        self.journal = journal
        self._conversations: ConversationsBackend = JournaledResource(
            inner.conversations, "conversations", journal
        )
        self._risk_profiles: RiskProfilesBackend = JournaledResource(
            inner.risk_profiles, "risk_profiles", journal
        )

    @property
    def conversations(self) -> ConversationsBackend:
        """The conversations resource, journaled."""
        return self._conversations

    @property
    def risk_profiles(self) -> RiskProfilesBackend:
        """The risk profiles resource, journaled."""
        return self._risk_profiles

    def send(self, method: str, target: str, body: bytes | None) -> RawAnswer:
        """One request as it is (`convrisk api`); journaled unless it is a GET or HEAD."""
        if method in _READS:
            return self._inner.send(method, target, body)
        resource, id = _resource_of(target)
        try:
            answer = self._inner.send(method, target, body)
        except BaseException as exc:
            if isinstance(exc, Exception | KeyboardInterrupt):
                entry = self._api_entry(method, target, resource, id, failed(exc), None)
                self.journal.write([entry])
            raise
        after = _record_of(answer) if method in ("POST", "PUT") and answer.ok else None
        if after is not None and id is None:
            id = after.get("id") if isinstance(after.get("id"), str) else None
        if answer.ok:
            outcome: Outcome = {"status": "ok", "http_status": answer.status}
        else:
            error = answer.error()
            outcome = {"status": "failed", "error": error.message, "http_status": answer.status}
        entry = self._api_entry(method, target, resource, id, outcome, after)
        entry["idempotency_key"] = answer.idempotency_key
        self.journal.write([entry])
        return answer

    def _api_entry(
        self,
        method: str,
        target: str,
        resource: str | None,
        id: str | None,
        outcome: Outcome,
        after: dict[str, Any] | None,
    ) -> Entry:
        return self.journal.entry(
            "api", outcome, resource=resource, id=id, after=after, method=method, path=target
        )

    def close(self) -> None:
        """Release the wrapped backend."""
        self._inner.close()


def _resource_of(target: str) -> tuple[str | None, str | None]:
    """The resource and record id a request's path names (`/v1/conversations/conv_1`), if any."""
    from urllib.parse import unquote

    from convrisk.api_client.resources import RESOURCES

    path = target.partition("?")[0]
    for name, resource in RESOURCES.items():
        if path == resource.path:
            return name, None
        if path.startswith(resource.path + "/"):
            rest = unquote(path[len(resource.path) + 1 :])
            return name, rest if rest and "/" not in rest else None
    return None, None


def _record_of(answer: RawAnswer) -> dict[str, Any] | None:
    """The answer's body when it is one record (a JSON object with an id), else None."""
    try:
        body = answer.json()
    except (ValueError, RecursionError):
        return None
    return body if isinstance(body, dict) and isinstance(body.get("id"), str) else None
