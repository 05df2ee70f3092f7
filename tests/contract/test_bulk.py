"""create_many and backward iteration (the import's and `--ending-before`'s building blocks),
run on the local and the remote leg alike."""

from __future__ import annotations

from typing import Any

import pytest

from convrisk.api_client import ConvriskError, InvalidRequestError

from .conftest import Leg


def body(n: int, **overrides: Any) -> Any:
    """A risk profile's create body, numbered (overrides may make it invalid)."""
    return {
        "customer_id": f"cus_{n}",
        "profile_type": "moderate",
        "score": n,
        "details": {"n": n},
        **overrides,
    }


def test_create_many_gives_one_result_per_item_in_order(leg: Leg) -> None:
    items: list[tuple[Any, str | None]] = [(body(n), f"bulk-{n}") for n in range(30)]
    results = leg.client.risk_profiles.create_many(items)
    assert [r.record["customer_id"] for r in results if not isinstance(r, ConvriskError)] == [
        f"cus_{n}" for n in range(30)
    ]
    assert not any(r.replayed for r in results if not isinstance(r, ConvriskError))
    stored = list(leg.client.risk_profiles.iterate())
    assert sorted(r["customer_id"] for r in stored) == sorted(f"cus_{n}" for n in range(30))


def test_a_bad_item_fails_alone_and_the_others_are_created(leg: Leg) -> None:
    items: list[tuple[Any, str | None]] = [
        (body(1), "k-1"),
        (body(2, score="high"), "k-2"),
        (body(3, extra=1), "k-3"),
        (body(4), "k-4"),
    ]
    results = leg.client.risk_profiles.create_many(items)
    assert len(results) == 4
    assert not isinstance(results[0], ConvriskError) and not isinstance(results[3], ConvriskError)
    assert isinstance(results[1], InvalidRequestError) and results[1].param == "score"
    assert isinstance(results[2], InvalidRequestError) and results[2].param == "extra"
    assert {r["customer_id"] for r in leg.client.risk_profiles.iterate()} == {"cus_1", "cus_4"}


def test_stop_on_error_writes_nothing_after_the_first_error(leg: Leg) -> None:
    items: list[tuple[Any, str | None]] = [
        (body(1), None),
        (body(2, score=None), None),
        (body(3), None),
    ]
    results = leg.client.risk_profiles.create_many(items, stop_on_error=True)
    assert len(results) == 2 and isinstance(results[1], ConvriskError)
    assert [r["customer_id"] for r in leg.client.risk_profiles.iterate()] == ["cus_1"]


def test_create_many_again_with_the_same_keys_replays_and_creates_nothing(leg: Leg) -> None:
    items: list[tuple[Any, str | None]] = [(body(n), f"again-{n}") for n in range(12)]
    first = leg.client.risk_profiles.create_many(items)
    again = leg.client.risk_profiles.create_many(items)
    assert [(r.record, r.replayed) for r in again if not isinstance(r, ConvriskError)] == [
        (r.record, True) for r in first if not isinstance(r, ConvriskError)
    ]
    assert len(again) == 12 and not any(r.replayed for r in first if isinstance(r, tuple))
    assert len(list(leg.client.risk_profiles.iterate())) == 12


def test_a_key_already_used_for_another_body_fails_that_item_only(leg: Leg) -> None:
    leg.client.risk_profiles.create(body(1), idempotency_key="taken")
    results = leg.client.risk_profiles.create_many([(body(2), "taken"), (body(3), "free")])
    assert isinstance(results[0], InvalidRequestError)
    assert results[0].param == "idempotency_key"
    assert not isinstance(results[1], ConvriskError)
    assert results[1].record["customer_id"] == "cus_3" and not results[1].replayed


def test_the_same_key_twice_in_one_batch_creates_once(leg: Leg) -> None:
    results = leg.client.risk_profiles.create_many([(body(1), "twice"), (body(1), "twice")])
    first, second = results
    assert not isinstance(first, ConvriskError) and not isinstance(second, ConvriskError)
    assert first.record == second.record
    assert sorted([first.replayed, second.replayed]) == [False, True]  # created once, replayed once
    assert len(list(leg.client.risk_profiles.iterate())) == 1


def test_create_many_of_nothing_is_nothing(leg: Leg) -> None:
    assert leg.client.conversations.create_many([]) == []


def test_conversations_too(leg: Leg) -> None:
    results = leg.client.conversations.create_many(
        [({"contact_id": "ct_1"}, None), ({"group_id": "g", "contact_id": "c"}, None)]
    )
    assert not isinstance(results[0], ConvriskError) and results[0].record["contact_id"] == "ct_1"
    assert isinstance(results[1], InvalidRequestError)


@pytest.mark.parametrize("page_size", [1, 3, 100])
def test_iterating_backwards_walks_towards_the_newest_oldest_first(
    leg: Leg, page_size: int
) -> None:
    made = [leg.client.conversations.create({"contact_id": f"ct_{n}"})["id"] for n in range(8)]
    walked = [
        c["id"]
        for c in leg.client.conversations.iterate(ending_before=made[2], page_size=page_size)
    ]
    assert walked == made[3:]
    limited = leg.client.conversations.iter_pages(ending_before=made[2], limit=2, page_size=1)
    pages = list(limited)
    assert [c["id"] for p in pages for c in p["data"]] == made[3:5]
    assert pages[-1]["has_more"] is True


def test_both_cursors_at_once_are_refused(leg: Leg) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        list(leg.client.conversations.iterate(starting_after="conv_1", ending_before="conv_2"))
    assert caught.value.param == "ending_before"
