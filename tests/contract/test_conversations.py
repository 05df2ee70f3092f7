"""The conversations contract (DESIGN section 1), run on the local and the remote leg alike."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from convrisk.api_client import InvalidRequestError, NotFoundError
from convrisk.api_client.record_types import Conversation, ConversationFilters
from tests import described

from .conftest import START, Leg


def create(leg: Leg, **params: Any) -> Conversation:
    """Create a conversation (with a contact unless told)."""
    return leg.client.conversations.create(params or {"contact_id": "ct_1"})  # type: ignore[arg-type]


def ids(page: list[Conversation]) -> list[str]:
    """The ids of these conversations, in order."""
    return [c["id"] for c in page]


# -- create -----------------------------------------------------------------------------------


def test_create_with_a_contact_has_the_documented_defaults(leg: Leg) -> None:
    conv = create(leg, contact_id="ct_ana")
    assert conv["id"].startswith("conv_")
    documented = described.conversation(conv["id"], START, contact_id="ct_ana")
    assert conv == documented
    assert list(map(type, conv.values())) == list(map(type, documented.values()))  # false, not 0
    assert leg.client.conversations.retrieve(conv["id"]) == conv


def test_create_with_a_group(leg: Leg) -> None:
    conv = create(leg, group_id="grp_7")
    assert (conv["contact_id"], conv["group_id"]) == (None, "grp_7")


@pytest.mark.parametrize(
    ("params", "param"),
    [
        ({"contact_id": "ct_1", "group_id": "grp_1"}, "group_id"),
        ({}, "contact_id"),
        ({"contact_id": "", "group_id": ""}, "contact_id"),
        ({"contact_id": None}, "contact_id"),
        ({"contact_id": 42}, "contact_id"),
        ({"contact_id": "ct_1", "is_muted": True}, "is_muted"),
        ({"contact_id": "ct_\ud800"}, "contact_id"),
    ],
)
def test_create_needs_exactly_one_party(leg: Leg, params: dict[str, Any], param: str) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        leg.client.conversations.create(params)  # type: ignore[arg-type]
    assert caught.value.param == param
    assert leg.client.conversations.list()["data"] == []


def test_an_empty_string_party_counts_as_absent(leg: Leg) -> None:
    conv = create(leg, contact_id="ct_1", group_id="")
    assert (conv["contact_id"], conv["group_id"]) == ("ct_1", None)


def test_unicode_values_round_trip(leg: Leg) -> None:
    conv = create(leg, group_id="grüppe ✓ 🎉")
    assert leg.client.conversations.retrieve(conv["id"])["group_id"] == "grüppe ✓ 🎉"


# -- update -----------------------------------------------------------------------------------


def test_update_changes_only_the_supplied_attributes(leg: Leg) -> None:
    conv = create(leg)
    muted = leg.client.conversations.update(conv["id"], {"is_muted": True})
    assert muted["is_muted"] is True
    assert {**muted, "is_muted": False} == conv
    pinned = leg.client.conversations.update(
        conv["id"], {"is_pinned": True, "pinned_message_id": "msg_9"}
    )
    assert (pinned["is_pinned"], pinned["is_muted"], pinned["pinned_message_id"]) == (
        True,
        True,
        "msg_9",
    )
    assert leg.client.conversations.retrieve(conv["id"]) == pinned


def test_null_unpins_the_message_and_unarchives(leg: Leg) -> None:
    conv = create(leg)
    leg.client.conversations.update(
        conv["id"], {"pinned_message_id": "msg_1", "archived_at": START + 60}
    )
    archived = leg.client.conversations.retrieve(conv["id"])
    assert (archived["pinned_message_id"], archived["archived_at"]) == ("msg_1", START + 60)
    cleared = leg.client.conversations.update(
        conv["id"], {"pinned_message_id": None, "archived_at": None}
    )
    assert (cleared["pinned_message_id"], cleared["archived_at"]) == (None, None)
    assert leg.client.conversations.retrieve(conv["id"]) == cleared


def test_flags_can_be_turned_off_again(leg: Leg) -> None:
    conv = create(leg)
    leg.client.conversations.update(conv["id"], {"is_pinned": True, "is_muted": True})
    back = leg.client.conversations.update(conv["id"], {"is_pinned": False, "is_muted": False})
    assert (back["is_pinned"], back["is_muted"]) == (False, False)


def test_an_empty_update_returns_the_object_unchanged(leg: Leg) -> None:
    conv = create(leg)
    assert leg.client.conversations.update(conv["id"], {}) == conv


@pytest.mark.parametrize(
    ("params", "param"),
    [
        ({"colour": "red"}, "colour"),
        ({"contact_id": "ct_2"}, "contact_id"),
        ({"created_at": 1}, "created_at"),
        ({"is_muted": "yes"}, "is_muted"),
        ({"is_pinned": 1}, "is_pinned"),
        ({"archived_at": "now"}, "archived_at"),
        ({"archived_at": True}, "archived_at"),
        ({"archived_at": -5}, "archived_at"),
        ({"archived_at": 2**70}, "archived_at"),
        ({"pinned_message_id": ""}, "pinned_message_id"),
        ({"pinned_message_id": 7}, "pinned_message_id"),
    ],
)
def test_update_refuses_bad_attributes_naming_them(
    leg: Leg, params: dict[str, Any], param: str
) -> None:
    conv = create(leg)
    with pytest.raises(InvalidRequestError) as caught:
        leg.client.conversations.update(conv["id"], params)  # type: ignore[arg-type]
    assert caught.value.param == param
    assert leg.client.conversations.retrieve(conv["id"]) == conv


# -- list, filters, paging --------------------------------------------------------------------


def test_list_is_newest_first(leg: Leg) -> None:
    made = []
    for n in range(5):
        made.append(create(leg, contact_id=f"ct_{n}"))
        leg.clock.advance(1)
    page = leg.client.conversations.list()
    assert ids(page["data"]) == ids(made[::-1])
    assert page["has_more"] is False


def test_ids_sort_by_creation_even_within_one_second(leg: Leg) -> None:
    made = [create(leg, contact_id=f"ct_{n}") for n in range(6)]
    assert ids(leg.client.conversations.list()["data"]) == ids(made[::-1])


def test_default_page_is_ten_and_limit_bounds(leg: Leg) -> None:
    for n in range(12):
        create(leg, contact_id=f"ct_{n}")
    page = leg.client.conversations.list()
    assert (len(page["data"]), page["has_more"]) == (10, True)
    assert len(leg.client.conversations.list(limit=1)["data"]) == 1
    everything = leg.client.conversations.list(limit=100)
    assert (len(everything["data"]), everything["has_more"]) == (12, False)
    exact = leg.client.conversations.list(limit=12)
    assert (len(exact["data"]), exact["has_more"]) == (12, False)


@pytest.mark.parametrize("limit", [0, -1, 101, 1000])
def test_limit_out_of_range_is_refused(leg: Leg, limit: int) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        leg.client.conversations.list(limit=limit)
    assert caught.value.param == "limit"


@pytest.fixture
def mixed(leg: Leg) -> dict[str, Conversation]:
    """Four conversations, one per combination of muted and archived, plus a pinned group one."""
    convs = {
        "plain": create(leg, contact_id="ct_plain"),
        "muted": create(leg, contact_id="ct_muted"),
        "archived": create(leg, contact_id="ct_archived"),
        "muted_archived": create(leg, contact_id="ct_both"),
        "pinned_group": create(leg, group_id="grp_1"),
    }
    client = leg.client.conversations
    client.update(convs["muted"]["id"], {"is_muted": True})
    client.update(convs["archived"]["id"], {"archived_at": START})
    client.update(convs["muted_archived"]["id"], {"is_muted": True, "archived_at": START})
    client.update(convs["pinned_group"]["id"], {"is_pinned": True})
    return convs


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"muted": True}, ["muted_archived", "muted"]),
        ({"muted": False}, ["pinned_group", "archived", "plain"]),
        ({"archived": True}, ["muted_archived", "archived"]),
        ({"archived": False}, ["pinned_group", "muted", "plain"]),
        ({"pinned": True}, ["pinned_group"]),
        ({"pinned": False}, ["muted_archived", "archived", "muted", "plain"]),
        ({"group_id": "grp_1"}, ["pinned_group"]),
        ({"group_id": "grp_none"}, []),
        ({"muted": True, "archived": False}, ["muted"]),
        ({"muted": False, "archived": False, "pinned": False}, ["plain"]),
        ({"muted": False, "group_id": "grp_1", "pinned": True}, ["pinned_group"]),
        (
            {"muted": None, "archived": None},
            ["pinned_group", "muted_archived", "archived", "muted", "plain"],
        ),
    ],
)
def test_filters_select_and_combine_with_and(
    leg: Leg, mixed: dict[str, Conversation], filters: ConversationFilters, expected: list[str]
) -> None:
    page = leg.client.conversations.list(filters)
    assert ids(page["data"]) == [mixed[name]["id"] for name in expected]


@pytest.mark.parametrize(
    ("filters", "param"),
    [
        ({"muted": "yes"}, "muted"),
        ({"pinned": 1}, "pinned"),
        ({"colour": "red"}, "colour"),
        ({"group_id": ""}, "group_id"),
        ({"customer_id": "cus_1"}, "customer_id"),
    ],
)
def test_bad_filters_are_refused_naming_them(leg: Leg, filters: dict[str, Any], param: str) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        leg.client.conversations.list(filters)  # type: ignore[arg-type]
    assert caught.value.param == param


def test_paging_forward_and_backward_visits_every_item_once(leg: Leg) -> None:
    made = [create(leg, contact_id=f"ct_{n}") for n in range(7)]
    newest_first = ids(made[::-1])
    seen: list[str] = []
    cursor = None
    pages = []
    while True:
        page = leg.client.conversations.list(limit=3, starting_after=cursor)
        pages.append((ids(page["data"]), page["has_more"]))
        seen += ids(page["data"])
        if not page["has_more"]:
            break
        cursor = page["data"][-1]["id"]
    assert seen == newest_first
    assert [has_more for _, has_more in pages] == [True, True, False]
    # Backwards from the oldest: the items before it in list order, nearest last.
    back = leg.client.conversations.list(limit=3, ending_before=newest_first[-1])
    assert (ids(back["data"]), back["has_more"]) == (newest_first[3:6], True)
    first = leg.client.conversations.list(limit=3, ending_before=newest_first[3])
    assert (ids(first["data"]), first["has_more"]) == (newest_first[0:3], False)


def test_a_deleted_cursor_still_pages(leg: Leg) -> None:
    made = [create(leg, contact_id=f"ct_{n}") for n in range(5)]
    newest_first = ids(made[::-1])
    leg.client.conversations.delete(newest_first[2])
    after = leg.client.conversations.list(starting_after=newest_first[2])
    assert ids(after["data"]) == newest_first[3:]
    before = leg.client.conversations.list(ending_before=newest_first[2])
    assert ids(before["data"]) == newest_first[:2]


def test_a_cursor_past_the_end_gives_an_empty_last_page(leg: Leg) -> None:
    made = [create(leg, contact_id=f"ct_{n}") for n in range(2)]
    page = leg.client.conversations.list(starting_after=made[0]["id"])
    assert (page["data"], page["has_more"]) == ([], False)


def test_paging_with_a_filter_keeps_the_filter(leg: Leg, mixed: dict[str, Conversation]) -> None:
    first = leg.client.conversations.list({"muted": False}, limit=2)
    rest = leg.client.conversations.list(
        {"muted": False}, limit=2, starting_after=first["data"][-1]["id"]
    )
    assert ids(first["data"]) + ids(rest["data"]) == [
        mixed[n]["id"] for n in ("pinned_group", "archived", "plain")
    ]
    assert (first["has_more"], rest["has_more"]) == (True, False)


@pytest.mark.parametrize(
    ("cursors", "param"),
    [
        ({"starting_after": "rp_123"}, "starting_after"),
        ({"ending_before": ""}, "ending_before"),
        ({"starting_after": "conv_1", "ending_before": "conv_2"}, "ending_before"),
    ],
)
def test_bad_cursors_are_refused_naming_them(leg: Leg, cursors: dict[str, str], param: str) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        leg.client.conversations.list(**cursors)  # type: ignore[arg-type]
    assert caught.value.param == param


def test_iterate_walks_every_page(leg: Leg) -> None:
    made = [create(leg, contact_id=f"ct_{n}") for n in range(8)]
    walked = list(leg.client.conversations.iterate(page_size=3))
    assert ids(walked) == ids(made[::-1])
    assert ids(list(leg.client.conversations.iterate(limit=5, page_size=2))) == ids(made[::-1])[:5]


# -- delete and not found ---------------------------------------------------------------------


def test_delete_then_everything_is_not_found(leg: Leg) -> None:
    conv = create(leg)
    other = create(leg, contact_id="ct_other")
    deleted = leg.client.conversations.delete(conv["id"])
    assert (deleted["id"], deleted["deleted"]) == (conv["id"], True)
    calls: tuple[Callable[[], object], ...] = (
        lambda: leg.client.conversations.retrieve(conv["id"]),
        lambda: leg.client.conversations.update(conv["id"], {"is_muted": True}),
        lambda: leg.client.conversations.delete(conv["id"]),
    )
    for call in calls:
        with pytest.raises(NotFoundError):
            call()
    assert ids(leg.client.conversations.list()["data"]) == [other["id"]]


@pytest.mark.parametrize(
    "missing", ["conv_00000000000000000000000000", "conv_ZZZZZZZZZZZZZZZZZZZZZZZZZZ"]
)
def test_unknown_ids_are_not_found(leg: Leg, missing: str) -> None:
    with pytest.raises(NotFoundError):
        leg.client.conversations.retrieve(missing)
    with pytest.raises(NotFoundError):
        leg.client.conversations.update(missing, {})
    with pytest.raises(NotFoundError):
        leg.client.conversations.delete(missing)


@pytest.mark.parametrize(
    "bad", ["rp_00000000000000000000000000", "nope", "conv_", "conv_01M8", "conv_" + "u" * 26]
)
def test_ids_that_cannot_be_conversation_ids_are_refused_naming_the_id(leg: Leg, bad: str) -> None:
    calls: tuple[Callable[[], object], ...] = (
        lambda: leg.client.conversations.retrieve(bad),
        lambda: leg.client.conversations.update(bad, {}),
        lambda: leg.client.conversations.delete(bad),
        lambda: leg.client.conversations.list(starting_after=bad),
    )
    for call in calls:
        with pytest.raises(InvalidRequestError) as caught:
            call()
        assert caught.value.param in ("id", "starting_after")
        assert "not a conversation id" in caught.value.message


@pytest.mark.parametrize("empty", ["", " "])
def test_an_empty_id_is_refused_naming_the_id_on_both_backends(leg: Leg, empty: str) -> None:
    calls: tuple[Callable[[], object], ...] = (
        lambda: leg.client.conversations.retrieve(empty),
        lambda: leg.client.conversations.update(empty, {}),
        lambda: leg.client.conversations.delete(empty),
    )
    for call in calls:
        with pytest.raises(InvalidRequestError) as caught:
            call()
        assert caught.value.param == "id"


# -- idempotency ------------------------------------------------------------------------------


def test_a_repeated_idempotency_key_replays_without_a_duplicate(leg: Leg) -> None:
    first = leg.client.conversations.create({"contact_id": "ct_1"}, idempotency_key="k-1")
    leg.clock.advance(30)
    again = leg.client.conversations.create({"contact_id": "ct_1"}, idempotency_key="k-1")
    assert again == first
    assert ids(leg.client.conversations.list()["data"]) == [first["id"]]
    with pytest.raises(InvalidRequestError) as caught:
        leg.client.conversations.create({"group_id": "grp_1"}, idempotency_key="k-1")
    assert caught.value.param == "idempotency_key"
    assert ids(leg.client.conversations.list()["data"]) == [first["id"]]
