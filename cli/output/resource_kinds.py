"""What the CLI prints of each resource (columns, the terminal's table, `--fields` names),
derived from its description (api_client.resources)."""

from __future__ import annotations

from collections.abc import Callable

from convrisk.api_client.resources import CONVERSATIONS as CONVERSATION_RESOURCE
from convrisk.api_client.resources import RISK_PROFILES as RISK_PROFILE_RESOURCE
from convrisk.api_client.resources import Field, Resource
from convrisk.cli.output.cells import CellKind
from convrisk.cli.output.kinds import Column, Kind, Row

_CELLS: dict[str, CellKind] = {
    "string": "text",
    "boolean": "bool",
    "number": "number",
    "timestamp": "time",
    "object": "json",
}


def _party(row: Row) -> str:
    if row.get("group_id"):
        return f"group {row['group_id']}"
    return f"contact {row.get('contact_id') or ''}".strip()


def _flags(resource: Resource) -> Callable[[Row], str]:
    """The FLAGS column of a resource: the `flag` word of each field set in the row, the plain
    words first, then those that show the value."""
    flagged = [field for field in resource.fields if field.flag]
    flagged.sort(key=lambda field: "{}" in field.flag)

    def flags(row: Row) -> str:
        return ", ".join(
            field.flag.format(row[field.name])
            for field in flagged
            if _is_set(field, row.get(field.name))
        )

    return flags


def _is_set(field: Field, value: object) -> bool:
    """Whether a field shows its flag: a time when not null, another value when truthy."""
    return value is not None if field.type == "timestamp" else bool(value)


def kind_of(resource: Resource) -> Kind:
    """The kind of a resource's records: a column per field in the description's order (the
    order of JSON's keys too), and the terminal's table."""
    columns = tuple(
        Column(field.name, field.heading, _CELLS[field.type]) for field in resource.fields
    )
    by_key = {column.key: column for column in columns}
    # Columns of a terminal table that show a view of the row rather than one field.
    views = {"with": _party, "flags": _flags(resource)}
    table = tuple(
        by_key.get(key) or Column(key, key.upper(), value=views[key]) for key in resource.table
    )
    return Kind(resource.noun, resource.plural, columns, table, resource.narrowing)


CONVERSATIONS = kind_of(CONVERSATION_RESOURCE)
RISK_PROFILES = kind_of(RISK_PROFILE_RESOURCE)
# By resource name.
KINDS = {CONVERSATION_RESOURCE.name: CONVERSATIONS, RISK_PROFILE_RESOURCE.name: RISK_PROFILES}
