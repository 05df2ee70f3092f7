"""What a create remembers between creates (the last id it issued, how it makes an object of
the values given) never outlives what another process does to the file meanwhile."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from convrisk.api_client.records import json_text
from convrisk.local_backend.backend import LocalBackend

from .conftest import FakeClock


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
    with sqlite3.connect(db_path) as conn:
        columns = ", ".join(row[1] for row in conn.execute("PRAGMA table_info(conversations)"))
        conn.executescript(
            f"""
            CREATE TABLE c2 (
                id TEXT NOT NULL PRIMARY KEY, contact_id TEXT, group_id TEXT,
                pinned_message_id TEXT DEFAULT 'msg_default',
                is_pinned INTEGER NOT NULL DEFAULT 0, is_muted INTEGER NOT NULL DEFAULT 0,
                last_active_at, last_opened_at, created_at INTEGER NOT NULL, archived_at,
                is_archived INTEGER GENERATED ALWAYS AS (archived_at IS NOT NULL) VIRTUAL,
                CHECK ((contact_id IS NULL) <> (group_id IS NULL))
            );
            INSERT INTO c2 ({columns}) SELECT {columns} FROM conversations;
            DROP TABLE conversations;
            ALTER TABLE c2 RENAME TO conversations;
            """
        )
    conn.close()
    made = backend.conversations.create({"contact_id": "ct_after"})
    read = backend.conversations.retrieve(made["id"])
    assert made["pinned_message_id"] == "msg_default"
    assert json_text(made) == json_text(read)
