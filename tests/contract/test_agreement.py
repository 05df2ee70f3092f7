"""Side by side: the same calls on both legs give equal objects and the same errors."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from convrisk.api_client import APIError, Client, ConvriskError, InvalidRequestError
from convrisk.api_client.page import Page
from convrisk.cli.errors import USAGE, exit_code

from .conftest import Leg

RISK: Any = {"customer_id": "cus_1", "profile_type": "moderate", "score": 55, "details": {"a": 1}}


def _without_ids(value: Any) -> Any:
    """A JSON-ready value with every id blanked (ids are random after their time part)."""
    if isinstance(value, Page):
        return _without_ids(value.as_dict())
    if isinstance(value, list):
        return [_without_ids(v) for v in value]
    if isinstance(value, dict):
        return {k: ("<id>" if k == "id" else _without_ids(v)) for k, v in value.items()}
    return value


def _scenario(client: Client, advance: Callable[[float], None]) -> list[Any]:
    """A day in the life of the service; every answer, as JSON, in order."""
    out: list[Any] = []
    conv = client.conversations
    risk = client.risk_profiles
    a = conv.create({"contact_id": "ct_a"})
    advance(1)
    b = conv.create({"group_id": "grp_b"}, idempotency_key="key-b")
    out += [a, b]
    out.append(conv.create({"group_id": "grp_b"}, idempotency_key="key-b"))
    advance(1)
    out.append(conv.update(a["id"], {"is_muted": True, "archived_at": 1_700_000_500}))
    out.append(conv.update(b["id"], {"is_pinned": True, "pinned_message_id": "m1"}))
    out.append(conv.update(b["id"], {"pinned_message_id": None}))
    out.append(conv.update(a["id"], {}))
    for filters in ({}, {"muted": True}, {"archived": False}, {"pinned": True, "muted": False}):
        out.append(conv.list(filters, limit=1))  # type: ignore[arg-type]
    r = risk.create(RISK)
    advance(7)
    out.append(risk.update(r["id"], {"score": 12.5, "details": {"b": [1, None]}}))
    out.append(risk.list({"customer_id": "cus_1"}))
    out.append(risk.delete(r["id"]))
    out.append(conv.delete(a["id"]))
    out.append(conv.list(starting_after=a["id"]))
    out.append(conv.list(ending_before=a["id"]))
    out.append([c for c in conv.iterate(page_size=1)])
    # The export path: the same pages as JSON text, which parses back to the same records.
    risk.create(RISK | {"score": 0.1, "details": {"é": [1.5, None, "\x1b"]}})
    walks: list[Iterator[Page[Any]]] = [
        conv.iter_pages(page_size=1, view="json"),
        risk.iter_pages({"customer_id": "cus_1"}, view="json"),
    ]
    for pages in walks:
        out.append(
            [
                {
                    "has_more": p.has_more,
                    "data": [json.loads(t) for t in p.json_texts],
                    "n": len(p.ids),
                }
                for p in pages
            ]
        )
    return out


def test_the_same_scenario_gives_equal_answers(both: tuple[Leg, Leg]) -> None:
    local, remote = both
    assert _without_ids(_scenario(local.client, local.clock.advance)) == _without_ids(
        _scenario(remote.client, remote.clock.advance)
    )


UNKNOWN_CONV = "conv_" + "0" * 26
UNKNOWN_RP = "rp_" + "0" * 26
# The client is Any here: these calls break the parameter types on purpose.
BAD_CALLS: list[tuple[str, Callable[[Any], object]]] = [
    ("both parties", lambda c: c.conversations.create({"contact_id": "x", "group_id": "y"})),
    ("no party", lambda c: c.conversations.create({})),
    ("unknown create attribute", lambda c: c.conversations.create({"contact_id": "x", "n": 1})),
    ("unknown update attribute", lambda c: c.conversations.update("conv_x", {"n": 1})),
    ("update unknown id", lambda c: c.conversations.update(UNKNOWN_CONV, {"is_muted": True})),
    ("retrieve unknown id", lambda c: c.risk_profiles.retrieve(UNKNOWN_RP)),
    ("delete unknown id", lambda c: c.risk_profiles.delete(UNKNOWN_RP)),
    ("update malformed id", lambda c: c.conversations.update("conv_x", {"is_muted": True})),
    ("retrieve malformed id", lambda c: c.risk_profiles.retrieve("rp_x")),
    ("malformed cursor", lambda c: c.conversations.list(ending_before="conv_01HV...")),
    ("limit 0", lambda c: c.conversations.list(limit=0)),
    ("limit 101", lambda c: c.risk_profiles.list(limit=101)),
    ("bad boolean filter", lambda c: c.conversations.list({"muted": "no"})),
    ("unknown filter", lambda c: c.risk_profiles.list({"muted": True})),
    (
        "unknown filter, JSON pages",
        lambda c: next(c.risk_profiles.iter_pages({"x": 1}, view="json")),
    ),
    (
        "foreign cursor, JSON pages",
        lambda c: next(c.conversations.iter_pages(starting_after="rp_1", view="json")),
    ),
    ("foreign cursor", lambda c: c.risk_profiles.list(starting_after="conv_1")),
    (
        "two cursors",
        lambda c: c.conversations.list(starting_after="conv_1", ending_before="conv_2"),
    ),
    ("score bool", lambda c: c.risk_profiles.create({**RISK, "score": True})),
    ("score huge", lambda c: c.risk_profiles.create({**RISK, "score": 10**30})),
    ("details list", lambda c: c.risk_profiles.create({**RISK, "details": []})),
    ("customer_id change", lambda c: c.risk_profiles.update("rp_x", {"customer_id": "c"})),
    ("lone surrogate", lambda c: c.conversations.create({"group_id": "\udc80"})),
    (
        "long idempotency key",
        lambda c: c.conversations.create({"contact_id": "x"}, idempotency_key="k" * 300),
    ),
]


def _error_of(
    call: Callable[[Client], object], client: Client
) -> tuple[type[ConvriskError], str | None, int]:
    with pytest.raises(ConvriskError) as caught:
        call(client)
    error = caught.value
    assert isinstance(error, APIError)
    return type(error), error.param, error.status


@pytest.mark.parametrize(("name", "call"), BAD_CALLS, ids=[name for name, _ in BAD_CALLS])
def test_the_same_bad_call_raises_the_same_error(
    both: tuple[Leg, Leg], name: str, call: Callable[[Any], object]
) -> None:
    local, remote = both
    assert _error_of(call, local.client) == _error_of(call, remote.client)
    # Nothing was created on either side by a refused call.
    for leg in both:
        assert leg.client.conversations.list()["data"] == []
        assert leg.client.risk_profiles.list()["data"] == []


MISSING_CONV = "conv_00000000000000000000000000"
MISSING_RISK = "rp_00000000000000000000000000"
# A bad body and an id that is not there: the body is refused first on both backends (it is
# known before any lookup; the remote client refuses it before it sends anything).
BAD_BODY_MISSING_ID: list[tuple[str, Callable[[Any], object]]] = [
    ("unknown attribute, missing id", lambda c: c.conversations.update(MISSING_CONV, {"n": 1})),
    ("unknown attribute, foreign id", lambda c: c.conversations.update("rp_x", {"n": 1})),
    ("bad score, foreign id", lambda c: c.risk_profiles.update("conv_x", {"score": "high"})),
    (
        "lone surrogate, missing id",
        lambda c: c.conversations.update(MISSING_CONV, {"pinned_message_id": "\udc80"}),
    ),
    (
        "lone surrogate in details, missing id",
        lambda c: c.risk_profiles.update(MISSING_RISK, {"details": {"k": ["\udc80"]}}),
    ),
    (
        "lone surrogate in a details key, missing id",
        lambda c: c.risk_profiles.update(MISSING_RISK, {"details": {"\udc80": 1}}),
    ),
]


@pytest.mark.parametrize(
    ("name", "call"), BAD_BODY_MISSING_ID, ids=[name for name, _ in BAD_BODY_MISSING_ID]
)
def test_a_bad_body_is_refused_before_the_id_is_looked_up_with_one_exit_code(
    both: tuple[Leg, Leg], name: str, call: Callable[[Any], object]
) -> None:
    seen = []
    for leg in both:
        with pytest.raises(InvalidRequestError) as caught:
            call(leg.client)
        seen.append((caught.value.param, exit_code(caught.value)))
    assert seen[0] == seen[1]
    assert seen[0][1] == USAGE  # refused before any request, on either backend
