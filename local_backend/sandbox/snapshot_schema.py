"""The JSON Schema of a snapshot written as one JSON object, for the OpenAPI document (the body of
`POST /__sandbox/restore`): each resource's records by id, their fields held to the rules
local_backend.sandbox.snapshot applies, so that a body the schema accepts is restored (ids are
unique there by construction, which JSON Schema cannot say of an array's items).

Settable fields take the schema a create or an update body gives them (passed in by the
document); the others are the id (with a time the service could have stamped) and Unix seconds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from convrisk.api_client.params import MAX_TIMESTAMP
from convrisk.api_client.resources import (
    ID_ALPHABET,
    ID_BODY_LENGTH,
    RESOURCES,
    Field,
    Resource,
)
from convrisk.local_backend.sandbox.snapshot import LAST_ID_MILLIS, ORDER
from convrisk.local_backend.store import ids

# The JSON Schema of a settable field in a body (openapi._input_field).
Settable = Callable[[Field, Resource], dict[str, Any]]
SNAPSHOT = "Snapshot"
# An id body: this many characters of time, then the random ones.
_TIME_CHARACTERS = ID_BODY_LENGTH - ids.RANDOM_BITS // 5


def _at_most(bound: str) -> str:
    """A regular expression of the strings of `bound`'s length over ID_ALPHABET that sort at or
    before it (the alphabet is in ASCII order, so this is the order of their numbers)."""
    choices = []
    for at, char in enumerate(bound):
        below = ID_ALPHABET[: ID_ALPHABET.index(char)]
        if below:
            rest = len(bound) - at - 1
            tail = f"[{ID_ALPHABET}]{{{rest}}}" if rest else ""
            choices.append(f"{bound[:at]}[{below}]{tail}")
    return "(" + "|".join([*choices, bound]) + ")"


def id_pattern(resource: Resource) -> str:
    """The ids a snapshot may hold: the resource's form, with a time at most the last
    timestamp's last millisecond (a later one would leave no id to mint after it)."""
    last = ids.encode(LAST_ID_MILLIS << ids.RANDOM_BITS)[:_TIME_CHARACTERS]
    random = ID_BODY_LENGTH - _TIME_CHARACTERS
    return f"^{resource.prefix}{_at_most(last)}[{ID_ALPHABET}]{{{random}}}$"


def _stamped(field: Field) -> dict[str, Any]:
    """A time the service stamps: whole Unix seconds (null when the field may be)."""
    return {
        "type": ["integer", "null"] if field.nullable else "integer",
        "minimum": 0,
        "maximum": MAX_TIMESTAMP,
    }


def record_schema(resource: Resource, settable: Settable) -> dict[str, Any]:
    """One record without its id (its key): exactly the record's other fields; one with a
    default (a boolean, a nullable field) may be left out, as in a snapshot taken before it
    existed."""
    properties: dict[str, Any] = {}
    for field in resource.fields:
        if field.name == "id":
            continue
        if field.create or field.update:
            properties[field.name] = settable(field, resource)
        else:
            properties[field.name] = _stamped(field)
    required = [f.name for f in resource.fields if not f.has_default and f.name != "id"]
    schema: dict[str, Any] = {
        "title": f"{resource.model} in a snapshot",
        "type": "object",
        "additionalProperties": False,
        "required": required,
        "properties": properties,
    }
    if resource.one_of:
        # As in a create: exactly one of them is a non-empty string.
        schema["oneOf"] = [
            {"required": [name], "properties": {name: {"type": "string", "minLength": 1}}}
            for name in resource.one_of
        ]
    return schema


def schemas(settable: Settable) -> dict[str, Any]:
    """The component schemas: a record of each resource in a snapshot, and the snapshot."""
    names = {name: f"{RESOURCES[name].model}SnapshotRecord" for name in ORDER}
    out: dict[str, Any] = {names[name]: record_schema(RESOURCES[name], settable) for name in ORDER}
    out[SNAPSHOT] = {
        "description": "The whole store: each resource's records by their id. A resource "
        "left out has none.",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            name: {
                "type": "object",
                "propertyNames": {"pattern": id_pattern(RESOURCES[name])},
                "additionalProperties": {"$ref": f"#/components/schemas/{names[name]}"},
            }
            for name in ORDER
        },
    }
    return out
