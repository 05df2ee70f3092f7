"""`conv import` / `risk import`: each record of a file is one create or update, run through the
Client in file order, with one result per record; re-running the same file creates nothing twice.

A record without `id` is a create with the create fields; with `id` an update of the fields it
carries. Creates go to the backend in batches (`create_many`: one transaction locally, a few
concurrent requests remotely), each with an idempotency key derived from the record and its line
(see `idempotency_key` and docs/decisions.md, Import), so that a re-run after an interruption
replays what was done instead of doing it again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING, Any, Literal

from convrisk.api_client import resources
from convrisk.api_client.resources import Field, Resource, ResourceName

from .context import AppContext
from .errors import Failures, RecordsFailed, UsageProblem, describe, stops_the_loop
from .import_report import import_report
from .kinds import Kind, plan_kind, planned
from .output import Printer
from .records import CellType, Record, Source, read
from .resource_kinds import CONVERSATIONS, RISK_PROFILES

if TYPE_CHECKING:
    from convrisk.api_client.client import ResourceClient

# Records read, checked and sent together: one create_many (one local transaction) at most.
BATCH = 256
# Bumped if the way keys are derived ever changes, so that old and new keys never meet.
KEY_VERSION = "convrisk-import-2"
KEY_PREFIX = "import-"
# Mixed into every key: set it to import the same file again on purpose within 24 hours.
RUN_VARIABLE = "CONVRISK_IMPORT_RUN"
# Built once: json.dumps with options builds an encoder on every call.
_KEY_ENCODER = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class ImportSpec:
    """What the records of one resource may carry, and how CSV cells become values."""

    kind: Kind
    resource: ResourceName
    create_fields: tuple[str, ...]
    update_fields: tuple[str, ...]
    columns: Mapping[str, CellType]
    # Fields a create gets when the record leaves them out (as the create command does).
    create_defaults: Mapping[str, Any]

    def target(self, run: AppContext) -> ResourceClient[Any, Any, Any, Any]:
        """The Client's resource this import writes to."""
        target: ResourceClient[Any, Any, Any, Any] = getattr(run.client(), self.resource)
        return target


def _cell(field: Field) -> CellType:
    """How a CSV cell of this field becomes its value (a nullable text an update may set takes
    `null` for null)."""
    if field.type == "string":
        return "nullable_text" if field.nullable and field.update else "text"
    cells: dict[str, CellType] = {
        "boolean": "bool",
        "number": "number",
        "timestamp": "time",
        "object": "json",
    }
    return cells[field.type]


def import_spec(kind: Kind, resource: Resource) -> ImportSpec:
    """What an import of `resource` takes, from its description: `id` and the writable fields."""
    creatable = resource.creatable()
    return ImportSpec(
        kind,
        resource.name,
        create_fields=tuple(field.name for field in creatable),
        update_fields=tuple(field.name for field in resource.updatable()),
        columns={"id": "text", **{field.name: _cell(field) for field in resource.writable()}},
        create_defaults={
            f.name: f.client_default for f in creatable if f.client_default is not None
        },
    )


CONVERSATION_IMPORT = import_spec(CONVERSATIONS, resources.CONVERSATIONS)
RISK_PROFILE_IMPORT = import_spec(RISK_PROFILES, resources.RISK_PROFILES)


# What ends a batch early: False (go on), True (--stop-on-error met a failed record), or an
# error that is not one record's (unreachable, token refused), raised once it is reported.
Stop = bool | BaseException


@dataclass
class Operation:
    """What one record asks for: a create (with its idempotency key) or an update of `id`."""

    line: int
    operation: Literal["create", "update"]
    id: str | None
    body: dict[str, Any]
    key: str | None = None


@dataclass
class Failure:
    """A record that cannot run, and why."""

    line: int
    error: BaseException
    id: str | None = None


def idempotency_key(resource: str, line: int, fields: Mapping[str, Any], run_id: str) -> str:
    """The create's Idempotency-Key: the record's line, then a SHA-256 of the resource, the line
    and the record's fields (and CONVRISK_IMPORT_RUN), so the same record at the same line is the
    same request.

    The zero-padded line comes first so that the keys of one file sort in file order: the
    service's index of keys then grows at one end instead of at random places, which took a
    quarter of the local backend's CPU time and 40% of its wall time at 100,000 records.
    """
    text = _KEY_ENCODER.encode([KEY_VERSION, run_id, resource, line, fields])
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{KEY_PREFIX}{line:010d}-{digest}"


def plan(spec: ImportSpec, record: Record, run_id: str) -> Operation:
    """The operation of a record that was read, or a UsageProblem naming its line."""
    fields = record.fields or {}
    line = record.line
    noun = spec.kind.noun
    for name in fields:
        if name not in spec.columns:
            raise UsageProblem(
                f"line {line}: unknown field {name!r}. Known fields of a {noun}: "
                f"{', '.join(spec.columns)}.",
                param=name,
            )
    object_id = fields.get("id")
    body = {name: value for name, value in fields.items() if name != "id"}
    if object_id is not None:
        if not isinstance(object_id, str) or not object_id.strip():
            raise UsageProblem(f"line {line}: id must be a non-empty string.", param="id")
        for name in body:
            if name not in spec.update_fields:
                raise UsageProblem(
                    f"line {line} has an id, so it is an update, and {name}, which only a "
                    f"create takes (an update cannot change it): drop one of the two.",
                    param=name,
                )
        if not body:
            raise UsageProblem(
                f"line {line}: nothing to change for {object_id}: give one of "
                f"{', '.join(spec.update_fields)}.",
                param="id",
            )
        return Operation(line, "update", object_id.strip(), body)
    for name in body:
        if name not in spec.create_fields:
            raise UsageProblem(
                f"line {line} has no id, so it is a create, and {name}, which only an update "
                f"takes: add the id of the {noun} to change, or drop {name}.",
                param=name,
            )
    key = idempotency_key(spec.resource, line, fields, run_id)
    return Operation(line, "create", None, {**spec.create_defaults, **body}, key)


def _checked(
    spec: ImportSpec,
    target: ResourceClient[Any, Any, Any, Any],
    record: Record,
    run_id: str,
    *,
    check_body: bool,
) -> Operation | Failure:
    """The record's operation or its failure; with `check_body` (a dry run) the body is checked
    by the interface's rules too (otherwise the backend checks it when it runs)."""
    from convrisk.api_client.errors import ConvriskError

    if record.problem is not None:
        return Failure(record.line, record.problem)
    try:
        op = plan(spec, record, run_id)
    except UsageProblem as exc:
        return Failure(record.line, exc, (record.fields or {}).get("id"))
    if not check_body:
        return op
    try:
        checked = target.check_create(op.body) if op.id is None else target.check_update(op.body)
    except ConvriskError as exc:
        return Failure(op.line, exc, op.id)
    if op.id is None:
        op.body = {name: value for name, value in checked.items() if value is not None}
    return op


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def _batches(records: Iterator[Record]) -> Iterator[list[Record]]:
    while batch := list(islice(records, BATCH)):
        yield batch


class Importer:
    """One run of an import: reads, checks, sends and reports, batch after batch."""

    def __init__(
        self, run: AppContext, spec: ImportSpec, printer: Printer, *, stop_on_error: bool
    ) -> None:
        self.run = run
        self.spec = spec
        self.printer = printer
        self.stop_on_error = stop_on_error
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
                    _checked(self.spec, self.target, r, self.run_id, check_body=False)
                    for r in batch
                ]
                rows, stop = self._run_batch(ops)
                report.add(rows)
                if isinstance(stop, BaseException):
                    raise stop
                if stop:
                    break
        failed = report.counts["failed"]
        if failed:
            raise RecordsFailed(f"{failed} of {report.total} records failed.")

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
            while end < len(ops):
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
        """Run consecutive creates together (create_many); their results in order."""
        from convrisk.api_client.errors import ConvriskError, NotSent

        results = self.target.create_many(
            [(op.body, op.key) for op in creates], stop_on_error=self.stop_on_error
        )
        rows: list[dict[str, Any]] = []
        stopped: Stop = False
        for op, result in zip(creates, results, strict=False):
            if isinstance(result, ConvriskError):
                # After a stopping error only what was done is reported (sent alongside it);
                # the rest failed alike or was never sent, and the error is raised once.
                if stopped is False and stops_the_loop(result):
                    stopped = result
                if stopped is not False or isinstance(result, NotSent):
                    continue
                rows.append(self.result(Failure(op.line, result)))
                if self.stop_on_error:
                    return rows, True
                continue
            rows.append({"line": op.line, "status": "created", "id": result["id"]})
        return rows, stopped

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

    def dry_run(self, records: Iterator[Record]) -> None:
        """Check every record and every id (read-only) and print the planned operations."""
        from convrisk.api_client.errors import ConvriskError

        first: BaseException | None = None
        failed = 0
        planned_ops: dict[str, int] = {"create": 0, "update": 0}
        with self.printer.records(plan_kind(self.spec.kind), many=True) as sink:
            for batch in _batches(records):
                rows: list[dict[str, Any]] = []
                for record in batch:
                    op = _checked(self.spec, self.target, record, self.run_id, check_body=True)
                    if isinstance(op, Operation) and op.id is not None:
                        try:
                            self.target.retrieve(op.id)
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
                    rows.append(planned(op.operation, op.id, op.body))
                sink.write(rows)
                if failed and self.stop_on_error:
                    break
            sink.failed = failed
        self.printer.notice(
            f"Dry run: {_count(planned_ops['create'], 'create')} and "
            f"{_count(planned_ops['update'], 'update')} would be sent; "
            f"{_count(failed, 'record')} failed the checks. Nothing was written."
        )
        if first is not None:
            raise Failures(first, failed)


def import_file(
    run: AppContext,
    spec: ImportSpec,
    file: str,
    given_format: str | None,
    *,
    dry_run: bool,
    stop_on_error: bool,
    output: str | None,
) -> None:
    """`conv import` / `risk import`: read FILE (or - for stdin) and run or plan each record."""
    printer = run.printer(output)
    with Source(file) as source:
        if source.path is None and printer.stdin_is_terminal():
            printer.hint("Reading records from the terminal; end with Ctrl-D.")
        _, records = read(source, given_format, spec.columns, spec.kind.plural)
        importer = Importer(run, spec, printer, stop_on_error=stop_on_error)
        if dry_run:
            importer.dry_run(records)
        else:
            importer.execute(records, source)
