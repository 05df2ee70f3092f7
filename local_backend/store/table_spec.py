"""A resource's SQLite table (its `ResourceSpec`), derived from its description.

One table per resource, named as the resource, with a column per field of the record in the
record's order (a filter may compare a column that is no field, such as the generated
`is_archived`). How a value is stored follows the field's type: a boolean as 0 or 1, an object
as its JSON text, a string or number as it is.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any

from convrisk.api_client.params import (
    BLANK,
    MAX_DETAILS_DEPTH,
    MAX_NUMBER,
    MAX_TIMESTAMP,
    MIN_NUMBER,
    check_create,
    check_update,
    is_encodable,
)
from convrisk.api_client.resources import Field, Resource
from convrisk.local_backend.store.column_values import (
    check_readable,
    check_storable_number,
    json_text,
    load_json_object,
)
from convrisk.local_backend.store.json_export import json_object_sql
from convrisk.local_backend.store.resource import Columns, ResourceSpec, Row

# The kind of each field type for json_object_sql.
_SQL_KINDS = {
    "string": "text",
    "boolean": "flag",
    "number": "number",
    "timestamp": "number",
    "object": "object",
}


def _stored(field: Field, value: Any) -> Any:
    """A checked value as its column holds it; refuses what SQLite cannot keep exactly.

    Strings need no check here: check_create and check_update refuse text that is not valid
    Unicode.
    """
    if value is None:
        return None
    if field.type == "boolean":
        return int(value)
    if field.type == "object":
        return json_text(value, field.name)
    if field.type != "string":
        check_storable_number(value, field.name)
    return value


# What a create's body is told by, field by field: (name, rule, required), in field order.
_Rule = tuple[str, str, bool]
QuickCreate = Callable[[object], "tuple[Columns, dict[str, Any]] | None"]


def quick_create(resource: Resource) -> QuickCreate:
    """A function telling the column values of a plain create body of `resource` and the value
    of each of its objects, in one pass; None when it cannot tell at once (a bad body, or one
    with more than JSON's own types), and `create_values` then checks the body and says what is
    wrong.

    It gives what `create_values` gives, each object column holding the object itself, certain
    to encode (its text is made with the record's, as it is inserted: see `TableResource`), but
    only for a body that `check_create` takes as it is: a dict whose strings are `str`, numbers
    `int` or `float`, objects `dict` and `list` with `str` keys.
    """
    creatable = resource.creatable()
    allowed = frozenset(field.name for field in creatable)
    one_of = resource.one_of
    rules: list[_Rule] = []
    for field in creatable:
        if field.name in one_of:
            continue
        rule: str = field.type
        if field.type == "string":
            rule = "nullable_string" if field.nullable else "string"
        elif field.nullable and field.type != "object":
            rule = f"nullable_{field.type}"
        rules.append((field.name, rule, field.required))

    def told(body: object) -> tuple[Columns, dict[str, Any]] | None:
        if type(body) is not dict or not allowed.issuperset(body):
            return None
        out: Columns = {}
        parsed: dict[str, Any] = {}
        if one_of:
            given = 0
            for name in one_of:
                value = body.get(name)
                if value is None or value == "":
                    out[name] = None
                    continue
                if type(value) is not str or not (value.isascii() or is_encodable(value)):
                    return None
                out[name] = value
                given += 1
            if given != 1:
                return None
        for name, rule, required in rules:
            if name not in body:
                if required:
                    return None
                continue
            value = body[name]
            kind = type(value)
            if value is None:
                if required or not rule.startswith("nullable"):
                    return None
            elif rule.endswith("string"):
                if kind is not str or not (value.isascii() or is_encodable(value)):
                    return None
                if not (value.strip(BLANK) if rule == "string" else value):
                    return None
            elif rule.endswith(("number", "timestamp")):
                # A NaN fails the comparisons; the bounds lie within SQLite's 64-bit integers.
                if (kind is not int and kind is not float) or not MIN_NUMBER <= value <= MAX_NUMBER:
                    return None
                if rule.endswith("timestamp") and not 0 <= value <= MAX_TIMESTAMP:
                    return None
            elif rule.endswith("boolean"):
                if kind is not bool:
                    return None
                value = int(value)
            elif kind is dict and _plain(value, _printable_int_bound()):
                parsed[name] = value
            else:
                return None
            out[name] = value
        return out, parsed

    return told


# The types a plain object holds besides text, objects, arrays and numbers.
_PLAIN_SCALARS = frozenset({bool, type(None)})
# By sys.get_int_max_str_digits(): the bound below which an integer's size is printable.
_INT_BOUNDS: dict[int, int | None] = {}


def _printable_int_bound() -> int | None:
    """The size an integer must stay below to be printed (None: any size is)."""
    digits = sys.get_int_max_str_digits()
    if digits not in _INT_BOUNDS:
        _INT_BOUNDS[digits] = 10**digits if digits else None
    return _INT_BOUNDS[digits]


def _plain(value: dict[str, Any], int_bound: int | None) -> bool:
    """Whether an object holds only what JSON writes and reads back as it was: `str` keys and
    text (valid Unicode), integers below `int_bound` in size, finite `float`s, `bool`, None,
    `dict` and `list`, at most MAX_DETAILS_DEPTH levels deep (`check_create`'s limit). No
    recursion."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DETAILS_DEPTH:
            return False
        if type(item) is dict:
            for name in item:
                if type(name) is not str or not (name.isascii() or is_encodable(name)):
                    return False
            children = item.values()
        else:
            children = item
        for child in children:
            kind = type(child)
            if kind is str:
                if not (child.isascii() or is_encodable(child)):
                    return False
            elif kind is dict or kind is list:
                stack.append((child, depth + 1))
            elif kind is int:
                if int_bound is not None and not -int_bound < child < int_bound:
                    return False
            elif kind is float:
                if not math.isfinite(child):
                    return False
            elif kind not in _PLAIN_SCALARS:
                return False
    return True


_SPECS: dict[Resource, ResourceSpec[Any]] = {}


def spec_of(resource: Resource) -> ResourceSpec[Any]:
    """The table of `resource`, made once per description (descriptions compare by identity)."""
    spec = _SPECS.get(resource)
    if spec is None:
        spec = _SPECS[resource] = table_spec(resource)
    return spec


def table_spec(resource: Resource) -> ResourceSpec[Any]:
    """The table of `resource`: its columns, input rules and how a row becomes a record."""
    columns = resource.names()
    by_name = {field.name: field for field in resource.fields}
    flags = tuple(field.name for field in resource.fields if field.type == "boolean")
    objects = tuple(field.name for field in resource.fields if field.type == "object")
    # The fields whose checked value is not yet what the column holds, or may not fit it.
    objects_or_numbers = tuple(f.name for f in resource.fields if f.type != "string")

    def create_values(body: object) -> Columns:
        """The column values of a new record (the others take their defaults)."""
        params = check_create(resource, body)
        for name in objects_or_numbers:
            value = params.get(name)
            if value is not None:
                params[name] = _stored(by_name[name], value)
        return params

    def update_values(body: object) -> Columns:
        """The column values an update sets; empty when the body changes nothing."""
        params = check_update(resource, body)
        return {name: _stored(by_name[name], value) for name, value in params.items()}

    def to_record(row: Row) -> Any:
        """The record of a row of `columns`: flags as booleans, objects parsed, the rest as
        stored."""
        check_readable(row)
        record = dict(zip(columns, row, strict=True))
        for name in flags:
            record[name] = bool(record[name])
        for name in objects:
            record[name] = load_json_object(record[name], name)
        return record

    return ResourceSpec(
        name=resource.name,
        noun=resource.noun,
        table=resource.name,
        prefix=resource.prefix,
        columns=columns,
        filter_columns={f.name: f.column for f in resource.filters},
        create_values=create_values,
        quick_create=quick_create(resource),
        update_values=update_values,
        to_record=to_record,
        json_sql=json_object_sql((f.name, _SQL_KINDS[f.type]) for f in resource.fields),
        has_updated_at="updated_at" in columns,
        json_columns=objects,
        flags=flags,
    )
