"""Records and field lists made from the resource description (api_client/resources.py), for the
tests and benchmarks: a field added to the description is in each sample record a fake service
answers with, and in each expected list of fields, without an edit here or there."""

from __future__ import annotations

from typing import Any

from convrisk.api_client.resources import CONVERSATIONS, RISK_PROFILES, Field, Resource


def may_be_left_out(field: Field) -> bool:
    """Whether a new record has a value in this field that nobody set: null, else false."""
    return field.nullable or field.type == "boolean"


def record(resource: Resource, **values: Any) -> dict[str, Any]:
    """A record as the service sends it: every described field, in the description's order, at
    `values` or, when left out, unset (a field that cannot be left out must be given).

    An undescribed name is refused (TypeError): a test adds a field the interface does not know
    after the call, `{**record(...), "topic": "billing"}`, so that a typo cannot pass for one.
    """
    unknown = values.keys() - set(resource.names())
    missing = [f.name for f in resource.fields if f.name not in values and not may_be_left_out(f)]
    if unknown or missing:
        raise TypeError(f"a {resource.noun} has no field {sorted(unknown)} and needs {missing}")
    return {f.name: values.get(f.name, None if f.nullable else False) for f in resource.fields}


def conversation(id: str, created_at: int, **values: Any) -> dict[str, Any]:
    """A conversation as the service sends it: the fields not given unset."""
    return record(CONVERSATIONS, id=id, created_at=created_at, **values)


def risk_profile(**values: Any) -> dict[str, Any]:
    """A risk profile as the service sends it (it has no field that may be left out)."""
    return record(RISK_PROFILES, **values)


def settable(resource: Resource) -> list[str]:
    """The fields a create or an update takes, in the record's order."""
    return [f.name for f in resource.writable()]
