"""A resource's SQLite table (its `ResourceSpec`), derived from its description.

One table per resource, named as the resource, with a column per field of the record in the
record's order (a filter may compare a column that is no field, such as the generated
`is_archived`). How a value is stored follows the field's type: a boolean as 0 or 1, an object
as its JSON text, a string or number as it is.
"""

from __future__ import annotations

from typing import Any

from convrisk.api_client.params import check_create, check_update
from convrisk.api_client.resources import Field, Resource

from .json_export import json_object_sql
from .resource import (
    Columns,
    ResourceSpec,
    Row,
    check_readable,
    check_storable_number,
    json_text,
    load_json_object,
)

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
        update_values=update_values,
        to_record=to_record,
        json_sql=json_object_sql((f.name, _SQL_KINDS[f.type]) for f in resource.fields),
        has_updated_at="updated_at" in columns,
        json_columns=objects,
        flags=flags,
    )
