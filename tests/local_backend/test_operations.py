"""The ten operations on a real SQLite file: what a user of the local backend sees."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any, cast

import pytest

from convrisk.api_client.errors import ConvriskError, InvalidRequestError, NotFoundError
from convrisk.api_client.protocol import Backend
from convrisk.api_client.records import Deleted, json_text
from convrisk.api_client.resources import CONVERSATIONS, RISK_PROFILES
from convrisk.local_backend.backend import LocalBackend
from convrisk.local_backend.store import ids

from .conftest import START, FakeClock, rebuild_conversations, risk_body

ID_BODY = r"[0-9A-HJKMNP-TV-Z]{26}"


def test_it_is_a_backend(backend: LocalBackend) -> None:
    typed: Backend = backend
    assert typed.conversations is backend.conversations
    assert typed.risk_profiles is backend.risk_profiles


def test_nothing_touches_the_disk_before_the_first_operation(db_path: Path) -> None:
    store = LocalBackend(db_path)
    assert not db_path.parent.exists()
    assert store.conversations.list()["data"] == []
    assert db_path.is_file()
    store.close()


def test_create_conversation_starts_with_the_service_defaults(backend: LocalBackend) -> None:
    conv = backend.conversations.create({"contact_id": "ct_1"})
    assert re.fullmatch(rf"conv_{ID_BODY}", conv["id"])
    # Each field the create does not set at its default (a boolean false, the others null).
    defaults = {field.name: field.default for field in CONVERSATIONS.fields}
    assert conv == defaults | {"id": conv["id"], "contact_id": "ct_1", "created_at": int(START)}
    assert isinstance(conv["created_at"], int)
    assert backend.conversations.retrieve(conv["id"]) == conv


def test_create_group_conversation_and_empty_contact_counts_as_absent(
    backend: LocalBackend,
) -> None:
    conv = backend.conversations.create({"contact_id": "", "group_id": "grp_1"})
    assert (conv["contact_id"], conv["group_id"]) == (None, "grp_1")


def test_timestamps_are_integer_seconds_of_the_clock(db_path: Path) -> None:
    store = LocalBackend(db_path, clock=lambda: 1_700_000_123.987)
    conv = store.conversations.create({"group_id": "g"})
    profile = store.risk_profiles.create(risk_body())
    store.close()
    assert conv["created_at"] == 1_700_000_123
    assert profile["created_at"] == profile["updated_at"] == 1_700_000_123
    # The id's time part is the same moment, in milliseconds.
    assert ids.time_of(ids.parse("conv_", conv["id"]) or 0) == 1_700_000_123_987


def test_update_conversation_changes_only_what_is_given(
    backend: LocalBackend, clock: FakeClock
) -> None:
    conv = backend.conversations.create({"contact_id": "ct_1"})
    clock.advance(60)
    pinned = backend.conversations.update(
        conv["id"], {"is_pinned": True, "pinned_message_id": "msg_1"}
    )
    assert (pinned["is_pinned"], pinned["pinned_message_id"], pinned["is_muted"]) == (
        True,
        "msg_1",
        False,
    )
    muted = backend.conversations.update(conv["id"], {"is_muted": True})
    assert (muted["is_pinned"], muted["pinned_message_id"], muted["is_muted"]) == (
        True,
        "msg_1",
        True,
    )
    assert muted["created_at"] == conv["created_at"]
    assert backend.conversations.retrieve(conv["id"]) == muted


def test_archived_at_is_stored_as_given_and_null_unarchives(backend: LocalBackend) -> None:
    conv = backend.conversations.create({"contact_id": "ct_1"})
    archived = backend.conversations.update(conv["id"], {"archived_at": 1_700_000_500})
    assert archived["archived_at"] == 1_700_000_500
    assert isinstance(archived["archived_at"], int)
    as_float = backend.conversations.update(conv["id"], {"archived_at": 1_700_000_500.25})
    assert backend.conversations.retrieve(conv["id"])["archived_at"] == 1_700_000_500.25
    assert as_float["archived_at"] == 1_700_000_500.25
    unarchived = backend.conversations.update(conv["id"], {"archived_at": None})
    assert unarchived["archived_at"] is None


def test_null_pinned_message_unpins_it(backend: LocalBackend) -> None:
    conv = backend.conversations.create({"contact_id": "ct_1"})
    backend.conversations.update(conv["id"], {"pinned_message_id": "msg_9"})
    cleared = backend.conversations.update(conv["id"], {"pinned_message_id": None})
    assert cleared["pinned_message_id"] is None


def test_empty_update_returns_the_object_unchanged(backend: LocalBackend, clock: FakeClock) -> None:
    profile = backend.risk_profiles.create(risk_body())
    clock.advance(100)
    assert backend.risk_profiles.update(profile["id"], {}) == profile
    conv = backend.conversations.create({"contact_id": "ct_1"})
    assert backend.conversations.update(conv["id"], {}) == conv


@pytest.mark.parametrize("score", [72, 72.5, 0, -3, 9.2e18, 2**63 - 1, -(2**63 - 1)])
def test_score_comes_back_exactly_as_given(backend: LocalBackend, score: float) -> None:
    profile = backend.risk_profiles.create(risk_body(score=score))
    for seen in (profile, backend.risk_profiles.retrieve(profile["id"])):
        assert seen["score"] == score
        assert type(seen["score"]) is type(score)
        assert seen["score"] == score


@pytest.mark.parametrize("score", [1e300, 1.7976931348623157e308, 2**63, -(2**63), -9.3e18])
def test_a_score_beyond_64_bit_integers_is_refused_float_or_not(
    backend: LocalBackend, score: float
) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        backend.risk_profiles.create(risk_body(score=score))
    assert caught.value.param == "score"
    assert str(2**63 - 1) in caught.value.message
    assert backend.risk_profiles.list()["data"] == []


def test_score_72_point_0_stays_a_float(backend: LocalBackend) -> None:
    profile = backend.risk_profiles.create(risk_body(score=72.0))
    assert type(backend.risk_profiles.retrieve(profile["id"])["score"]) is float


def test_details_round_trip_and_are_stored_as_json_text(
    backend: LocalBackend, db_path: Path
) -> None:
    details = {"nested": {"list": [1, 2.5, None, True, "é"]}, "empty": {}}
    profile = backend.risk_profiles.create(risk_body(details=details))
    assert backend.risk_profiles.retrieve(profile["id"])["details"] == details
    conn = sqlite3.connect(db_path)
    (kind, text) = conn.execute(
        "SELECT typeof(details), details FROM risk_profiles WHERE id = ?", (profile["id"],)
    ).fetchone()
    conn.close()
    assert kind == "text"
    assert text == '{"nested":{"list":[1,2.5,null,true,"é"]},"empty":{}}'


def test_update_risk_profile_refreshes_updated_at_and_replaces_details(
    backend: LocalBackend, clock: FakeClock
) -> None:
    profile = backend.risk_profiles.create(risk_body(details={"a": 1, "b": 2}))
    clock.advance(3600)
    updated = backend.risk_profiles.update(
        profile["id"], {"score": 80.5, "details": {"c": 3}, "profile_type": "aggressive"}
    )
    assert updated["created_at"] == profile["created_at"]
    assert updated["updated_at"] == profile["created_at"] + 3600
    assert (updated["score"], updated["details"], updated["profile_type"]) == (
        80.5,
        {"c": 3},
        "aggressive",
    )
    assert updated["customer_id"] == profile["customer_id"]
    assert backend.risk_profiles.retrieve(profile["id"]) == updated


def test_any_profile_type_is_accepted(backend: LocalBackend) -> None:
    assert (
        backend.risk_profiles.create(risk_body(profile_type="custom"))["profile_type"] == "custom"
    )


def test_delete_removes_the_object_for_good(backend: LocalBackend) -> None:
    conv = backend.conversations.create({"contact_id": "ct_1"})
    profile = backend.risk_profiles.create(risk_body())
    assert backend.conversations.delete(conv["id"]) == Deleted(id=conv["id"], deleted=True)
    assert backend.risk_profiles.delete(profile["id"]) == {
        "id": profile["id"],
        "deleted": True,
    }
    with pytest.raises(NotFoundError, match=f"No such conversation: {conv['id']}"):
        backend.conversations.retrieve(conv["id"])
    with pytest.raises(NotFoundError, match=f"No such risk profile: {profile['id']}"):
        backend.risk_profiles.retrieve(profile["id"])
    assert backend.conversations.list()["data"] == []


@pytest.mark.parametrize("operation", ["retrieve", "update", "delete"])
@pytest.mark.parametrize(
    "missing", ["conv_01HZZZZZZZZZZZZZZZZZZZZZZZ", "conv_00000000000000000000000000"]
)
def test_missing_conversation_is_not_found_naming_the_id(
    backend: LocalBackend, operation: str, missing: str
) -> None:
    backend.conversations.create({"contact_id": "ct_1"})
    with pytest.raises(NotFoundError) as caught:
        if operation == "retrieve":
            backend.conversations.retrieve(missing)
        elif operation == "update":
            backend.conversations.update(missing, {"is_muted": True})
        else:
            backend.conversations.delete(missing)
    assert caught.value.message == f"No such conversation: {missing}"
    assert caught.value.status == 404


def test_missing_risk_profile_is_not_found(backend: LocalBackend) -> None:
    missing = "rp_01HZZZZZZZZZZZZZZZZZZZZZZZ"
    with pytest.raises(NotFoundError, match=f"No such risk profile: {missing}"):
        backend.risk_profiles.update(missing, {"score": 1})
    with pytest.raises(NotFoundError, match=f"No such risk profile: {missing}"):
        backend.risk_profiles.update(missing, {})
    with pytest.raises(NotFoundError, match=f"No such risk profile: {missing}"):
        backend.risk_profiles.delete(missing)


@pytest.mark.parametrize("operation", ["retrieve", "update", "delete"])
@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ("rp_01HZZZZZZZZZZZZZZZZZZZZZZZ", "it is a risk profile id"),
        ("nonsense", "26 characters"),
        ("conv_01HZZZZZZZZZZZZZZZZZZZZZZ", "26 characters"),  # one short
        ("conv_01hzzzzzzzzzzzzzzzzzzzzzzz", "26 characters"),  # ids are upper case
        ("conv_01HZZZZZZZZZZZZZZZZZZZZZZI", "without I, L, O or U"),
        ("", "non-empty"),
        ("conv_" + "Z" * 300, "longer than 255 characters"),
    ],
)
def test_an_id_that_cannot_be_a_conversation_id_is_an_invalid_request_naming_it(
    backend: LocalBackend, operation: str, bad: str, says: str
) -> None:
    backend.conversations.create({"contact_id": "ct_1"})
    with pytest.raises(InvalidRequestError) as caught:
        if operation == "retrieve":
            backend.conversations.retrieve(bad)
        elif operation == "update":
            backend.conversations.update(bad, {"is_muted": True})
        else:
            backend.conversations.delete(bad)
    assert caught.value.param == "id" and says in caught.value.message
    assert not caught.value.answered and len(caught.value.message) < 160


def test_results_are_plain_dicts_with_every_field(backend: LocalBackend) -> None:
    conv = backend.conversations.create({"contact_id": "ct_1"})
    profile = backend.risk_profiles.create(risk_body())
    assert type(conv) is dict and type(profile) is dict
    assert list(conv) == list(CONVERSATIONS.names())
    assert list(profile) == list(RISK_PROFILES.names())
    page = backend.risk_profiles.list()
    assert page == {"has_more": False, "data": [profile]}


def test_a_create_answers_the_object_as_a_later_read_gives_it(backend: LocalBackend) -> None:
    """The object a create answers is made from what was written (not read back): it must be
    the object the table gives back, defaults, numbers and nested details included."""
    made = backend.risk_profiles.create_many(
        [
            (
                risk_body(
                    customer_id="cus_é",
                    score=0.1,
                    details={"z": [1.5, {"b": 2**70, "a": "ü"}], "a": None, "t": True},
                ),
                "key-1",
            ),
            (risk_body(score=100), None),
        ]
    )
    convs = backend.conversations.create_many([({"group_id": "grp_1"}, None)])
    answers: list[Any] = [r for r in (*made, *convs) if not isinstance(r, ConvriskError)]
    assert len(answers) == 3
    stored = [backend.risk_profiles.retrieve(r.record["id"]) for r in answers[:2]] + [
        backend.conversations.retrieve(answers[2].record["id"])
    ]
    assert [r.record for r in answers] == stored
    # The same types too (a float stays a float): the same text.
    assert [r.text for r in answers] == [json_text(record) for record in stored]
    assert [json_text(r.record) for r in answers] == [json_text(record) for record in stored]


def _created_and_read(store: LocalBackend) -> list[tuple[str, str]]:
    """(the text a create answers, the text a later read gives) for a few creates."""
    risk = store.risk_profiles.create(risk_body(score=0.5, details={"a": [1.0, "é"]}))
    conv = store.conversations.create({"group_id": "grp_1"})
    return [
        (json_text(risk), json_text(store.risk_profiles.retrieve(risk["id"]))),
        (json_text(conv), json_text(store.conversations.retrieve(conv["id"]))),
    ]


def test_a_create_answers_what_a_trigger_added_by_hand_made_of_the_row(
    db_path: Path, backend: LocalBackend
) -> None:
    """A table altered by hand (a trigger that rewrites a new row, added while the store is
    open): the object a create answers is the row as stored, not the values as given."""
    before = _created_and_read(backend)
    assert all(made == read for made, read in before)
    with sqlite3.connect(db_path) as conn:
        conn.executescript(
            "CREATE TRIGGER retype AFTER INSERT ON risk_profiles BEGIN"
            " UPDATE risk_profiles SET profile_type = 'conservative' WHERE id = new.id; END;"
            "CREATE TRIGGER mute AFTER INSERT ON conversations BEGIN"
            " UPDATE conversations SET is_muted = 1 WHERE id = new.id; END;"
        )
    conn.close()
    after = _created_and_read(backend)
    assert [made for made, _ in after] == [read for _, read in after]
    assert '"profile_type":"conservative"' in after[0][0] and '"is_muted":true' in after[1][0]


def test_a_create_answers_the_defaults_a_table_rebuilt_by_hand_stores(db_path: Path) -> None:
    """Defaults the columns convert (5 in a TEXT column is "5", an integer past 64 bits a
    real) or that are no number at all ("²", a name to SQLite) give the stored row, and no
    traceback."""
    made_file = LocalBackend(db_path)
    made_file.conversations.list()
    made_file.close()
    defaults = {
        "pinned_message_id": "5",
        "last_active_at": "99999999999999999999",
        "last_opened_at": "²",
    }
    rebuild_conversations(db_path, defaults, keep_rows=False)
    store = LocalBackend(db_path)
    try:
        made = store.conversations.create({"contact_id": "cus_1"})
        read = store.conversations.retrieve(made["id"])
    finally:
        store.close()
    assert json_text(made) == json_text(read)
    assert (made["pinned_message_id"], made["last_active_at"]) == ("5", 1e20)
    assert read["last_opened_at"] == cast(Any, "²")  # the column now holds text
