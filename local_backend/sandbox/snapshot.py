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
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from convrisk.api_client import sandbox as sandbox_api
from convrisk.api_client.errors import InvalidRequestError
from convrisk.api_client.params import MAX_TIMESTAMP, check_id
from convrisk.api_client.records import json_text
from convrisk.api_client.resources import RESOURCES, Resource, ResourceName
from convrisk.api_client.text import printable
from convrisk.local_backend.store import ids
from convrisk.local_backend.store.resource import Columns
from convrisk.local_backend.store.table_spec import spec_of

# The latest creation time an id carries, in milliseconds.
LAST_ID_MILLIS = MAX_TIMESTAMP * 1000 + 999
# Resources in snapshot order.
ORDER: tuple[ResourceName, ...] = ("conversations", "risk_profiles")
# A record of the JSON object form: its resource, its id (its key) and its value.
_ByIdRecord = tuple[ResourceName, str, Any]
# What JSON counts as whitespace before a value (RFC 8259).
_JSON_SPACE = " \t\n\r"


def line(resource: str, record: dict[str, Any]) -> str:
    """One snapshot line: the record's `-o jsonl` text with `"resource"` first."""
    return json_text({"resource": resource, **record})


def problem(resource: ResourceName, record: dict[str, Any]) -> str | None:
    """Why `record` would not restore as a record of `resource` (what `parse` would say of its
    line), or None when it would."""
    try:
        _columns(RESOURCES[resource], dict(record))
    except InvalidRequestError as exc:
        return exc.message
    return None


def too_large() -> InvalidRequestError:
    """The 413 of a snapshot over api_client.sandbox.MAX_SNAPSHOT_BYTES."""
    limit = sandbox_api.MAX_SNAPSHOT_BYTES
    return InvalidRequestError(
        f"The snapshot is too large: over the limit of {limit} bytes.", status=413
    )


def parse(data: bytes, *, as_json: bool = False) -> dict[str, list[Columns]]:
    """The rows of each table a snapshot holds, in its order; InvalidRequestError naming the
    first bad line (not UTF-8, not JSON, not a record of its resource, an id seen before), or
    in the JSON object form (`_by_id`) the first bad record by its id.

    `as_json`: the body was sent as application/json, so a blank one (whitespace only; an empty
    one is an empty store) is no JSON, where as lines it would be an empty snapshot.
    """
    if len(data) > sandbox_api.MAX_SNAPSHOT_BYTES:
        raise too_large()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        number = data.count(b"\n", 0, exc.start) + 1
        raise InvalidRequestError(f"Snapshot line {number}: not UTF-8 text.") from None
    if as_json and text and not text.strip():
        raise InvalidRequestError(
            "The snapshot is blank, which is not JSON: send {} or no body for an empty store."
        )
    whole = _by_id(text)
    if whole is not None:
        return _rows(_records_by_id(whole), _as_line)
    lines = (
        (f"line {number}", raw)
        for number, raw in enumerate(text.split("\n"), start=1)
        if raw.strip()
    )
    return _rows(lines, _json_value)


def _by_id(text: str) -> dict[str, Any] | None:
    """The snapshot as one JSON object of each resource's records by id
    (`{"conversations": {"conv_...": {...}}, "risk_profiles": {...}}`, the form the OpenAPI
    document describes: JSON Schema can say that ids are unique there), or None when `text` is
    not that form (JSON lines: a line is a record, whose first key is "resource")."""
    if not text.lstrip(_JSON_SPACE).startswith("{"):
        return None
    try:
        whole = json.loads(text, parse_constant=_no_constant, object_pairs_hook=_no_repeats)
    except _RepeatedKey as exc:
        if _by_id_form(json.loads(text, parse_constant=_no_constant)):
            raise InvalidRequestError(
                f"Snapshot: the key {printable(exc.key)} is in one object twice."
            ) from None
        return None  # one line that repeats a key (in details: the last one counts)
    except (ValueError, RecursionError):
        return None  # lines, or no JSON: the lines say which line is not
    return whole if _by_id_form(whole) else None


def _by_id_form(whole: object) -> bool:
    return isinstance(whole, dict) and set(whole) <= set(ORDER)


class _RepeatedKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object of the JSON object form; a key given twice (an id, most likely) is refused,
    not silently dropped."""
    made = dict(pairs)
    if len(made) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _RepeatedKey(key)
            seen.add(key)
    return made


def _records_by_id(whole: dict[str, Any]) -> Iterator[tuple[str, _ByIdRecord]]:
    """Each record of the object form, named by its id: (label, (resource, id, record))."""
    for name in ORDER:
        records = whole.get(name, {})
        if not isinstance(records, dict):
            raise InvalidRequestError(f"Snapshot: {name} must be an object of records by their id.")
        for object_id, record in records.items():
            yield f"record {printable(object_id)}", (name, object_id, record)


def _as_line(entry: _ByIdRecord) -> object:
    """A record of the object form as a snapshot line holds it."""
    name, object_id, record = entry
    if not isinstance(record, dict):
        raise InvalidRequestError("not a JSON object.")
    given = [key for key in ("resource", "id") if key in record]
    if given:
        raise InvalidRequestError(
            f"not a {RESOURCES[name].noun}: unknown {', '.join(given)} (its id is its key)."
        )
    return {"resource": name, "id": object_id, **record}


def _rows(
    entries: Iterable[tuple[str, Any]], value: Callable[[Any], object]
) -> dict[str, list[Columns]]:
    """The rows of each table from the named lines or records of a snapshot, each made a JSON
    value by `value` in turn, so that its error names it."""
    rows: dict[str, list[Columns]] = {name: [] for name in ORDER}
    seen: set[str] = set()
    for label, entry in entries:
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
            raise InvalidRequestError(f"Snapshot {label}: {exc.message}") from None
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
