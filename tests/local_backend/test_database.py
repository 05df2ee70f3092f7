"""The file itself: creation, WAL, migrations, refusal of foreign files, errors, closing."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from convrisk.api_client.errors import ServiceError
from convrisk.api_client.resources import RESOURCES
from convrisk.local_backend.backend import LocalBackend
from convrisk.local_backend.store.database import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION

from .conftest import dump, risk_body


def pragma(path: Path, name: str) -> object:
    """One PRAGMA of the file, read by a separate connection."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute(f"PRAGMA {name}").fetchone()[0]
    finally:
        conn.close()


def test_first_use_creates_folder_and_file_in_wal_mode(db_path: Path) -> None:
    store = LocalBackend(db_path)
    store.conversations.create({"contact_id": "ct_1"})
    store.close()
    assert db_path.is_file()
    assert pragma(db_path, "journal_mode") == "wal"
    assert pragma(db_path, "user_version") == SCHEMA_VERSION
    assert pragma(db_path, "application_id") == APPLICATION_ID


def test_close_closes_every_connection(db_path: Path) -> None:
    import threading

    store = LocalBackend(db_path)
    store.conversations.create({"contact_id": "ct_1"})
    threads = [threading.Thread(target=lambda: store.conversations.list(limit=5)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert Path(f"{db_path}-wal").exists()
    store.close()
    # SQLite removes the WAL file when the last connection to the database closes.
    assert not Path(f"{db_path}-wal").exists()
    with pytest.raises(ServiceError, match="closed"):
        store.conversations.list()


def test_a_file_from_an_older_version_is_migrated_forward(db_path: Path) -> None:
    # Build the file exactly as schema version 1 left it, with data in it.
    db_path.parent.mkdir(parents=True)
    conn = sqlite3.connect(db_path, isolation_level=None)
    for statement in MIGRATIONS[0].sql(RESOURCES):
        conn.execute(statement)
    conn.execute("PRAGMA user_version = 1")
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    old_id = "conv_" + "7" + "Z" * 25  # far in the future: above any id the clock would make
    conn.execute(
        "INSERT INTO conversations (id, contact_id, created_at, is_muted) VALUES (?, ?, ?, 1)",
        (old_id, "ct_old", 1_600_000_000),
    )
    conn.close()
    assert pragma(db_path, "user_version") == 1

    store = LocalBackend(db_path)
    old = store.conversations.retrieve(old_id)
    assert (old["contact_id"], old["is_muted"], old["created_at"]) == (
        "ct_old",
        True,
        1_600_000_000,
    )
    # What version 2 added works: idempotency keys, and ids above those already in the file.
    new = store.conversations.create({"contact_id": "ct_new"}, idempotency_key="k")
    assert new["id"] > old_id
    assert store.conversations.create({"contact_id": "ct_new"}, idempotency_key="k") == new
    assert [c["id"] for c in store.conversations.list()["data"]] == [new["id"], old_id]
    # And version 3: a contact's conversations, through their index.
    listed = store.conversations.list({"contact_id": "ct_old"})["data"]
    assert [c["id"] for c in listed] == [old_id]
    store.close()
    assert pragma(db_path, "user_version") == SCHEMA_VERSION
    with sqlite3.connect(db_path) as conn:
        indexes = {row[1] for row in conn.execute("PRAGMA index_list(conversations)")}
    assert "conversations_by_contact" in indexes


def test_an_empty_file_is_initialised(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    db_path.write_bytes(b"")
    store = LocalBackend(db_path)
    assert store.risk_profiles.create(risk_body())["customer_id"] == "cus_1"
    store.close()


def test_reopening_does_not_migrate_again(db_path: Path) -> None:
    store = LocalBackend(db_path)
    store.conversations.create({"contact_id": "ct_1"})
    store.close()
    before = dump(db_path)
    store = LocalBackend(db_path)
    assert len(store.conversations.list()["data"]) == 1
    store.close()
    assert dump(db_path) == before


def test_a_file_from_a_newer_version_is_refused(db_path: Path) -> None:
    store = LocalBackend(db_path)
    store.conversations.list()
    store.close()
    conn = sqlite3.connect(db_path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    store = LocalBackend(db_path)
    with pytest.raises(ServiceError, match="newer") as caught:
        store.conversations.list()
    assert str(db_path) in caught.value.message
    store.close()


def test_a_file_that_is_not_a_database_is_refused_naming_it(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    db_path.write_bytes(b"this is a text file, not SQLite\n" * 100)
    store = LocalBackend(db_path)
    with pytest.raises(ServiceError) as caught:
        store.conversations.list()
    assert str(db_path) in caught.value.message
    assert "not a convrisk database" in caught.value.message
    store.close()
    assert db_path.read_bytes().startswith(b"this is a text file")


def test_another_applications_database_is_left_alone(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    conn = sqlite3.connect(db_path)
    conn.execute("CREATE TABLE photos (id INTEGER PRIMARY KEY, name TEXT)")
    conn.commit()
    conn.close()
    before = dump(db_path)
    store = LocalBackend(db_path)
    with pytest.raises(ServiceError, match="another application") as caught:
        store.conversations.create({"contact_id": "ct_1"})
    assert str(db_path) in caught.value.message
    store.close()
    assert dump(db_path) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_a_folder_that_cannot_be_written_is_a_clear_error(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        store = LocalBackend(locked / "sub" / "convrisk.db")
        with pytest.raises(ServiceError) as caught:
            store.conversations.list()
        assert str(locked / "sub") in caught.value.message
        store.close()
        store = LocalBackend(locked / "convrisk.db")
        with pytest.raises(ServiceError) as caught:
            store.conversations.list()
        assert str(locked / "convrisk.db") in caught.value.message
        store.close()
    finally:
        locked.chmod(0o700)


def test_a_path_through_a_file_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    store = LocalBackend(blocker / "convrisk.db")
    with pytest.raises(ServiceError) as caught:
        store.conversations.list()
    assert str(blocker) in caught.value.message
    store.close()


def test_a_path_that_is_a_folder_is_a_clear_error(tmp_path: Path) -> None:
    store = LocalBackend(tmp_path)
    with pytest.raises(ServiceError) as caught:
        store.conversations.list()
    assert str(tmp_path) in caught.value.message
    store.close()


def test_special_names_are_plain_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    store = LocalBackend(":memory:")
    store.conversations.create({"contact_id": "ct_1"})
    store.close()
    assert (tmp_path / ":memory:").is_file()


def test_score_column_has_no_type_affinity(db_path: Path) -> None:
    store = LocalBackend(db_path)
    store.risk_profiles.create(risk_body(score=72))
    store.risk_profiles.create(risk_body(score=72.0))
    store.close()
    conn = sqlite3.connect(db_path)
    kinds = [row[0] for row in conn.execute("SELECT typeof(score) FROM risk_profiles ORDER BY id")]
    conn.close()
    assert kinds == ["integer", "real"]


@pytest.mark.parametrize("name", ["con\0risk.db", "da\0ta/convrisk.db"])
def test_a_path_with_a_nul_character_is_a_clear_error(tmp_path: Path, name: str) -> None:
    store = LocalBackend(tmp_path / name)
    with pytest.raises(ServiceError) as caught:
        store.conversations.list()
    assert "NUL" in caught.value.message
    store.close()


def _store_raw_details(db_path: Path, object_id: str, details_text: str) -> None:
    conn = sqlite3.connect(db_path)
    with conn:
        conn.execute("UPDATE risk_profiles SET details = ? WHERE id = ?", (details_text, object_id))
    conn.close()


@pytest.mark.parametrize(
    "details_text",
    ['{"k":' * 300 + "{}" + "}" * 300, "[" * 100_000 + "]" * 100_000, "{not json", "[1, 2]"],
    ids=["too-deep", "deeper-than-python", "not-json", "not-an-object"],
)
def test_a_stored_profile_that_cannot_be_read_back_is_a_service_error(
    db_path: Path, details_text: str
) -> None:
    # Written by hand or by an older convrisk that took details of any depth.
    store = LocalBackend(db_path)
    bad = store.risk_profiles.create(risk_body())
    _store_raw_details(db_path, bad["id"], details_text)
    reads: tuple[Callable[[], object], ...] = (
        lambda: store.risk_profiles.list(),
        lambda: store.risk_profiles.retrieve(bad["id"]),
    )
    for read in reads:
        with pytest.raises(ServiceError) as caught:
            read()
        assert bad["id"] in caught.value.message
    # It can still be deleted, and then the listing works again.
    store.risk_profiles.delete(bad["id"])
    assert store.risk_profiles.list()["data"] == []
    store.close()
