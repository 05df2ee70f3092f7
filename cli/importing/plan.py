"""The records of an import as operations: what each resource's records may carry
(`ImportSpec`), the create or update each record asks for (`plan`) and the idempotency key of a
create (`idempotency_key`, `copy_key`); see cli/importing/run.py for how they run."""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING, Any, Literal

from convrisk.api_client import resources
from convrisk.api_client.resources import Field, Resource, ResourceName
from convrisk.cli.errors import UsageProblem
from convrisk.cli.importing.files import CellType, Record
from convrisk.cli.output.kinds import Kind
from convrisk.cli.output.resource_kinds import CONVERSATIONS, RISK_PROFILES

if TYPE_CHECKING:
    from convrisk.api_client.client import ResourceClient
    from convrisk.cli.context import AppContext

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
    # Fields the service sets (neither a create nor an update takes them): an export has them.
    read_only: tuple[str, ...] = ()
    # What `--copy` applies with an update after the create: settable fields a create does not take.
    copy_updates: tuple[str, ...] = ()
    # create_fields as a set: a record whose fields are all among them is a plain create.
    create_names: frozenset[str] = frozenset()

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
        read_only=tuple(
            f.name for f in resource.fields if f.name != "id" and not (f.create or f.update)
        ),
        copy_updates=tuple(f.name for f in resource.updatable() if not f.create),
        create_names=frozenset(field.name for field in creatable),
    )


CONVERSATION_IMPORT = import_spec(CONVERSATIONS, resources.CONVERSATIONS)
RISK_PROFILE_IMPORT = import_spec(RISK_PROFILES, resources.RISK_PROFILES)
# By resource name.
IMPORTS = {"conversations": CONVERSATION_IMPORT, "risk_profiles": RISK_PROFILE_IMPORT}


@dataclass
class Operation:
    """What one record asks for: a create (with its idempotency key) or an update of `id`."""

    line: int
    operation: Literal["create", "update"]
    id: str | None
    body: dict[str, Any]
    key: str | None = None
    # --copy: the settable fields a create does not take, applied by an update after it.
    then: dict[str, Any] | None = None


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
    # The text of `[KEY_VERSION, run_id, resource, line, fields]`, its constant head made once.
    text = f"{_key_head(run_id, resource)}{int(line)},{_KEY_ENCODER.encode(fields)}]"
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{KEY_PREFIX}{line:010d}-{digest}"


@functools.cache
def _key_head(run_id: str, resource: str) -> str:
    """The start of a key's text: `[KEY_VERSION, run_id, resource,` as JSON."""
    return _KEY_ENCODER.encode([KEY_VERSION, run_id, resource])[:-1] + ","


def copy_key(resource: str, source_id: str, run_id: str) -> str:
    """The create's Idempotency-Key under --copy: a SHA-256 of the record's id where it was
    exported, so that the same export (or a newer one, whatever its order) replays it."""
    text = _KEY_ENCODER.encode([KEY_VERSION, run_id, resource, "copy", source_id])
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{KEY_PREFIX}copy-{digest}"


def read_only_problem(spec: ImportSpec, line: int, names: list[str]) -> UsageProblem:
    """The error of a record that carries fields the service sets: an export, to copy."""
    return UsageProblem(
        f"line {line} has {', '.join(names)}, which the service sets (read-only): it looks like "
        f"an export (-o jsonl or -o csv). To copy such records, add --copy (it creates each "
        f"{spec.kind.noun} anew and ignores id and the read-only fields); to update them, keep "
        "only id and the fields to change.",
        param=names[0],
    )


def plan_copy(spec: ImportSpec, record: Record, run_id: str) -> Operation:
    """--copy: the create of an exported record (id and read-only fields ignored), then an
    update of the settable fields a create does not take."""
    fields = record.fields or {}
    line = record.line
    for name in fields:
        if name not in spec.columns and name not in spec.read_only:
            raise UsageProblem(
                f"line {line}: unknown field {name!r}. Known fields of a {spec.kind.noun}: "
                f"{', '.join((*spec.columns, *spec.read_only))}.",
                param=name,
            )
    # A null create field is an absent one: an export has `group_id: null` beside `contact_id`.
    body = {n: v for n, v in fields.items() if n in spec.create_fields and v is not None}
    then = {n: v for n, v in fields.items() if n in spec.copy_updates}
    source_id = fields.get("id")
    if isinstance(source_id, str) and source_id.strip():
        key = copy_key(spec.resource, source_id, run_id)
    else:
        key = idempotency_key(spec.resource, line, {**body, **then}, run_id)
    return Operation(line, "create", None, {**spec.create_defaults, **body}, key, then or None)


def plan(spec: ImportSpec, record: Record, run_id: str, *, copy: bool = False) -> Operation:
    """The operation of a record that was read, or a UsageProblem naming its line."""
    if copy:
        return plan_copy(spec, record, run_id)
    fields = record.fields or {}
    line = record.line
    if "id" not in fields and spec.create_names.issuperset(fields):
        # The common case, told at once: a create whose fields are all a create's.
        key = idempotency_key(spec.resource, line, fields, run_id)
        return Operation(line, "create", None, {**spec.create_defaults, **fields}, key)
    noun = spec.kind.noun
    read_only = [name for name in fields if name in spec.read_only]
    if read_only:
        raise read_only_problem(spec, line, read_only)
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


def checked_operation(
    spec: ImportSpec,
    target: ResourceClient[Any, Any, Any, Any],
    record: Record,
    run_id: str,
    *,
    check_body: bool,
    copy: bool = False,
) -> Operation | Failure:
    """The record's operation or its failure; with `check_body` (a dry run) the body is checked
    by the interface's rules too (otherwise the backend checks it when it runs)."""
    if record.problem is not None:
        return Failure(record.line, record.problem)
    try:
        op = plan(spec, record, run_id, copy=copy)
    except UsageProblem as exc:
        return Failure(record.line, exc, (record.fields or {}).get("id"))
    if not check_body:
        return op
    from convrisk.api_client.errors import ConvriskError

    try:
        checked = target.check_create(op.body) if op.id is None else target.check_update(op.body)
        if op.then is not None:
            target.check_update(op.then)
    except ConvriskError as exc:
        return Failure(op.line, exc, op.id)
    if op.id is None:
        op.body = {name: value for name, value in checked.items() if value is not None}
    return op


def first_checked(spec: ImportSpec, records: Iterator[Record], copy: bool) -> Iterator[Record]:
    """The records, once the first is known not to be an export given without --copy: that is
    one error for the whole file (exit 2, nothing written), not one per line."""
    first = next(records, None)
    if first is None:
        return records
    if not copy and first.fields:
        read_only = [name for name in first.fields if name in spec.read_only]
        if read_only:
            raise read_only_problem(spec, first.line, read_only)
    return chain((first,), records)
