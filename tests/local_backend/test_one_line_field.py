"""A field costs its line in the description and one migration step: conversations described
here with an extra optional boolean, `is_flagged` (filter `flagged`), and its `AddField` step,
and nothing else changed, are stored, created, listed, filtered, updated and snapshotted."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from convrisk.api_client.errors import InvalidRequestError
from convrisk.api_client.resources import CONVERSATIONS, RESOURCES, Field, Filter
from convrisk.local_backend.backend import LocalBackend
from convrisk.local_backend.sandbox import snapshot
from convrisk.local_backend.store import database
from convrisk.local_backend.store.database import (
    MIGRATIONS,
    READABLE_FROM,
    SCHEMA_VERSION,
    AddField,
    Sql,
    readable_from,
)

from .conftest import FakeClock

# The two lines a maintainer writes: the field (with its filter) and the migration step.
FLAGGED = dataclasses.replace(
    CONVERSATIONS,
    fields=(*CONVERSATIONS.fields, Field("is_flagged", "boolean", update=True, title="FLAGGED")),
    filters=(*CONVERSATIONS.filters, Filter("flagged", "boolean", "is_flagged")),
)
STEP = AddField("conversations", "is_flagged")


@pytest.fixture
def with_flagged(monkeypatch: pytest.MonkeyPatch) -> None:
    """The description and the migrations with the new field, for backends opened after."""
    monkeypatch.setitem(RESOURCES, "conversations", FLAGGED)
    monkeypatch.setattr(database, "MIGRATIONS", (*MIGRATIONS, STEP))


def columns_and_indexes(path: Path) -> tuple[dict[str, tuple[str, int, str | None]], set[str]]:
    """Each column of the conversations table (type, NOT NULL, default) and its index names."""
    with sqlite3.connect(path) as conn:
        info = conn.execute("PRAGMA table_info(conversations)").fetchall()
        indexes = {row[1] for row in conn.execute("PRAGMA index_list(conversations)")}
    conn.close()
    return {row[1]: (row[2], row[3], row[4]) for row in info}, indexes


def test_the_step_adds_the_column_with_its_default_and_the_index_of_its_filter() -> None:
    assert STEP.sql(RESOURCES | {"conversations": FLAGGED}) == (
        "ALTER TABLE conversations ADD COLUMN is_flagged INTEGER NOT NULL DEFAULT 0",
        "CREATE INDEX conversations_by_flagged ON conversations (is_flagged, id)",
    )


def test_a_field_with_no_default_cannot_be_added() -> None:
    required = dataclasses.replace(
        CONVERSATIONS, fields=(*CONVERSATIONS.fields, Field("rank", "number", update=True))
    )
    with pytest.raises(ValueError, match="boolean or nullable"):
        AddField("conversations", "rank").sql({"conversations": required})


def test_a_read_only_file_from_before_a_new_column_is_not_read_but_one_before_an_index_is() -> None:
    assert readable_from((*MIGRATIONS, STEP)) == SCHEMA_VERSION + 1
    index = Sql("CREATE INDEX conversations_by_created ON conversations (created_at, id)")
    assert readable_from((*MIGRATIONS, index)) == READABLE_FROM


def test_a_file_made_before_the_field_is_migrated_and_its_records_hold_the_default(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with LocalBackend(db_path) as before:
        old = before.conversations.create({"contact_id": "ct_old"})
    assert "is_flagged" not in old
    monkeypatch.setitem(RESOURCES, "conversations", FLAGGED)
    monkeypatch.setattr(database, "MIGRATIONS", (*MIGRATIONS, STEP))
    with LocalBackend(db_path) as after:
        again: Any = after.conversations.retrieve(old["id"])
    assert again == {**old, "is_flagged": False}
    columns, indexes = columns_and_indexes(db_path)
    assert columns["is_flagged"] == ("INTEGER", 1, "0")
    assert "conversations_by_flagged" in indexes
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1
    conn.close()


@pytest.mark.usefixtures("with_flagged")
def test_the_field_is_created_false_set_filtered_and_refused_when_not_a_boolean(
    db_path: Path, clock: FakeClock
) -> None:
    with LocalBackend(db_path, clock=clock) as store:
        convs: Any = store.conversations
        first = convs.create({"contact_id": "ct_1"})
        second = convs.create({"group_id": "grp_1"})
        assert first["is_flagged"] is False
        flagged = convs.update(first["id"], {"is_flagged": True})
        assert flagged == {**first, "is_flagged": True}
        assert [c["id"] for c in convs.list({"flagged": True})["data"]] == [first["id"]]
        assert [c["id"] for c in convs.list({"flagged": False})["data"]] == [second["id"]]
        assert convs.list({"flagged": True, "group_id": "grp_1"})["data"] == []
        with pytest.raises(InvalidRequestError) as caught:
            convs.update(second["id"], {"is_flagged": "yes"})
        assert caught.value.param == "is_flagged"
        with pytest.raises(InvalidRequestError):
            convs.list({"flagged": "yes"})
        sql, args = convs.list_sql({"flagged": True}, limit=10)
    with sqlite3.connect(db_path) as conn:
        plan = " ".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, args))
    conn.close()
    assert "conversations_by_flagged" in plan


@pytest.mark.usefixtures("with_flagged")
def test_snapshots_carry_the_field_and_one_taken_before_it_restores_with_it_false(
    db_path: Path,
) -> None:
    with LocalBackend(db_path) as store:
        made = store.conversations.create({"contact_id": "ct_1"})
        store.conversations.update(made["id"], {"is_flagged": True})  # type: ignore[typeddict-unknown-key]
        taken = store.snapshot()
        (record,) = [json.loads(line) for line in taken]
        assert record["is_flagged"] is True
        # Restored as it was taken: the field kept.
        store.restore(snapshot.parse("\n".join(taken).encode()))
        assert store.snapshot() == taken
        # Taken before the field existed: the line lacks it, and it restores as false.
        older = {k: v for k, v in record.items() if k != "is_flagged"}
        store.restore(snapshot.parse(json.dumps(older).encode()))
        assert store.conversations.retrieve(made["id"]) == {
            **{k: v for k, v in older.items() if k != "resource"},
            "is_flagged": False,
        }
