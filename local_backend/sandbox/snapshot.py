"""Snapshots of the sandbox's store: JSON lines, one record a line, as `-o jsonl` prints it with
a `"resource"` key first; conversations first, then risk profiles, each oldest first.

`parse` reads one whole (for `POST /__sandbox/restore` and `serve --load`) into the column
values of each table, or refuses it naming the first line that is not a record of its resource;
the store (LocalBackend.snapshot, LocalBackend.restore) does the SQL. The same records as one
JSON array (a text that starts with `[`) are a snapshot too: the form the OpenAPI document
describes, which JSON Schema can say (docs/design/sandbox.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from convrisk.api_client import sandbox as sandbox_api
from convrisk.api_client.errors import InvalidRequestError
from convrisk.api_client.params import MAX_TIMESTAMP, check_id
from convrisk.api_client.records import json_text
from convrisk.api_client.resources import RESOURCES, Resource, ResourceName
from convrisk.local_backend.store import ids
from convrisk.local_backend.store.resource import Columns
from convrisk.local_backend.store.table_spec import spec_of

# The latest creation time an id carries, in milliseconds.
LAST_ID_MILLIS = MAX_TIMESTAMP * 1000 + 999
# Resources in snapshot order.
ORDER: tuple[ResourceName, ...] = ("conversations", "risk_profiles")
# What JSON counts as whitespace before a value (RFC 8259).
_JSON_SPACE = " \t\n\r"


def line(resource: str, record: dict[str, Any]) -> str:
    """One snapshot line: the record's `-o jsonl` text with `"resource"` first."""
    return json_text({"resource": resource, **record})


def too_large() -> InvalidRequestError:
    """The 413 of a snapshot over api_client.sandbox.MAX_SNAPSHOT_BYTES."""
    limit = sandbox_api.MAX_SNAPSHOT_BYTES
    return InvalidRequestError(
        f"The snapshot is too large: over the limit of {limit} bytes.", status=413
    )


def parse(data: bytes) -> dict[str, list[Columns]]:
    """The rows of each table a snapshot holds, in its order; InvalidRequestError naming the
    first bad line (not UTF-8, not JSON, not a record of its resource, an id seen before), or
    the first bad item of a JSON array (counted from 1)."""
    if len(data) > sandbox_api.MAX_SNAPSHOT_BYTES:
        raise too_large()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        number = data.count(b"\n", 0, exc.start) + 1
        raise InvalidRequestError(f"Snapshot line {number}: not UTF-8 text.") from None
    if text.lstrip(_JSON_SPACE).startswith("["):
        return _rows("item", enumerate(_array(text), start=1), lambda item: item)
    lines = ((n, raw) for n, raw in enumerate(text.split("\n"), start=1) if raw.strip())
    return _rows("line", lines, _json_value)


def _array(text: str) -> list[object]:
    """The items of a snapshot written as one JSON array."""
    try:
        items = _json_value(text)
    except InvalidRequestError:
        raise InvalidRequestError(
            "The snapshot is not valid JSON (one that starts with [ is a JSON array of records)."
        ) from None
    if not isinstance(items, list):
        raise InvalidRequestError("The snapshot is not a JSON array of records.")
    return items


def _rows(
    what: str, entries: Iterable[tuple[int, Any]], value: Callable[[Any], object]
) -> dict[str, list[Columns]]:
    """The rows of each table from the numbered lines or items (`what`) of a snapshot, each
    made a JSON value by `value` in turn, so that its error names it."""
    rows: dict[str, list[Columns]] = {name: [] for name in ORDER}
    seen: set[str] = set()
    for number, entry in entries:
        try:
            item = _record(value(entry))
            object_id = item.get("id")
            # Not a string (a list is not even hashable): _columns refuses it.
            if isinstance(object_id, str) and object_id in seen:
                raise InvalidRequestError(f"id {object_id} is in the snapshot twice.")
            resource = RESOURCES[item.pop("resource")]
            rows[resource.name].append(_columns(resource, item))
            seen.add(str(object_id))
        except InvalidRequestError as exc:
            raise InvalidRequestError(f"Snapshot {what} {number}: {exc.message}") from None
    return rows


def _json_value(text: str) -> object:
    try:
        return json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        raise InvalidRequestError("not valid JSON.") from None


def _record(item: object) -> dict[str, Any]:
    """A line's or an item's value when it is an object naming its resource."""
    if not isinstance(item, dict):
        raise InvalidRequestError("not a JSON object.")
    resource = item.get("resource")
    if resource not in ORDER:
        raise InvalidRequestError(f'"resource" must be one of {", ".join(ORDER)}.')
    return item


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _restorable_id(resource: Resource, value: object) -> str:
    """An id of the form this service mints, whose time is one it could have stamped: the ids
    made after it (above it, see LocalBackend.restore) must not run out of numbers."""
    object_id = check_id(resource.name, value)
    number = ids.parse(resource.prefix, object_id)
    if number is None or ids.time_of(number) > LAST_ID_MILLIS:
        raise InvalidRequestError(
            f"id {object_id} carries a time past the last timestamp ({MAX_TIMESTAMP}): "
            f"not an id this service mints.",
            param="id",
        )
    return object_id


def _columns(resource: Resource, item: dict[str, Any]) -> Columns:
    """The column values of one record of `resource`, checked as a create and an update would
    check them, its read-only fields by type. A field the record lacks takes its default when
    it has one: the snapshot was taken before the field was added."""
    names = resource.names()
    for field in resource.fields:
        if field.has_default and field.name not in item:
            item[field.name] = field.default
    missing = [name for name in names if name not in item]
    extra = [name for name in item if name not in names]
    if missing or extra:
        problems = [f"missing {', '.join(missing)}"] if missing else []
        problems += [f"unknown {', '.join(extra)}"] if extra else []
        raise InvalidRequestError(f"not a {resource.noun}: {'; '.join(problems)}.")
    spec = spec_of(resource)
    creatable = {f.name for f in resource.creatable()}
    updatable = {f.name for f in resource.updatable()} - creatable
    columns: Columns = {"id": _restorable_id(resource, item["id"])}
    columns |= spec.create_values({k: v for k, v in item.items() if k in creatable})
    columns |= spec.update_values({k: v for k, v in item.items() if k in updatable})
    for field in resource.fields:
        if field.name in columns:
            continue
        value = item[field.name]
        if field.type != "timestamp":
            raise InvalidRequestError(f"{field.name} cannot be restored.", param=field.name)
        if value is None and field.nullable:
            columns[field.name] = None
            continue
        # A whole number written 12.0 is one too (JSON Schema's integer, which the document
        # says): stored as the int it is.
        if type(value) is float and value.is_integer():
            value = int(value)
        if type(value) is not int or not 0 <= value <= MAX_TIMESTAMP:
            raise InvalidRequestError(
                f"{field.name} must be whole Unix seconds, 0 to {MAX_TIMESTAMP}.",
                param=field.name,
            )
        columns[field.name] = value
    return {name: columns[name] for name in names}
