"""Each resource is described once (api_client.resources); every surface follows it."""

from __future__ import annotations

import typing
from typing import Any

import pytest

from convrisk.api_client import record_types
from convrisk.api_client.resources import RESOURCES, Resource
from convrisk.cli.importing.run import CONVERSATION_IMPORT, RISK_PROFILE_IMPORT
from convrisk.cli.output.resource_kinds import CONVERSATIONS, RISK_PROFILES
from convrisk.local_backend.sandbox.openapi import document
from convrisk.local_backend.sandbox.wire import ROUTES
from convrisk.local_backend.store import conversations, risk_profiles
from convrisk.local_backend.store.resource import ResourceSpec

DESCRIBED = list(RESOURCES.values())
KINDS = {"conversations": CONVERSATIONS, "risk_profiles": RISK_PROFILES}
IMPORTS = {"conversations": CONVERSATION_IMPORT, "risk_profiles": RISK_PROFILE_IMPORT}
TABLES: dict[str, ResourceSpec[Any]] = {
    "conversations": conversations.SPEC,
    "risk_profiles": risk_profiles.SPEC,
}
TYPED = {
    "conversations": (
        record_types.Conversation,
        record_types.ConversationCreateParams,
        record_types.ConversationUpdateParams,
        record_types.ConversationFilters,
    ),
    "risk_profiles": (
        record_types.RiskProfile,
        record_types.RiskProfileCreateParams,
        record_types.RiskProfileUpdateParams,
        record_types.RiskProfileFilters,
    ),
}


def keys(typed: Any) -> list[str]:
    return list(typing.get_type_hints(typed))


@pytest.mark.parametrize("resource", DESCRIBED, ids=lambda r: r.name)
def test_the_typed_dicts_name_the_described_fields_in_order(resource: Resource) -> None:
    record, create, update, filters = TYPED[resource.name]
    assert keys(record) == list(resource.names())
    assert keys(create) == [field.name for field in resource.creatable()]
    assert keys(update) == [field.name for field in resource.updatable()]
    assert keys(filters) == [f.name for f in resource.filters]


@pytest.mark.parametrize("resource", DESCRIBED, ids=lambda r: r.name)
def test_every_field_is_a_fields_name_and_a_column(resource: Resource) -> None:
    kind = KINDS[resource.name]
    assert sorted(column.key for column in kind.columns) == sorted(resource.names())
    assert {key for _, key in kind.narrowing} <= {c.key for c in kind.terminal_columns}
    assert kind.terminal_columns[0].key == "id"  # the id is never dropped


@pytest.mark.parametrize("resource", DESCRIBED, ids=lambda r: r.name)
def test_every_filter_is_a_query_parameter_of_the_list_route(resource: Resource) -> None:
    assert ROUTES[resource.path] is resource
    listed = document()["paths"][resource.path]["get"]["parameters"]
    served = resource.interface_filters()
    assert [p["name"] for p in listed] == ["limit", "starting_after", *(f.name for f in served)]
    assert set(TABLES[resource.name].filter_columns) == {f.name for f in resource.filters}


@pytest.mark.parametrize("resource", DESCRIBED, ids=lambda r: r.name)
def test_the_body_schemas_take_exactly_the_settable_fields(resource: Resource) -> None:
    schemas = document()["components"]["schemas"]
    create = schemas[f"{resource.model}Create"]["properties"]
    update = schemas[f"{resource.model}Update"]["properties"]
    assert list(create) == [field.name for field in resource.creatable()]
    assert list(update) == [field.name for field in resource.updatable()]
    assert list(schemas[resource.model]["properties"]) == list(resource.names())


@pytest.mark.parametrize("resource", DESCRIBED, ids=lambda r: r.name)
def test_an_import_takes_the_id_and_the_settable_fields(resource: Resource) -> None:
    spec = IMPORTS[resource.name]
    assert list(spec.columns) == ["id", *(field.name for field in resource.writable())]
    assert spec.create_fields == tuple(field.name for field in resource.creatable())
    assert spec.update_fields == tuple(field.name for field in resource.updatable())


@pytest.mark.parametrize("resource", DESCRIBED, ids=lambda r: r.name)
def test_the_local_table_has_a_column_per_field(resource: Resource) -> None:
    spec = TABLES[resource.name]
    assert spec.columns == resource.names()
    assert spec.prefix == resource.prefix


@pytest.mark.parametrize("resource", DESCRIBED, ids=lambda r: r.name)
def test_the_id_pattern_and_the_id_check_agree_with_the_ids_minted(resource: Resource) -> None:
    import re

    from convrisk.local_backend.store import ids

    minted = [resource.prefix + ids.encode(ids.number_at(ms)) for ms in (0, 1, 2**47, 2**50 - 1)]
    wrong = [
        resource.prefix + "0" * 25,
        resource.prefix + "0" * 27,
        resource.prefix + "I" + "0" * 25,
        resource.prefix + "a" + "0" * 25,
        "x_" + "0" * 26,
    ]
    for text in minted + wrong:
        expected = text in minted
        assert resource.is_minted_id(text) is expected, text
        assert (re.fullmatch(resource.id_pattern, text) is not None) is expected, text
