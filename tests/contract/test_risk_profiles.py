"""The risk profiles contract (DESIGN section 1), run on the local and the remote leg alike."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from convrisk.api_client import InvalidRequestError, NotFoundError
from convrisk.api_client.record_types import RiskProfile, RiskProfileFilters
from convrisk.api_client.resources import RISK_PROFILES

from .conftest import START, Leg

DETAILS = {"horizon": "10y", "answers": [1, 2, {"nested": None}], "ok": True, "ratio": 0.25}


def create(leg: Leg, **overrides: Any) -> RiskProfile:
    """Create a risk profile; every field has a default that `overrides` may change."""
    params = {"customer_id": "cus_1", "profile_type": "moderate", "score": 55, "details": DETAILS}
    return leg.client.risk_profiles.create({**params, **overrides})  # type: ignore[typeddict-item]


def ids(items: list[RiskProfile]) -> list[str]:
    """The ids of these profiles, in order."""
    return [r["id"] for r in items]


def test_create_returns_what_was_sent_with_equal_timestamps(leg: Leg) -> None:
    rp = create(leg)
    assert rp["id"].startswith("rp_")
    assert (rp["customer_id"], rp["profile_type"], rp["score"]) == ("cus_1", "moderate", 55)
    assert rp["details"] == DETAILS
    assert rp["created_at"] == rp["updated_at"] == START
    assert leg.client.risk_profiles.retrieve(rp["id"]) == rp


@pytest.mark.parametrize("score", [0, -3, 72.5, 9.2e18, 2**63 - 1])
def test_scores_are_kept_exactly(leg: Leg, score: int | float) -> None:
    rp = create(leg, score=score)
    stored = leg.client.risk_profiles.retrieve(rp["id"])["score"]
    assert stored == score
    assert type(stored) is type(score)


def test_any_profile_type_is_accepted(leg: Leg) -> None:
    assert create(leg, profile_type="ultra-cautious")["profile_type"] == "ultra-cautious"


@pytest.mark.parametrize(
    ("overrides", "param"),
    [
        ({"score": True}, "score"),
        ({"score": "55"}, "score"),
        ({"score": float("nan")}, "score"),
        ({"score": float("inf")}, "score"),
        ({"score": 2**64}, "score"),
        ({"score": None}, "score"),
        ({"details": [1, 2]}, "details"),
        ({"details": "{}"}, "details"),
        ({"details": None}, "details"),
        ({"customer_id": ""}, "customer_id"),
        ({"customer_id": 7}, "customer_id"),
        ({"profile_type": "  "}, "profile_type"),
        ({"risk": "high"}, "risk"),
    ],
)
def test_create_refuses_bad_values_naming_them(
    leg: Leg, overrides: dict[str, Any], param: str
) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        create(leg, **overrides)
    assert caught.value.param == param
    assert leg.client.risk_profiles.list()["data"] == []


@pytest.mark.parametrize("missing", [f.name for f in RISK_PROFILES.creatable() if f.required])
def test_every_field_is_required(leg: Leg, missing: str) -> None:
    params = {"customer_id": "cus_1", "profile_type": "moderate", "score": 1, "details": {}}
    del params[missing]
    with pytest.raises(InvalidRequestError) as caught:
        leg.client.risk_profiles.create(params)  # type: ignore[arg-type]
    assert caught.value.param == missing


def test_update_refreshes_updated_at_and_replaces_details_whole(leg: Leg) -> None:
    rp = create(leg)
    leg.clock.advance(90)
    changed = leg.client.risk_profiles.update(
        rp["id"], {"score": 80.5, "details": {"only": "this"}}
    )
    assert (changed["score"], changed["details"]) == (80.5, {"only": "this"})
    assert (changed["customer_id"], changed["profile_type"]) == ("cus_1", "moderate")
    assert changed["created_at"] == START
    assert changed["updated_at"] == START + 90
    assert leg.client.risk_profiles.retrieve(rp["id"]) == changed
    leg.clock.advance(10)
    retyped = leg.client.risk_profiles.update(rp["id"], {"profile_type": "aggressive"})
    assert (retyped["profile_type"], retyped["updated_at"]) == ("aggressive", START + 100)


def test_an_empty_update_changes_nothing_not_even_updated_at(leg: Leg) -> None:
    rp = create(leg)
    leg.clock.advance(90)
    assert leg.client.risk_profiles.update(rp["id"], {}) == rp


@pytest.mark.parametrize(
    ("params", "param"),
    [
        ({"customer_id": "cus_2"}, "customer_id"),
        ({"customer_id": "cus_2", "colour": "red"}, "customer_id"),
        ({"colour": "red"}, "colour"),
        ({"created_at": 5}, "created_at"),
        ({"score": False}, "score"),
        ({"details": ["a"]}, "details"),
        ({"profile_type": ""}, "profile_type"),
    ],
)
def test_update_refuses_bad_attributes_naming_them(
    leg: Leg, params: dict[str, Any], param: str
) -> None:
    rp = create(leg)
    leg.clock.advance(5)
    with pytest.raises(InvalidRequestError) as caught:
        leg.client.risk_profiles.update(rp["id"], params)  # type: ignore[arg-type]
    assert caught.value.param == param
    assert leg.client.risk_profiles.retrieve(rp["id"]) == rp


@pytest.fixture
def profiles(leg: Leg) -> dict[str, RiskProfile]:
    """Four profiles over two customers and two types, oldest first."""
    return {
        "a_mod": create(leg, customer_id="cus_a", profile_type="moderate"),
        "a_agg": create(leg, customer_id="cus_a", profile_type="aggressive"),
        "b_mod": create(leg, customer_id="cus_b", profile_type="moderate"),
        "b_con": create(leg, customer_id="cus_b", profile_type="conservative"),
    }


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({}, ["b_con", "b_mod", "a_agg", "a_mod"]),
        ({"customer_id": "cus_a"}, ["a_agg", "a_mod"]),
        ({"profile_type": "moderate"}, ["b_mod", "a_mod"]),
        ({"customer_id": "cus_b", "profile_type": "moderate"}, ["b_mod"]),
        ({"customer_id": "cus_a", "profile_type": "conservative"}, []),
        ({"customer_id": "cus_zzz"}, []),
    ],
)
def test_filters_select_and_combine_with_and(
    leg: Leg, profiles: dict[str, RiskProfile], filters: RiskProfileFilters, expected: list[str]
) -> None:
    assert ids(leg.client.risk_profiles.list(filters)["data"]) == [
        profiles[n]["id"] for n in expected
    ]


def test_filtered_paging_in_both_directions(leg: Leg, profiles: dict[str, RiskProfile]) -> None:
    first = leg.client.risk_profiles.list({"profile_type": "moderate"}, limit=1)
    assert (ids(first["data"]), first["has_more"]) == ([profiles["b_mod"]["id"]], True)
    second = leg.client.risk_profiles.list(
        {"profile_type": "moderate"}, limit=1, starting_after=first["data"][0]["id"]
    )
    assert (ids(second["data"]), second["has_more"]) == ([profiles["a_mod"]["id"]], False)
    back = leg.client.risk_profiles.list(
        {"profile_type": "moderate"}, limit=1, ending_before=second["data"][0]["id"]
    )
    assert (ids(back["data"]), back["has_more"]) == ([profiles["b_mod"]["id"]], False)


@pytest.mark.parametrize(
    ("filters", "param"),
    [({"muted": True}, "muted"), ({"customer_id": ""}, "customer_id"), ({"tier": "x"}, "tier")],
)
def test_bad_filters_are_refused_naming_them(leg: Leg, filters: dict[str, Any], param: str) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        leg.client.risk_profiles.list(filters)  # type: ignore[arg-type]
    assert caught.value.param == param


def test_a_conversation_cursor_is_refused(leg: Leg) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        leg.client.risk_profiles.list(starting_after="conv_123")
    assert caught.value.param == "starting_after"


def test_delete_then_not_found(leg: Leg, profiles: dict[str, RiskProfile]) -> None:
    gone = profiles["a_agg"]
    assert leg.client.risk_profiles.delete(gone["id"]) == {"id": gone["id"], "deleted": True}
    with pytest.raises(NotFoundError):
        leg.client.risk_profiles.retrieve(gone["id"])
    with pytest.raises(NotFoundError):
        leg.client.risk_profiles.update(gone["id"], {"score": 1})
    with pytest.raises(NotFoundError):
        leg.client.risk_profiles.delete(gone["id"])
    rest = leg.client.risk_profiles.list(starting_after=gone["id"])
    assert ids(rest["data"]) == [profiles["a_mod"]["id"]]


def test_unknown_ids_are_not_found(leg: Leg) -> None:
    missing = "rp_00000000000000000000000000"
    with pytest.raises(NotFoundError):
        leg.client.risk_profiles.retrieve(missing)
    with pytest.raises(NotFoundError):
        leg.client.risk_profiles.delete(missing)


@pytest.mark.parametrize("bad", ["conv_00000000000000000000000000", "x", "rp_1"])
def test_ids_that_cannot_be_risk_profile_ids_are_refused_naming_the_id(leg: Leg, bad: str) -> None:
    calls: tuple[Callable[[str], object], ...] = (
        leg.client.risk_profiles.retrieve,
        leg.client.risk_profiles.delete,
    )
    for call in calls:
        with pytest.raises(InvalidRequestError) as caught:
            call(bad)
        assert caught.value.param == "id" and "not a risk profile id" in caught.value.message


def test_a_repeated_idempotency_key_replays_without_a_duplicate(leg: Leg) -> None:
    params: Any = {"customer_id": "cus_1", "profile_type": "moderate", "score": 1, "details": {}}
    first = leg.client.risk_profiles.create(params, idempotency_key="rk")
    leg.clock.advance(60)
    assert leg.client.risk_profiles.create(params, idempotency_key="rk") == first
    with pytest.raises(InvalidRequestError) as caught:
        leg.client.risk_profiles.create(params | {"score": 2}, idempotency_key="rk")
    assert caught.value.param == "idempotency_key"
    assert ids(leg.client.risk_profiles.list()["data"]) == [first["id"]]


def test_an_idempotency_key_expires_after_24_hours(leg: Leg) -> None:
    params: Any = {"customer_id": "cus_1", "profile_type": "moderate", "score": 1, "details": {}}
    first = leg.client.risk_profiles.create(params, idempotency_key="old")
    leg.clock.advance(24 * 3600 + 1)
    second = leg.client.risk_profiles.create(params, idempotency_key="old")
    assert second["id"] != first["id"]
    assert len(leg.client.risk_profiles.list()["data"]) == 2
