"""`database.never_wait()`: an operation that meets another connection's lock fails at once,
having written nothing, and the same connection waits again outside it."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from convrisk.api_client.errors import ServiceError
from convrisk.local_backend.backend import LocalBackend
from convrisk.local_backend.store.database import WouldWait, never_wait


def test_a_locked_write_under_never_wait_fails_at_once_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "nw.db"
    with LocalBackend(path, busy_timeout=30) as backend:
        backend.conversations.list()  # opened and migrated
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        try:
            with never_wait(), pytest.raises(WouldWait):
                backend.conversations.create({"contact_id": "ct_nw"})
            # Reads do not wait for a writer (WAL), under never_wait or not.
            with never_wait():
                assert backend.conversations.list()["data"] == []
        finally:
            other.execute("ROLLBACK")
            other.close()
        with never_wait():
            backend.conversations.create({"contact_id": "ct_after"})
        assert [c["contact_id"] for c in backend.conversations.list()["data"]] == ["ct_after"]


def test_outside_never_wait_the_same_connections_wait_for_the_lock_again(tmp_path: Path) -> None:
    path = tmp_path / "wait.db"
    with LocalBackend(path, busy_timeout=10) as backend:
        with never_wait():
            backend.conversations.list()  # the pooled connection's busy handler is now off
        other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        other.execute("BEGIN IMMEDIATE")
        release = threading.Timer(0.3, lambda: other.execute("ROLLBACK"))
        release.start()
        try:
            # Waits (SQLite's busy handler back on) until the other transaction ends.
            created = backend.conversations.create({"contact_id": "ct_waited"})
        finally:
            release.join()
            other.close()
        assert created["contact_id"] == "ct_waited"


def test_a_short_busy_timeout_still_ends_in_a_service_error(tmp_path: Path) -> None:
    path = tmp_path / "short.db"
    with LocalBackend(path, busy_timeout=0.2) as backend:
        backend.conversations.list()
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(ServiceError, match="locked"):
                backend.conversations.create({"contact_id": "ct_never"})
        finally:
            other.execute("ROLLBACK")
            other.close()
