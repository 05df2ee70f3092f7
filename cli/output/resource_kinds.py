"""What the CLI prints of each resource (columns, the terminal's table, `--fields` names),
derived from its description (api_client.resources)."""

from __future__ import annotations

from convrisk.api_client.resources import CONVERSATIONS as CONVERSATION_RESOURCE
from convrisk.api_client.resources import RISK_PROFILES as RISK_PROFILE_RESOURCE
from convrisk.api_client.resources import Resource
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


def _flags(row: Row) -> str:
    flags = [name for name in ("pinned", "muted") if row.get(f"is_{name}")]
    if row.get("archived_at") is not None:
        flags.append("archived")
    if row.get("pinned_message_id"):
        flags.append(f"message {row['pinned_message_id']}")
    return ", ".join(flags)


# Columns of a terminal table that show a view of the row rather than one field.
_VIEWS = {"with": _party, "flags": _flags}


def kind_of(resource: Resource) -> Kind:
    """The kind of a resource's records: a column per field in the description's order (the
    order of JSON's keys too), and the terminal's table."""
    columns = tuple(
        Column(field.name, field.heading, _CELLS[field.type]) for field in resource.fields
    )
    by_key = {column.key: column for column in columns}
    table = tuple(
        by_key.get(key) or Column(key, key.upper(), value=_VIEWS[key]) for key in resource.table
    )
    return Kind(resource.noun, resource.plural, columns, table, resource.narrowing)


CONVERSATIONS = kind_of(CONVERSATION_RESOURCE)
RISK_PROFILES = kind_of(RISK_PROFILE_RESOURCE)
# By resource name.
KINDS = {CONVERSATION_RESOURCE.name: CONVERSATIONS, RISK_PROFILE_RESOURCE.name: RISK_PROFILES}
