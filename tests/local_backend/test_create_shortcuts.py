"""What a create remembers between creates (the last id it issued, how it makes an object of
the values given) never outlives what another process does to the file meanwhile."""

from __future__ import annotations

from pathlib import Path

from convrisk.api_client.records import json_text
from convrisk.local_backend.backend import LocalBackend

from .conftest import FakeClock, rebuild_conversations


def test_ids_stay_in_creation_order_when_two_processes_take_turns_within_one_millisecond(
    db_path: Path, clock: FakeClock
) -> None:
    """With the clock standing still every id is the successor of the last one issued by
    either store: each must see the other's newest id, not the one it issued itself."""
    first = LocalBackend(db_path, clock=clock)
    second = LocalBackend(db_path, clock=clock)
    try:
        made = []
        for turn in range(40):
            store = first if turn % 3 else second
            made.append(store.conversations.create({"contact_id": f"ct_{turn}"})["id"])
    finally:
        first.close()
        second.close()
    assert made == sorted(made)
    assert len(set(made)) == len(made)


def test_a_create_answers_the_default_of_a_table_rebuilt_by_hand_while_the_store_is_open(
    db_path: Path, backend: LocalBackend
) -> None:
    """The store has made objects of the values given; the table is then rebuilt with a
    default it does not know the stored value of: the next create answers the row as stored."""
    before = backend.conversations.create({"contact_id": "ct_before"})
    assert before["pinned_message_id"] is None
    rebuild_conversations(db_path, {"pinned_message_id": "'msg_default'"}, keep_rows=True)
    made = backend.conversations.create({"contact_id": "ct_after"})
    read = backend.conversations.retrieve(made["id"])
    assert made["pinned_message_id"] == "msg_default"
    assert json_text(made) == json_text(read)
