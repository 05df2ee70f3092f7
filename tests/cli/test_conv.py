"""`convrisk conv`: every verb and flag against the local backend on a temporary database."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from tests.cli.conftest import Invoke

Make = Callable[[int], list[str]]


def test_create_with_a_contact_returns_a_fresh_conversation(invoke: Invoke) -> None:
    conv = invoke("conv", "create", "--contact-id", "c_1", "-o", "json").ok().json()
    assert conv["id"].startswith("conv_")
    assert conv["contact_id"] == "c_1"
    assert conv["group_id"] is None
    assert conv["is_pinned"] is False and conv["is_muted"] is False
    assert conv["pinned_message_id"] is None and conv["archived_at"] is None
    assert conv["last_active_at"] is None and conv["last_opened_at"] is None
    assert abs(conv["created_at"] - time.time()) < 3600


def test_create_with_a_group_prints_only_the_id_with_o_id(invoke: Invoke) -> None:
    new_id = invoke("conv", "create", "--group-id", "g_1", "-o", "id").ok().stdout.strip()
    shown = invoke("conv", "get", new_id, "-o", "json").ok().json()
    assert shown["group_id"] == "g_1" and shown["contact_id"] is None


def test_create_needs_exactly_one_party_and_creates_nothing_otherwise(invoke: Invoke) -> None:
    neither = invoke("conv", "create")
    both = invoke("conv", "create", "--contact-id", "c_1", "--group-id", "g_1")
    empty = invoke("conv", "create", "--contact-id", "")
    for result in (neither, both, empty):
        assert result.code == 2
        assert result.stdout == ""
        assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1
    assert "not both" in both.stderr
    assert invoke("conv", "list", "-o", "json").ok().json() == []


def test_list_shows_ten_newest_by_default_and_hints_at_more_on_stderr(
    invoke: Invoke, conversations: Make
) -> None:
    ids = conversations(12)
    result = invoke("conv", "list", "-o", "id").ok()
    assert result.lines() == ids[:10]
    assert "--all" in result.stderr and ids[9] in result.stderr


def test_list_limit_is_the_total_across_pages(
    invoke: Invoke, conversations: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = conversations(7)
    assert invoke("conv", "list", "--limit", "5", "-o", "id").ok().lines() == ids[:5]
    # page_size 2 makes the client fetch three pages for five items.
    monkeypatch.setenv("CONVRISK_PAGE_SIZE", "2")
    paged = invoke("conv", "list", "--limit", "5", "-o", "jsonl").ok()
    assert [c["id"] for c in paged.jsonl()] == ids[:5]


def test_list_all_shows_everything_without_a_hint(invoke: Invoke, conversations: Make) -> None:
    ids = conversations(13)
    result = invoke("conv", "list", "--all", "-o", "id").ok()
    assert result.lines() == ids
    assert result.stderr == ""


def test_list_exactly_the_limit_gives_no_hint(invoke: Invoke, conversations: Make) -> None:
    conversations(3)
    result = invoke("conv", "list", "--limit", "3", "-o", "id").ok()
    assert len(result.lines()) == 3 and result.stderr == ""


def test_list_starting_after_continues_from_a_cursor(invoke: Invoke, conversations: Make) -> None:
    ids = conversations(5)
    result = invoke("conv", "list", "--starting-after", ids[1], "-o", "id").ok()
    assert result.lines() == ids[2:]


def test_list_filters_combine_with_and(invoke: Invoke, conversations: Make) -> None:
    a, b, c = conversations(3)
    invoke("conv", "update", a, "--mute", "--pin").ok()
    invoke("conv", "update", b, "--mute", "--archive").ok()
    group = invoke("conv", "create", "--group-id", "g_9", "-o", "id").ok().stdout.strip()

    def listed(*flags: str) -> set[str]:
        return set(invoke("conv", "list", *flags, "-o", "id").ok().lines())

    assert listed("--muted") == {a, b}
    assert listed("--not-muted") == {c, group}
    assert listed("--archived") == {b}
    assert listed("--not-archived") == {a, c, group}
    assert listed("--pinned") == {a}
    assert listed("--not-pinned") == {b, c, group}
    assert listed("--muted", "--not-archived") == {a}
    assert listed("--group-id", "g_9") == {group}
    assert listed("--muted", "--group-id", "g_9") == set()


def test_get_one_id_is_an_object_and_several_an_array(invoke: Invoke, conversations: Make) -> None:
    a, b = conversations(2)
    one = invoke("conv", "get", a, "-o", "json").ok().json()
    assert one["id"] == a
    several = invoke("conv", "get", a, b, "-o", "json").ok().json()
    assert [c["id"] for c in several] == [a, b]


def test_update_pins_mutes_and_pins_a_message(invoke: Invoke, conversations: Make) -> None:
    (a,) = conversations(1)
    conv = invoke(
        "conv", "update", a, "--pin", "--mute", "--pinned-message-id", "m_1", "-o", "json"
    )
    changed = conv.ok().json()
    assert changed["is_pinned"] is True and changed["is_muted"] is True
    assert changed["pinned_message_id"] == "m_1"
    undone = invoke(
        "conv", "update", a, "--unpin", "--unmute", "--clear-pinned-message", "-o", "json"
    ).ok()
    back = undone.json()
    assert back["is_pinned"] is False and back["is_muted"] is False
    assert back["pinned_message_id"] is None


def test_archive_sets_now_and_unarchive_clears(invoke: Invoke, conversations: Make) -> None:
    (a,) = conversations(1)
    before = int(time.time())
    archived = invoke("conv", "update", a, "--archive", "-o", "json").ok().json()
    assert before <= archived["archived_at"] <= int(time.time()) + 1
    cleared = invoke("conv", "update", a, "--unarchive", "-o", "json").ok().json()
    assert cleared["archived_at"] is None


def test_archived_at_accepts_iso_unix_seconds_and_now(invoke: Invoke, conversations: Make) -> None:
    (a,) = conversations(1)
    expected = int(datetime(2024, 5, 1, 12, 0, tzinfo=UTC).timestamp())
    cases = {
        "2024-05-01T12:00:00Z": expected,
        "2024-05-01T14:00:00+02:00": expected,
        "2024-05-01T12:00:00": expected,  # no zone: UTC
        "2024-05-01 12:00": expected,
        str(expected): expected,
    }
    for text, seconds in cases.items():
        result = invoke("conv", "update", a, "--archived-at", text, "-o", "json").ok()
        assert result.json()["archived_at"] == seconds, text
    now = invoke("conv", "update", a, "--archived-at", "now", "-o", "json").ok().json()
    assert abs(now["archived_at"] - time.time()) < 5


def test_update_input_problems_exit_2_and_change_nothing(
    invoke: Invoke, conversations: Make
) -> None:
    (a,) = conversations(1)
    before = invoke("conv", "get", a, "-o", "json").ok().json()
    problems = {
        (): "Nothing to change",
        ("--archived-at", "yesterday"): "--archived-at",
        ("--archived-at", "-5"): "--archived-at",
        ("--archived-at", "2024-13-01"): "--archived-at",
        ("--unarchive", "--archived-at", "now"): "not --unarchive and --archived-at",
        ("--archive", "--archived-at", "now"): "not --archive and --archived-at",
        ("--pinned-message-id", "m", "--clear-pinned-message"): "not both",
        ("--pinned-message-id", ""): "--pinned-message-id",
    }
    for flags, named in problems.items():
        result = invoke("conv", "update", a, *flags)
        assert result.code == 2, flags
        assert named in result.stderr and result.stderr.count("\n") == 1, result.stderr
    assert invoke("conv", "get", a, "-o", "json").ok().json() == before


def test_delete_with_yes_removes_for_good(invoke: Invoke, conversations: Make) -> None:
    a, b = conversations(2)
    result = invoke("conv", "delete", a, "--yes", "-o", "json").ok()
    assert result.json() == {"id": a, "deleted": True}
    assert invoke("conv", "get", a).code == 3
    assert invoke("conv", "list", "-o", "id").ok().lines() == [b]


def test_list_limit_must_be_positive_and_not_with_all(invoke: Invoke) -> None:
    for flags in (("--limit", "0"), ("--limit", "-3"), ("--limit", "x"), ("--limit", "2", "--all")):
        result = invoke("conv", "list", *flags)
        assert result.code == 2, flags
        assert result.stderr.startswith("Error: ") and "--limit" in result.stderr
        assert result.stdout == ""
