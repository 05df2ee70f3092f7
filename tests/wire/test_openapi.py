"""GET /openapi.json: a valid OpenAPI 3.1 document that describes what the server really does."""

from __future__ import annotations

import json
import sys
from typing import Any

import httpx
import jsonschema_rs
import pytest
from openapi_schema_validator import OAS31Validator
from openapi_spec_validator import validate

from convrisk.api_client.errors import InvalidRequestError
from convrisk.api_client.params import (
    BLANK,
    MAX_NUMBER,
    MAX_TIMESTAMP,
    MIN_NUMBER,
    check_conversation_create,
    check_conversation_update,
    check_risk_profile_create,
    check_risk_profile_update,
)
from convrisk.api_client.resources import ID_BODY_LENGTH, RESOURCES
from convrisk.local_backend.sandbox import snapshot
from convrisk.local_backend.sandbox.openapi import DESCRIBED_PARAMETERS, document
from convrisk.local_backend.sandbox.snapshot import LAST_ID_MILLIS
from convrisk.local_backend.store import ids

CONV = "/v1/conversations"
RISK = "/v1/risk-profiles"
RISK_BODY = {"customer_id": "cus_1", "profile_type": "moderate", "score": 55, "details": {}}


def schema_of(doc: dict[str, Any], name: str) -> dict[str, Any]:
    """A component schema, with the components beside it so that its $refs resolve."""
    return {**doc["components"]["schemas"][name], "components": doc["components"]}


def conforms(doc: dict[str, Any], name: str, instance: Any) -> bool:
    """Whether `instance` is valid against the component schema `name`, for both validators:
    openapi-schema-validator (Python's regular expressions) and jsonschema_rs (ECMAScript's,
    as JSON Schema says; schemathesis checks with it). They must agree."""
    schema = schema_of(doc, name)
    python = bool(OAS31Validator(schema).is_valid(instance))
    ecma = bool(jsonschema_rs.validator_for(schema).is_valid(instance))
    assert python is ecma, (name, instance)
    return python


def test_the_document_is_served_without_a_token_and_is_valid_openapi_31(
    anon: httpx.Client,
) -> None:
    response = anon.get("/openapi.json")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    served = response.json()
    assert served["openapi"] == "3.1.0"
    validate(served)
    assert served == document()


def test_the_document_has_only_get(http: httpx.Client) -> None:
    response = http.post("/openapi.json", json={})
    assert response.status_code == 405
    assert response.headers["allow"] == "GET"


def test_a_method_the_document_does_not_list_is_refused_with_the_listed_ones(
    http: httpx.Client,
) -> None:
    paths = document()["paths"]
    for template, item in paths.items():
        if template == "/openapi.json":
            continue
        path = template.replace("{id}", "conv_nope")
        listed = {method.upper() for method in item if method != "parameters"}
        response = http.request("PATCH", path)
        assert response.status_code == 405, path
        assert set(response.headers["allow"].split(", ")) == listed


def test_every_documented_query_parameter_is_taken_and_nothing_else(http: httpx.Client) -> None:
    doc = document()
    for path, item in doc["paths"].items():
        # The sandbox's admin routes have their own tests (tests/wire/test_sandbox.py).
        if "get" not in item or "{id}" in path or path == "/openapi.json":
            continue
        if path.startswith("/__sandbox/"):
            continue
        listed = item["get"]["parameters"]
        described = item["get"][DESCRIBED_PARAMETERS]
        assert {p["in"] for p in [*listed, *described]} == {"query"}
        params = {p["name"]: p["schema"] for p in [*listed, *described]}
        limit = params.pop("limit")
        assert http.get(path, params={"limit": limit["maximum"]}).status_code == 200
        assert http.get(path, params={"limit": limit["maximum"] + 1}).status_code == 400
        (resource,) = [r for r in RESOURCES.values() if r.path == path]
        cursor = resource.prefix + "0" * ID_BODY_LENGTH
        for name in ("starting_after", "ending_before"):
            assert params.pop(name)["pattern"] == resource.id_pattern
            assert http.get(path, params={name: cursor}).status_code == 200, (path, name)
        both = {"starting_after": cursor, "ending_before": cursor}
        assert http.get(path, params=both).status_code == 400
        for name, schema in params.items():
            value = "true" if "pattern" in schema else "x"
            assert http.get(path, params={name: value}).status_code == 200, (path, name)
        assert http.get(path, params={"colour": "red"}).status_code == 400


def test_real_answers_conform_to_their_schemas(http: httpx.Client, anon: httpx.Client) -> None:
    doc = document()
    conv = http.post(CONV, json={"contact_id": "ct_1"}).json()
    rp = http.post(RISK, json=RISK_BODY).json()
    assert conforms(doc, "Conversation", conv)
    assert conforms(doc, "RiskProfile", rp)
    assert conforms(doc, "ConversationPage", http.get(CONV).json())
    assert conforms(doc, "RiskProfilePage", http.get(RISK).json())
    assert conforms(doc, "Deleted", http.delete(f"{CONV}/{conv['id']}").json())
    errors = [
        anon.get(CONV),
        http.get(CONV, params={"limit": "0"}),
        http.get(f"{CONV}/conv_nope"),
        http.get(f"{CONV}/conv_00000000000000000000000000"),
        http.patch(CONV),
        http.post(CONV, content=b"x", headers={"Content-Type": "text/plain"}),
        http.post(RISK, json={**RISK_BODY, "details": {"x": "y" * (1024 * 1024)}}),
    ]
    assert [e.status_code for e in errors] == [401, 400, 400, 404, 405, 415, 413]
    for error in errors:
        assert conforms(doc, "Error", error.json()), error.text


CHECKS = {
    "ConversationCreate": check_conversation_create,
    "ConversationUpdate": check_conversation_update,
    "RiskProfileCreate": check_risk_profile_create,
    "RiskProfileUpdate": check_risk_profile_update,
}
BODIES: list[tuple[str, Any]] = [
    ("ConversationCreate", {"contact_id": "ct_1"}),
    ("ConversationCreate", {"group_id": "g", "contact_id": ""}),
    ("ConversationCreate", {"group_id": "g", "contact_id": None}),
    ("ConversationCreate", {"group_id": "g", "contact_id": "c"}),
    ("ConversationCreate", {}),
    ("ConversationCreate", {"contact_id": ""}),
    ("ConversationCreate", {"contact_id": 5}),
    ("ConversationCreate", {"contact_id": "c", "colour": "red"}),
    ("ConversationUpdate", {}),
    ("ConversationUpdate", {"archived_at": 0, "is_muted": True, "pinned_message_id": None}),
    ("ConversationUpdate", {"archived_at": 1.5}),
    ("ConversationUpdate", {"archived_at": -1}),
    ("ConversationUpdate", {"archived_at": 2**63}),
    ("ConversationUpdate", {"pinned_message_id": ""}),
    ("ConversationUpdate", {"is_pinned": 1}),
    ("RiskProfileCreate", RISK_BODY),
    ("RiskProfileCreate", {**RISK_BODY, "score": 2.5e300}),
    ("RiskProfileCreate", {**RISK_BODY, "score": 2**63}),
    ("RiskProfileCreate", {**RISK_BODY, "score": True}),
    ("RiskProfileCreate", {**RISK_BODY, "customer_id": " \t"}),
    ("RiskProfileCreate", {**RISK_BODY, "details": []}),
    ("RiskProfileCreate", {k: v for k, v in RISK_BODY.items() if k != "details"}),
    ("RiskProfileUpdate", {}),
    ("RiskProfileUpdate", {"score": -3, "profile_type": "x"}),
    ("RiskProfileUpdate", {"customer_id": "c"}),
    ("RiskProfileUpdate", {"profile_type": ""}),
    # Whitespace as Python's str.strip() sees it, which JSON Schema's \s does not match alike.
    *(("RiskProfileUpdate", {"profile_type": blank}) for blank in BLANK),
    ("RiskProfileUpdate", {"profile_type": "\x1d\u3000 "}),
    ("RiskProfileUpdate", {"profile_type": "\ufeff"}),  # whitespace to ECMAScript only
    ("RiskProfileUpdate", {"profile_type": "\u180e"}),
    ("RiskProfileUpdate", {"profile_type": "\x1dx"}),
    ("RiskProfileCreate", {**RISK_BODY, "customer_id": "\u2028"}),
    # Times and numbers within the rule's bounds, and just past them.
    ("ConversationUpdate", {"archived_at": 1.797e308}),
    ("ConversationUpdate", {"archived_at": MAX_TIMESTAMP}),
    ("ConversationUpdate", {"archived_at": MAX_TIMESTAMP + 0.5}),
    ("ConversationUpdate", {"archived_at": MAX_TIMESTAMP + 1}),
    ("ConversationUpdate", {"archived_at": -0.0}),
    ("ConversationUpdate", {"archived_at": -1e-300}),
    ("RiskProfileUpdate", {"score": MAX_NUMBER}),
    ("RiskProfileUpdate", {"score": MAX_NUMBER + 1}),
    ("RiskProfileUpdate", {"score": float(MIN_NUMBER)}),
    ("RiskProfileUpdate", {"score": float(MIN_NUMBER) * (1 + 2**-52)}),
    ("RiskProfileUpdate", {"score": -(2**63)}),
    ("RiskProfileUpdate", {"score": 1e300}),
    ("RiskProfileUpdate", {"score": 0.1}),
]


@pytest.mark.parametrize(("name", "body"), BODIES)
def test_request_schemas_accept_exactly_what_the_input_rules_accept(name: str, body: Any) -> None:
    try:
        CHECKS[name](body)
        accepted = True
    except InvalidRequestError:
        accepted = False
    assert conforms(document(), name, body) is accepted


def test_blank_is_what_python_strips() -> None:
    python = {chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()}
    assert set(BLANK) == python
    assert len(BLANK) == len(python)


def test_the_document_names_no_design_section_a_reader_does_not_have() -> None:
    text = json.dumps(document())
    assert "DESIGN" not in text


# A conversation and a risk profile as the JSON object form of a snapshot holds them (by id).
CONV_ID = "conv_01HZ0000000000000000000000"
RISK_ID = "rp_01HZ0000000000000000000000"
SNAP_CONV = {
    "contact_id": "c",
    "group_id": None,
    "pinned_message_id": None,
    "is_pinned": False,
    "is_muted": True,
    "last_active_at": None,
    "last_opened_at": 5,
    "created_at": 1_700_000_000,
    "archived_at": 1.5,
}
SNAP_RISK = {**RISK_BODY, "created_at": 0, "updated_at": MAX_TIMESTAMP}
# The last id time (the end of 9999, its last millisecond), and the millisecond after it.
LAST_TIME = ids.encode(LAST_ID_MILLIS << ids.RANDOM_BITS)[:10]
PAST_TIME = ids.encode((LAST_ID_MILLIS + 1) << ids.RANDOM_BITS)[:10]


def conv(record: Any, object_id: str = CONV_ID) -> dict[str, Any]:
    """A snapshot of one conversation."""
    return {"conversations": {object_id: record}}


def without(record: dict[str, Any], name: str) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k != name}


SNAPSHOTS: list[Any] = [
    {},
    {"conversations": {}, "risk_profiles": {}},
    {"risk_profiles": {RISK_ID: SNAP_RISK}, "conversations": {CONV_ID: SNAP_CONV}},
    conv({"group_id": "g", "created_at": 0}),
    conv(without(SNAP_CONV, "is_pinned")),
    conv(without(SNAP_CONV, "created_at")),
    {"risk_profiles": {RISK_ID: without(SNAP_RISK, "details")}},
    conv({**SNAP_CONV, "group_id": "g"}),
    conv({**SNAP_CONV, "contact_id": None}),
    conv({**SNAP_CONV, "contact_id": "", "group_id": "g"}),
    conv({**SNAP_CONV, "colour": "red"}),
    conv({**SNAP_CONV, "id": CONV_ID}),
    conv({**SNAP_CONV, "resource": "conversations"}),
    conv(SNAP_CONV, RISK_ID),
    {"risk_profiles": {CONV_ID: SNAP_RISK}},
    {"contacts": {}},
    {"conversations": [SNAP_CONV]},
    conv(SNAP_CONV, "conv_" + LAST_TIME + "Z" * 16),
    conv(SNAP_CONV, "conv_" + PAST_TIME + "0" * 16),
    conv(SNAP_CONV, "conv_" + "Z" * 26),
    conv(SNAP_CONV, "conv_01hz0000000000000000000000"),
    conv({**SNAP_CONV, "created_at": 12.0}),
    conv({**SNAP_CONV, "created_at": 12.5}),
    conv({**SNAP_CONV, "created_at": -1}),
    conv({**SNAP_CONV, "created_at": MAX_TIMESTAMP + 1}),
    conv({**SNAP_CONV, "created_at": None}),
    conv({**SNAP_CONV, "created_at": True}),
    conv({**SNAP_CONV, "last_active_at": 7}),
    conv({**SNAP_CONV, "archived_at": -1}),
    conv({**SNAP_CONV, "is_muted": "yes"}),
    conv({**SNAP_CONV, "pinned_message_id": ""}),
    conv(5),
    {"risk_profiles": {RISK_ID: {**SNAP_RISK, "score": MAX_NUMBER + 1}}},
    {"risk_profiles": {RISK_ID: {**SNAP_RISK, "customer_id": " "}}},
    {"risk_profiles": {RISK_ID: {**SNAP_RISK, "details": []}}},
    {"risk_profiles": {RISK_ID: {**SNAP_RISK, "updated_at": 3.0}}},
]


@pytest.mark.parametrize("body", SNAPSHOTS)
def test_the_snapshot_schema_accepts_exactly_what_a_restore_accepts(body: Any) -> None:
    try:
        snapshot.parse(json.dumps(body).encode(), as_json=True)
        accepted = True
    except InvalidRequestError:
        accepted = False
    assert conforms(document(), "Snapshot", body) is accepted


def test_the_restore_body_is_the_json_object_and_the_lines_are_described_in_words() -> None:
    operation = document()["paths"]["/__sandbox/restore"]["post"]
    assert list(operation["requestBody"]["content"]) == ["application/json"]
    assert "JSON lines" in operation["description"]
