"""`conv import` / `risk import`: each record of a file is one create or update, run through the
Client in file order, with one result per record; re-running the same file creates nothing twice.

A record without `id` is a create with the create fields; with `id` an update of the fields it
carries. Creates go to the backend in batches (`create_many`: one transaction locally, a few
concurrent requests remotely), each with an idempotency key derived from the record and its line
(see `import_plan.idempotency_key` and docs/design/import.md), so that a re-run after an
interruption replays what was done instead of doing it again. A result's status is the
service's word: `replayed` when it answered an earlier identical request and wrote nothing
(DESIGN 5.2).

With `--copy` a record is an export (`-o jsonl`): created anew under a key derived from its
exported id, then updated with the settable fields a create does not take
(`import_plan.plan_copy`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from copy import copy as shallow_copy
from itertools import islice
from typing import TYPE_CHECKING, Any

from convrisk.cli.context import AppContext
from convrisk.cli.errors import CliError, Failures, RecordsFailed, describe, stops_the_loop
from convrisk.cli.importing.files import CellType, Record, Source, read
from convrisk.cli.importing.plan import CONVERSATION_IMPORT as CONVERSATION_IMPORT
from convrisk.cli.importing.plan import IMPORTS as IMPORTS
from convrisk.cli.importing.plan import RISK_PROFILE_IMPORT as RISK_PROFILE_IMPORT
from convrisk.cli.importing.plan import (
    RUN_VARIABLE,
    Failure,
    ImportSpec,
    Operation,
    checked_operation,
    first_checked,
)
from convrisk.cli.importing.plan import import_spec as import_spec
from convrisk.cli.importing.report import counted, import_report
from convrisk.cli.output.kinds import plan_kind, planned
from convrisk.cli.output.printer import Printer

if TYPE_CHECKING:
    from convrisk.api_client.errors import ConvriskError
    from convrisk.api_client.records import Created

# Records read, checked and sent together: one create_many (one local transaction) at most.
BATCH = 256
# Replayed records read back at once, remotely (as many as create_many sends at once).
CHECKS_AT_ONCE = 8

# What ends a batch early: False (go on), True (--stop-on-error met a failed record), or an
# error that is not one record's (unreachable, token refused), raised once it is reported.
Stop = bool | BaseException


def _batches(records: Iterator[Record]) -> Iterator[list[Record]]:
    while batch := list(islice(records, BATCH)):
        yield batch


class Importer:
    """One run of an import: reads, checks, sends and reports, batch after batch."""

    def __init__(
        self,
        run: AppContext,
        spec: ImportSpec,
        printer: Printer,
        *,
        stop_on_error: bool,
        copy: bool = False,
    ) -> None:
        self.run = run
        self.spec = spec
        self.printer = printer
        self.stop_on_error = stop_on_error
        self.copy = copy
        self.target = spec.target(run)
        self.run_id = run.env.get(RUN_VARIABLE, "")

    def error_fields(self, failure: Failure) -> dict[str, Any]:
        """The `error` of a failed record's result: type, message and what applies."""
        info = describe(failure.error, remote=self.printer.remote, settings=self.run.settings)
        return info.fields()

    def result(self, failure: Failure) -> dict[str, Any]:
        """The result of a failed record."""
        return {
            "line": failure.line,
            "status": "failed",
            "id": failure.id if isinstance(failure.id, str) else None,
            "error": self.error_fields(failure),
        }

    def execute(self, records: Iterator[Record], source: Source) -> None:
        """Run every record, reporting each result in file order."""
        with import_report(
            self.printer, self.spec.kind, source.name, source.size, lambda: source.position
        ) as report:
            for batch in _batches(records):
                ops = [
                    checked_operation(
                        self.spec, self.target, r, self.run_id, check_body=False, copy=self.copy
                    )
                    for r in batch
                ]
                rows, stop = self._run_batch(ops)
                report.add(rows)
                if isinstance(stop, BaseException):
                    raise stop
                if stop:
                    break
        failed, gone = report.counts["failed"], report.counts["gone"]
        if failed or gone:
            what = [f"{failed:,} failed"] if failed else []
            what += [f"{gone:,} gone"] if gone else []
            raise RecordsFailed(f"{' and '.join(what)} of {counted(report.total, 'record')}.")

    def _run_batch(self, ops: list[Operation | Failure]) -> tuple[list[dict[str, Any]], Stop]:
        """Run a batch in order: consecutive creates together, updates one by one; the results
        and what stops the import (see Stop)."""
        rows: list[dict[str, Any]] = []
        index = 0
        while index < len(ops):
            op = ops[index]
            if isinstance(op, Failure):
                rows.append(self.result(op))
                index += 1
                if self.stop_on_error:
                    return rows, True
                continue
            if op.operation == "update":
                row, stop = self._update(op)
                if row is not None:
                    rows.append(row)
                index += 1
                if stop:
                    return rows, stop
                continue
            end = index
            # A copy under --stop-on-error creates and updates one record at a time: nothing is
            # created after the first failure, its update's included.
            last = index + 1 if self.copy and self.stop_on_error else len(ops)
            while end < last:
                candidate = ops[end]
                if isinstance(candidate, Failure) or candidate.operation != "create":
                    break
                end += 1
            creates = [o for o in ops[index:end] if isinstance(o, Operation)]
            made, stop = self._create(creates)
            rows.extend(made)
            if stop:
                return rows, stop
            index = end
        return rows, False

    def _create(self, creates: list[Operation]) -> tuple[list[dict[str, Any]], Stop]:
        """Run consecutive creates together (create_many); their results in order.

        Every record the service made is reported, also after an error that stops the import
        (raised once, by the caller): a copy whose other fields were then not set is a failure
        that names the record it made.
        """
        from convrisk.api_client.errors import ConvriskError, NotFoundError, NotSent

        results = self.target.create_many(
            [(op.body, op.key) for op in creates], stop_on_error=self.stop_on_error
        )
        checks = self._check_replayed(creates, results)
        rows: list[dict[str, Any]] = []
        stopped: Stop = False
        for index, (op, result) in enumerate(zip(creates, results, strict=False)):
            if isinstance(result, ConvriskError):
                # After a stopping error only what was done is reported (sent alongside it);
                # the rest failed alike or was never sent, and the error is raised once.
                if stopped is False and stops_the_loop(result):
                    stopped = result
                if stopped is not False or isinstance(result, NotSent):
                    continue
                if self.copy and getattr(result, "param", None) == "idempotency_key":
                    result = _changed_since_copied(result)
                rows.append(self.result(Failure(op.line, result)))
                if self.stop_on_error:
                    stopped = True
                continue
            made = result.record
            status = "replayed" if result.replayed else "created"
            check = checks.get(index)
            if check is not None:
                # A replayed record read back (remotely): gone since, or not known to be there.
                if stopped is False and stops_the_loop(check):
                    stopped = check
                if stopped is not False or isinstance(check, NotSent):
                    continue  # its fate is not known: the re-run settles it
                if isinstance(check, NotFoundError):
                    rows.append(self.gone(op.line, made["id"]))
                else:
                    failure = Failure(op.line, _not_checked(made, check), made["id"])
                    rows.append(self.result(failure))
                continue
            if op.then is not None:
                try:
                    if stopped is not False:
                        raise _stopped_before_applied(stopped)
                    if self._apply(made, op.then, replayed=result.replayed):
                        status = "updated" if result.replayed else status
                except ConvriskError as exc:
                    if result.replayed and isinstance(exc, NotFoundError):
                        # The replayed copy's record, read first, was deleted since.
                        rows.append(self.gone(op.line, made["id"]))
                        continue
                    if stopped is False and (stops_the_loop(exc) or self.stop_on_error):
                        stopped = exc if stops_the_loop(exc) else True
                    failure = Failure(op.line, _not_applied(made, exc), made["id"])
                    rows.append(self.result(failure))
                    continue
            rows.append({"line": op.line, "status": status, "id": made["id"]})
        return rows, stopped

    def gone(self, line: int, id: str) -> dict[str, Any]:
        """The result of a create the service replayed for a record deleted since: nothing was
        written, and `id` (the deleted record) is named by the message only, never as the
        result's id."""
        return {"line": line, "status": "gone", "id": None, "error": self.error_fields_of(Gone(id))}

    def error_fields_of(self, error: BaseException) -> dict[str, Any]:
        """The `error` of a result, for an error that concerns no line's id."""
        return describe(error, remote=self.printer.remote, settings=self.run.settings).fields()

    def _check_replayed(
        self, creates: Sequence[Operation], results: Sequence[Created[Any] | ConvriskError]
    ) -> dict[int, ConvriskError | None]:
        """Remotely, each replayed create's record read back, by position: None when it is still
        there, else the error of the read (NotFoundError: deleted since; NotSent: not read, an
        error that every read would meet stopped them). A service may keep a key's answer after
        its record is deleted and replay it; the local store never does (it makes the record
        anew), and a copy reads its replayed record anyway (`_apply`): neither is read here.

        Only replayed creates are read (none in a first import), CHECKS_AT_ONCE at a time.
        """
        from convrisk.api_client.records import Created

        if not self.printer.remote:
            return {}
        replayed = {
            index: result.record["id"]
            for index, (op, result) in enumerate(zip(creates, results, strict=False))
            if isinstance(result, Created) and result.replayed and op.then is None
        }
        if not replayed:
            return {}
        found = _each_at_once(self.target.retrieve, list(replayed.values()))
        return dict(zip(replayed, found, strict=True))

    def _apply(self, made: Mapping[str, Any], then: Mapping[str, Any], *, replayed: bool) -> bool:
        """--copy: update a created (or replayed) record with the settable fields that differ;
        whether an update was sent. A replayed answer is the record as first created, so its
        current state is read first (it may have changed since)."""
        current = self.target.retrieve(made["id"]) if replayed else made
        changes = {name: value for name, value in then.items() if current.get(name) != value}
        if changes:
            self.target.update(made["id"], changes)
        return bool(changes)

    def _update(self, op: Operation) -> tuple[dict[str, Any] | None, Stop]:
        """Run one update; its result (none when an error stops the import)."""
        from convrisk.api_client.errors import ConvriskError

        assert op.id is not None
        try:
            updated = self.target.update(op.id, op.body)
        except ConvriskError as exc:
            if stops_the_loop(exc):
                return None, exc
            return self.result(Failure(op.line, exc, op.id)), self.stop_on_error
        return {"line": op.line, "status": "updated", "id": updated["id"]}, False

    def print_requests(self, records: Iterator[Record]) -> None:
        """--as-curl: the request of each record, in file order, printed and not sent.

        A record that fails the checks is reported with its line (its request is not printed)
        and the others go on, as in an import. Under --copy, the update that sets the fields a
        create does not take needs the id the create answers: it is not printed, and a hint
        says so.
        """
        from convrisk.api_client.errors import ConvriskError

        captured = self.run.captured()
        total = failed = updates_left = 0
        for record in records:
            total += 1
            op = checked_operation(
                self.spec, self.target, record, self.run_id, check_body=False, copy=self.copy
            )
            if isinstance(op, Operation):
                try:
                    if op.id is None:
                        self.target.create(op.body, idempotency_key=op.key)
                    else:
                        self.target.update(op.id, op.body)
                    continue
                except captured:
                    if op.then is not None:
                        updates_left += 1
                    continue
                except ConvriskError as exc:
                    op = Failure(op.line, exc, op.id)
            info = describe(op.error, remote=self.printer.remote, settings=self.run.settings)
            info.id = op.id if isinstance(op.id, str) else None
            info.line_number = op.line
            self.printer.error(info)
            failed += 1
            if self.stop_on_error:
                break
        if updates_left:
            self.printer.hint(
                f"--as-curl: {counted(updates_left, 'copied record')} may also need an update of "
                f"{', '.join(self.spec.copy_updates)} (where the create's answer differs), sent "
                "to the id that answer holds: those updates are not printed."
            )
        if failed:
            summary = (
                f"{failed:,} of {counted(total, 'record')} failed the checks; their requests "
                "are not printed."
            )
            self.printer.notice(summary)
            raise RecordsFailed(summary)

    def dry_run(self, records: Iterator[Record]) -> None:
        """Check every record and every id (read-only) and print the planned operations."""
        from convrisk.api_client.errors import ConvriskError

        first: BaseException | None = None
        failed = 0
        captured = self.run.captured()
        planned_ops: dict[str, int] = {"create": 0, "update": 0}
        statuses = dict.fromkeys(("planned", "would_replay"), 0)
        cannot_tell = False
        with self.printer.records(plan_kind(self.spec.kind, statuses=True), many=True) as sink:
            for batch in _batches(records):
                rows: list[dict[str, Any]] = []
                ops: list[Operation] = []
                for record in batch:
                    op = checked_operation(
                        self.spec, self.target, record, self.run_id, check_body=True, copy=self.copy
                    )
                    if isinstance(op, Operation) and op.id is not None:
                        try:
                            self.target.retrieve(op.id)
                        except captured:
                            continue  # --as-curl: the id's check is printed, not sent
                        except ConvriskError as exc:
                            if stops_the_loop(exc):
                                sink.write(rows)
                                raise
                            op = Failure(op.line, exc, op.id)
                    if isinstance(op, Failure):
                        info = describe(
                            op.error, remote=self.printer.remote, settings=self.run.settings
                        )
                        info.id = op.id if isinstance(op.id, str) else None
                        info.line_number = op.line
                        self.printer.error(info)
                        first = first or op.error
                        failed += 1
                        if self.stop_on_error:
                            break
                        continue
                    planned_ops[op.operation] += 1
                    ops.append(op)
                replays = self._replays([op for op in ops if op.id is None])
                cannot_tell = cannot_tell or replays is None
                for op in ops:
                    row = planned(op.operation, op.id, op.body)
                    if op.then:
                        row["then_update"] = op.then
                    answer = replays.get(op.line) if replays else None
                    row["status"] = "planned" if answer is None else "would_replay"
                    if answer is not None:
                        row["id"] = answer["id"]
                    statuses[row["status"]] += 1
                    rows.append(row)
                sink.write(rows)
                if failed and self.stop_on_error:
                    break
            sink.failed = failed
        if cannot_tell and not self.run.as_curl:
            self.printer.hint(
                "A remote service cannot say before a create whether it would replay an earlier "
                "answer: every create is shown as planned; the import itself reports replayed."
            )
        total = sum(statuses.values()) + failed
        creates = planned_ops["create"] - statuses["would_replay"]
        if not self.run.as_curl:  # --as-curl: no answer came back, nothing checked to count
            self.printer.notice(
                f"Dry run: {counted(total, 'record')}: {statuses['planned']:,} planned "
                f"({counted(creates, 'create')} and {counted(planned_ops['update'], 'update')}), "
                f"{statuses['would_replay']:,} would_replay, {failed:,} failed the checks. "
                "Nothing was written."
            )
        if first is not None:
            raise Failures(first, failed)

    def _replays(self, creates: list[Operation]) -> dict[int, Any] | None:
        """The answer the service would replay for each of these creates, by line (read-only);
        None when it cannot tell without sending them (a remote service)."""
        if not creates:
            return {}
        found = self.target.replays([(op.body, op.key) for op in creates])
        if found is None:
            return None
        return {op.line: answer for op, answer in zip(creates, found, strict=True) if answer}


def import_file(
    run: AppContext,
    spec: ImportSpec,
    file: str,
    given_format: str | None,
    *,
    dry_run: bool,
    stop_on_error: bool,
    output: str | None,
    copy: bool = False,
    yes: bool = False,
    max_affected: int | None = None,
) -> None:
    """`conv import` / `risk import`: read FILE (or - for stdin) and run or plan each record.

    When the count must be known before the first write (--max-affected, a protected profile's
    question), every record is read and counted first, then the file is read again from the
    start (stdin is kept in a temporary file for that)."""
    from convrisk.cli import guard

    printer = run.printer(output)
    what = f"import {spec.kind.plural}"
    if not dry_run:
        guard.refuse_early(run, what, yes=yes, stdin_free=file != "-")
    with Source(file) as source:
        if source.path is None and printer.stdin_is_terminal():
            printer.hint("Reading records from the terminal; end with Ctrl-D.")
        # An export's read-only columns are read too: --copy ignores them; without it the first
        # record that has them is the one error that says to add --copy.
        columns: dict[str, CellType] = {**spec.columns, **dict.fromkeys(spec.read_only, "text")}

        def count() -> int:
            """How many records the file holds (each is one write at most)."""
            source.rewind()
            _, counted_records = read(source, given_format, columns, spec.kind.plural)
            number = sum(1 for _ in first_checked(spec, counted_records, copy))
            source.rewind()
            return number

        # Bytes that are not UTF-8 anywhere in a file: exit 2 before anything is written or
        # asked (again once a protected profile's count has spooled a pipe to a file).
        source.refuse_non_utf8()
        if not dry_run:
            guard.check_write(
                run,
                count=count,
                what=what,
                max_affected=max_affected,
                yes=yes,
                stdin_free=source.path is not None,
            )
        source.refuse_non_utf8()
        _, records = read(source, given_format, columns, spec.kind.plural)
        records = first_checked(spec, records, copy)
        if copy:
            printer.hint(
                f"--copy: each {spec.kind.noun} is created anew; id and the fields the service "
                f"sets ({', '.join(spec.read_only)}) are not copied."
            )
        importer = Importer(run, spec, printer, stop_on_error=stop_on_error, copy=copy)
        if dry_run:
            importer.dry_run(records)
        elif run.as_curl:
            importer.print_requests(records)
        else:
            importer.execute(records, source)


class Gone(CliError):
    """A create the service answered from an earlier request whose record was deleted since."""

    error_type = "not_found_error"

    def __init__(self, id: str) -> None:
        super().__init__(
            f"{id}, which an earlier import of this record created (the same idempotency key, "
            "within 24 hours), was deleted since; the service replayed its answer and wrote "
            "nothing, so the record is not there."
        )


def _not_checked(made: Mapping[str, Any], exc: ConvriskError) -> ConvriskError:
    """The failure of a replayed create whose record could not be read back: whether it is
    still there is not known (the error keeps its type, so its exit code)."""
    changed = shallow_copy(exc)
    changed.message = (
        f"the service replayed {made['id']} (created by an earlier import), but reading it back "
        f"to check it is still there failed: {exc.message}"
    )
    changed.args = (changed.message,)
    return changed


def _each_at_once(read: Callable[[str], object], ids: Sequence[str]) -> list[ConvriskError | None]:
    """`read` of each id, CHECKS_AT_ONCE at a time (api_client.remote.concurrently, as create_many
    sends): None for each that answered, else its error. An error that every read would meet
    (the service cannot be reached, the token is refused) stops the others, which are NotSent."""
    from convrisk.api_client.errors import ConvriskError
    from convrisk.api_client.remote.concurrently import each_at_once

    def check(id: str, stop: object) -> ConvriskError | None:
        try:
            read(id)
        except ConvriskError as exc:
            return exc
        return None

    return each_at_once(ids, check, at_once=CHECKS_AT_ONCE)


def _not_applied(made: Mapping[str, Any], exc: ConvriskError) -> ConvriskError:
    """The failure of a copy whose update after the create failed: the create stands, and the
    message says so (the error keeps its type, so its exit code)."""
    changed = shallow_copy(exc)
    changed.message = (
        f"created as {made['id']}, but its other fields could not be set: {exc.message} "
        "(run the same command again to retry: the create is replayed)"
    )
    changed.args = (changed.message,)
    return changed


def _stopped_before_applied(stop: Stop) -> ConvriskError:
    """Why a copy's other fields were not set: the import stopped before its update was sent."""
    from convrisk.api_client.errors import ConvriskError

    if isinstance(stop, ConvriskError):
        return stop
    return ConvriskError("the import stopped at an earlier failure (--stop-on-error)")


def _changed_since_copied(exc: ConvriskError) -> ConvriskError:
    """The failure of a copy whose record was copied within 24 hours with other create values:
    its key is its exported id's, so the service refuses to create it again."""
    changed = shallow_copy(exc)
    changed.message = (
        "this record was already copied in the last 24 hours with other values (it changed "
        "since), so it is not created again; its copy keeps the values it had then. To copy it "
        "anew as another record, set CONVRISK_IMPORT_RUN to a new value."
    )
    changed.args = (changed.message,)
    return changed
