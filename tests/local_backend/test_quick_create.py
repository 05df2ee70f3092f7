"""A create body is checked the same way whether the quick path tells it or the full checks do:
the same column values (an object's as its object, whose text is the one stored), the same
objects, and every body the checks refuse left to them."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from convrisk.api_client.errors import InvalidRequestError
from convrisk.api_client.records import Created, load_json
from convrisk.api_client.resources import CONVERSATIONS, RISK_PROFILES, Resource
from convrisk.local_backend.backend import LocalBackend
from convrisk.local_backend.store.column_values import json_text
from convrisk.local_backend.store.table_spec import table_spec

from .conftest import risk_body


class Tuple(tuple):  # type: ignore[type-arg]
    """A tuple subclass: JSON writes it as an array, which reads back as a list."""


class Text(str):
    """A str subclass: the checks take it, JSON writes it as text."""


def _deep(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


RISK: dict[str, Any] = {
    "customer_id": "cus_1",
    "profile_type": "moderate",
    "score": 5,
    "details": {"b": 1, "a": [1.5, None, True, {"x": "é"}]},
}
RISK_BODIES: list[object] = [
    RISK,
    {**RISK, "score": 72.25},
    {**RISK, "score": -0.0},
    {**RISK, "score": 2**63 - 1},
    {**RISK, "score": 2**63},
    {**RISK, "score": math.nan},
    {**RISK, "score": math.inf},
    {**RISK, "score": True},
    {**RISK, "score": "5"},
    {**RISK, "customer_id": ""},
    {**RISK, "customer_id": " \u3000"},
    {**RISK, "customer_id": "\ud800"},
    {**RISK, "customer_id": "日本"},
    {**RISK, "customer_id": Text("cus_2")},
    {**RISK, "customer_id": None},
    {**RISK, "profile_type": 3},
    {key: value for key, value in RISK.items() if key != "details"},
    {key: value for key, value in RISK.items() if key != "score"},
    {**RISK, "details": {}},
    {**RISK, "details": None},
    {**RISK, "details": []},
    {**RISK, "details": {"n": math.nan}},
    {**RISK, "details": {"t": (1, 2)}},
    {**RISK, "details": {"t": Tuple((1, 2))}},
    {**RISK, "details": {1: "a", "1": "b"}},
    {**RISK, "details": {"k\ud800": 1}},
    {**RISK, "details": {"v": ["\udfff"]}},
    {**RISK, "details": {"set": {1}}},
    {**RISK, "details": {"big": 10**5000}},
    {**RISK, "details": {"big": 10**4299, "small": -(10**4299)}},
    {**RISK, "details": {"big": [10**4300]}},
    {**RISK, "details": {"inf": [math.inf]}},
    {**RISK, "details": {"x": {"y": -math.inf}}},
    {**RISK, "details": _deep(64)},
    {**RISK, "details": _deep(65)},
    {**RISK, "extra": 1},
    {**RISK, "id": "rp_1"},
    [RISK],
    None,
]
CONVERSATION_BODIES: list[object] = [
    {"contact_id": "ct_1"},
    {"group_id": "g_1"},
    {"contact_id": "", "group_id": "g_1"},
    {"contact_id": None, "group_id": "g_1"},
    {"contact_id": "ct_1", "group_id": "g_1"},
    {},
    {"contact_id": 5},
    {"contact_id": " "},
    {"contact_id": "\ud800"},
    {"contact_id": "ct_1", "is_muted": True},
]


def _full(resource: Resource, body: object) -> tuple[dict[str, Any], dict[str, Any]] | str:
    """What the full checks give: the column values and each object as its text reads back,
    or the error's message."""
    spec = table_spec(resource)
    try:
        values = spec.create_values(body)
    except InvalidRequestError as exc:
        return exc.message
    parsed = {name: load_json(values[name]) for name in spec.json_columns if name in values}
    return values, parsed


@pytest.mark.parametrize(
    ("resource", "body"),
    [(RISK_PROFILES, body) for body in RISK_BODIES]
    + [(CONVERSATIONS, body) for body in CONVERSATION_BODIES],
)
def test_a_body_told_at_once_gives_what_the_full_checks_give(
    resource: Resource, body: object
) -> None:
    quick = table_spec(resource).quick_create
    assert quick is not None
    told = quick(body)
    full = _full(resource, body)
    if told is None:
        return  # left to the full checks, which the other tests cover
    assert not isinstance(full, str), f"the quick path took a body the checks refuse: {full}"
    values, parsed = told
    full_values, full_parsed = full
    assert list(values) == list(full_values)  # the same columns in the same order
    assert parsed == full_parsed
    for name, value in values.items():
        if name in parsed:
            # An object column holds the object, whose text is the one the checks store.
            assert value is parsed[name]
            assert json_text(value, name) == full_values[name]
        else:
            assert value == full_values[name]
            assert type(value) is type(full_values[name])
    for name, value in parsed.items():
        assert type(value) is type(full_parsed[name])


def test_plain_bodies_are_told_at_once() -> None:
    quick = table_spec(RISK_PROFILES).quick_create
    assert quick is not None
    assert quick(RISK) is not None
    assert quick({**RISK, "score": 72.25, "customer_id": "日本"}) is not None
    conversations = table_spec(CONVERSATIONS).quick_create
    assert conversations is not None
    assert conversations({"contact_id": "ct_1"}) is not None


TRICKY_DETAILS: list[dict[str, Any]] = [
    {},
    {"details": {"details": 1}, "created_at": 5, "updated_at": [{"created_at": "x"}]},
    {"s": '"details":{"a":1},"created_at":2', "t": '\\",\\"created_at\\":'},
    {"n": [1.5e300, -0.0, 10**30, True, None], "é\u2028": "\u001b[31m"},
]


@pytest.mark.parametrize("details", TRICKY_DETAILS)
def test_what_a_create_stores_and_answers_is_its_details_as_written(
    backend: LocalBackend, db_path: Path, details: dict[str, Any]
) -> None:
    # Whatever the details hold (keys named like the record's own, text that looks like JSON),
    # the column holds their JSON text, and the answer kept for the key is the record's.
    body = risk_body(customer_id='cus_"details":', details=details)
    (made,) = backend.risk_profiles.create_many([(body, "k1")])
    assert isinstance(made, Created)
    assert made.record["details"] == details
    assert made.text == json_text(made.record, "record")
    conn = sqlite3.connect(db_path)
    try:
        (stored,) = conn.execute("SELECT details FROM risk_profiles").fetchone()
        (answer,) = conn.execute("SELECT response FROM idempotency_keys").fetchone()
    finally:
        conn.close()
    assert stored == json_text(details, "details")
    assert answer == made.text
    assert backend.risk_profiles.retrieve(made.record["id"]) == made.record
