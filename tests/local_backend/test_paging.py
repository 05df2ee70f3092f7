"""Lists: newest first, keyset cursors both ways, filters with AND, and plans served by indexes."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from bench.fill import fill
from convrisk.api_client.record_types import Conversation
from convrisk.local_backend.backend import LocalBackend
from convrisk.local_backend.store.resource import TableResource

from .conftest import FakeClock, risk_body


def make_conversations(backend: LocalBackend, clock: FakeClock, n: int) -> list[Conversation]:
    """n conversations, one per second, returned oldest first."""
    made = []
    for index in range(n):
        made.append(backend.conversations.create({"contact_id": f"ct_{index}"}))
        clock.advance(1)
    return made


def ids_of(items: list[Conversation]) -> list[str]:
    """The ids, in the order given."""
    return [item["id"] for item in items]


def test_newest_first_with_the_default_limit_of_ten(
    backend: LocalBackend, clock: FakeClock
) -> None:
    made = make_conversations(backend, clock, 12)
    page = backend.conversations.list()
    assert ids_of(page["data"]) == ids_of(made[::-1][:10])
    assert page["has_more"] is True
    assert backend.conversations.list(limit=12)["has_more"] is False
    assert backend.conversations.list(limit=100)["data"] == made[::-1]


def test_ids_created_in_one_millisecond_still_keep_creation_order(
    backend: LocalBackend,
) -> None:
    # The clock does not move at all: the ids rely on the successor rule.
    made = [backend.conversations.create({"contact_id": f"ct_{i}"}) for i in range(30)]
    assert ids_of(made) == sorted(ids_of(made))
    assert len(set(ids_of(made))) == 30
    assert ids_of(backend.conversations.list(limit=30)["data"]) == ids_of(made[::-1])


def test_ids_keep_increasing_when_the_clock_goes_back(
    backend: LocalBackend, clock: FakeClock
) -> None:
    first = backend.conversations.create({"contact_id": "a"})
    clock.advance(-3600)
    second = backend.conversations.create({"contact_id": "b"})
    assert second["id"] > first["id"]


def test_ids_never_reuse_the_place_of_a_deleted_newest_object(backend: LocalBackend) -> None:
    made = [backend.conversations.create({"contact_id": f"ct_{i}"}) for i in range(3)]
    backend.conversations.delete(made[-1]["id"])
    again = backend.conversations.create({"contact_id": "new"})
    assert again["id"] > made[-1]["id"]


def test_starting_after_walks_every_item_once(backend: LocalBackend, clock: FakeClock) -> None:
    made = make_conversations(backend, clock, 25)
    seen: list[str] = []
    cursor = None
    while True:
        page = backend.conversations.list(limit=7, starting_after=cursor)
        seen += ids_of(page["data"])
        if not page["has_more"]:
            break
        cursor = page["data"][-1]["id"]
    assert seen == ids_of(made[::-1])


def test_a_deleted_cursor_still_pages_correctly(backend: LocalBackend, clock: FakeClock) -> None:
    made = make_conversations(backend, clock, 10)[::-1]  # newest first
    first = backend.conversations.list(limit=3)
    cursor = first["data"][-1]["id"]
    backend.conversations.delete(cursor)
    after = backend.conversations.list(limit=3, starting_after=cursor)
    assert ids_of(after["data"]) == ids_of(made[3:6])
    assert after["has_more"] is True
    before = backend.conversations.list(limit=5, ending_before=cursor)
    assert ids_of(before["data"]) == ids_of(made[:2])
    assert before["has_more"] is False


def test_ending_before_returns_the_items_just_before_newest_first(
    backend: LocalBackend, clock: FakeClock
) -> None:
    made = make_conversations(backend, clock, 10)[::-1]  # newest first: made[0] is newest
    page = backend.conversations.list(limit=3, ending_before=made[7]["id"])
    assert ids_of(page["data"]) == ids_of(made[4:7])
    assert page["has_more"] is True
    top = backend.conversations.list(limit=3, ending_before=made[3]["id"])
    assert ids_of(top["data"]) == ids_of(made[0:3])
    assert top["has_more"] is False
    assert backend.conversations.list(ending_before=made[0]["id"])["data"] == []


def test_paging_back_and_forth_returns_the_same_pages(
    backend: LocalBackend, clock: FakeClock
) -> None:
    make_conversations(backend, clock, 9)
    first = backend.conversations.list(limit=3)
    second = backend.conversations.list(limit=3, starting_after=first["data"][-1]["id"])
    back = backend.conversations.list(limit=3, ending_before=second["data"][0]["id"])
    assert back["data"] == first["data"]


def test_a_cursor_beyond_either_end_gives_an_empty_page(
    backend: LocalBackend, clock: FakeClock
) -> None:
    make_conversations(backend, clock, 3)
    assert backend.conversations.list(starting_after="conv_" + "0" * 26)["data"] == []
    page = backend.conversations.list(starting_after="conv_ZZZZZZZZZZZZZZZZZZZZZZZZZZ")
    assert len(page["data"]) == 3
    assert page["has_more"] is False


def test_boolean_filters_true_false_and_combined(backend: LocalBackend) -> None:
    convs = backend.conversations
    plain = convs.create({"contact_id": "ct_plain"})
    muted = convs.update(convs.create({"contact_id": "ct_m"})["id"], {"is_muted": True})
    pinned = convs.update(convs.create({"group_id": "grp_1"})["id"], {"is_pinned": True})
    archived = convs.update(convs.create({"group_id": "grp_1"})["id"], {"archived_at": 5})
    everything = convs.update(
        convs.create({"group_id": "grp_2"})["id"],
        {"is_muted": True, "is_pinned": True, "archived_at": 0},
    )

    def listed(**filters: object) -> set[str]:
        return {item["id"] for item in convs.list(filters, limit=100)["data"]}  # type: ignore[arg-type]

    assert listed(muted=True) == {muted["id"], everything["id"]}
    assert listed(muted=False) == {plain["id"], pinned["id"], archived["id"]}
    assert listed(pinned=True) == {pinned["id"], everything["id"]}
    assert listed(pinned=False) == {plain["id"], muted["id"], archived["id"]}
    # archived_at of 0 is still archived: the filter is about null, not truthiness.
    assert listed(archived=True) == {archived["id"], everything["id"]}
    assert listed(archived=False) == {plain["id"], muted["id"], pinned["id"]}
    assert listed(group_id="grp_1") == {pinned["id"], archived["id"]}
    assert listed(muted=True, pinned=True, archived=True) == {everything["id"]}
    assert listed(group_id="grp_1", archived=False) == {pinned["id"]}
    assert listed(muted=None, group_id=None) == listed()
    assert listed(group_id="grp_none") == set()


def test_filters_page_with_cursors(backend: LocalBackend, clock: FakeClock) -> None:
    made = make_conversations(backend, clock, 12)
    for conv in made[::2]:
        backend.conversations.update(conv["id"], {"is_muted": True})
    muted_newest_first = ids_of(made[::2][::-1])
    first = backend.conversations.list({"muted": True}, limit=4)
    assert ids_of(first["data"]) == muted_newest_first[:4]
    rest = backend.conversations.list(
        {"muted": True}, limit=4, starting_after=first["data"][-1]["id"]
    )
    assert ids_of(rest["data"]) == muted_newest_first[4:]
    assert rest["has_more"] is False


def test_risk_profile_filters(backend: LocalBackend) -> None:
    a = backend.risk_profiles.create(risk_body(customer_id="cus_a", profile_type="moderate"))
    b = backend.risk_profiles.create(risk_body(customer_id="cus_a", profile_type="aggressive"))
    c = backend.risk_profiles.create(risk_body(customer_id="cus_b", profile_type="moderate"))

    def listed(**filters: object) -> list[str]:
        page = backend.risk_profiles.list(filters, limit=100)  # type: ignore[arg-type]
        return [item["id"] for item in page["data"]]

    assert listed(customer_id="cus_a") == [b["id"], a["id"]]
    assert listed(profile_type="moderate") == [c["id"], a["id"]]
    assert listed(customer_id="cus_a", profile_type="moderate") == [a["id"]]
    assert listed() == [c["id"], b["id"], a["id"]]


FILTER_CASES = [
    ("conversations", {}),
    ("conversations", {"muted": True}),
    ("conversations", {"muted": False}),
    ("conversations", {"archived": True}),
    ("conversations", {"archived": False}),
    ("conversations", {"pinned": True}),
    ("conversations", {"pinned": False}),
    ("conversations", {"group_id": "grp_busy"}),
    ("conversations", {"contact_id": "ct_00000001"}),
    ("risk_profiles", {}),
    ("risk_profiles", {"customer_id": "cus_00000001"}),
    ("risk_profiles", {"profile_type": "moderate"}),
]


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A file with a few hundred rows of each resource."""
    path = tmp_path_factory.mktemp("plans") / "plans.db"
    store = LocalBackend(path)
    fill(store, "conversations", 300)
    fill(store, "risk_profiles", 300)
    store.close()
    return path


@pytest.mark.parametrize("paging", ["first", "starting_after", "ending_before"])
@pytest.mark.parametrize(("resource", "filters"), FILTER_CASES)
def test_each_filter_with_the_order_is_served_by_an_index(
    filled: Path, resource: str, filters: dict[str, object], paging: str
) -> None:
    store = LocalBackend(filled)
    target: TableResource[Any, Any, Any, Any] = store.risk_profiles
    if resource == "conversations":
        target = store.conversations
    middle = target.list(limit=100)["data"][-1]["id"]
    cursor = {} if paging == "first" else {paging: middle}
    sql, args = target.list_sql(filters, limit=10, **cursor)
    store.close()

    conn = sqlite3.connect(filled)
    plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, args)]
    conn.close()
    assert len(plan) == 1, plan
    (step,) = plan
    assert "TEMP B-TREE" not in step
    assert "USING INDEX" in step or "USING COVERING INDEX" in step, step
    if filters or paging != "first":
        # A seek into the index, not a walk over the table.
        assert step.startswith("SEARCH "), step
