"""Ids after a restore (POST /__sandbox/restore, serve --load): a create never takes the id of
a restored record, and the largest id a snapshot may hold still leaves room for more."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from convrisk.api_client.errors import InvalidRequestError
from convrisk.local_backend.backend import LocalBackend
from convrisk.local_backend.sandbox import snapshot
from convrisk.local_backend.store import ids

from .conftest import START


def _snapshot_with_id(store: LocalBackend, object_id: str) -> bytes:
    """A one-conversation snapshot whose record has this id."""
    store.conversations.create({"contact_id": "ct_1"})
    (line,) = store.snapshot()
    return json.dumps({**json.loads(line), "id": object_id}).encode()


def test_a_restored_id_at_the_last_time_still_leaves_room_for_creates(db_path: Path) -> None:
    last = ids.encode(ids.number_at(snapshot.LAST_ID_MILLIS, (1 << ids.RANDOM_BITS) - 1))
    with LocalBackend(db_path, clock=lambda: START) as store:
        store.restore(snapshot.parse(_snapshot_with_id(store, "conv_" + last)))
        made = store.conversations.create({"contact_id": "ct_2"})
        assert made["id"] > "conv_" + last
        assert store.conversations.retrieve("conv_" + last)["contact_id"] == "ct_1"


def test_a_snapshot_id_past_the_last_time_is_refused(db_path: Path) -> None:
    past = ids.encode(ids.number_at(snapshot.LAST_ID_MILLIS + 1, 0))
    with LocalBackend(db_path, clock=lambda: START) as store:
        data = _snapshot_with_id(store, "conv_" + past)
    with pytest.raises(InvalidRequestError, match=r"line 1: id conv_\w+ carries a time past"):
        snapshot.parse(data)
