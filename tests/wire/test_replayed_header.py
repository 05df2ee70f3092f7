"""`serve` says when it replays a stored answer: `Idempotent-Replayed: true` on the answer to a
repeated Idempotency-Key (alone or in a batch of creates), absent on a new create, and written
in the OpenAPI document's create responses."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from convrisk.local_backend.backend import LocalBackend
from convrisk.local_backend.sandbox.openapi import document
from convrisk.local_backend.sandbox.wire import Answer, Call, Wire

TOKEN = "replay-token"
BODY = json.dumps({"contact_id": "c_777"}).encode()


def _headers(key: str) -> list[tuple[str, str]]:
    return [
        ("authorization", f"Bearer {TOKEN}"),
        ("content-type", "application/json"),
        ("idempotency-key", key),
    ]


@pytest.fixture
def wire(tmp_path: Path) -> Iterator[Wire]:
    with LocalBackend(tmp_path / "replay.db") as backend:
        yield Wire(backend, TOKEN)


def _replayed(answer: Answer) -> str | None:
    return dict(answer.headers).get("idempotent-replayed")


def test_a_repeated_key_is_answered_with_the_replayed_header(wire: Wire) -> None:
    first = wire.handle("POST", "/v1/conversations", "", _headers("k-1"), BODY)
    again = wire.handle("POST", "/v1/conversations", "", _headers("k-1"), BODY)
    other = wire.handle("POST", "/v1/conversations", "", _headers("k-2"), BODY)
    assert first.status == again.status == other.status == 200
    assert (_replayed(first), _replayed(again), _replayed(other)) == (None, "true", None)
    assert again.json() == first.json() and other.json()["id"] != first.json()["id"]


def test_a_batch_of_creates_marks_only_its_replays(wire: Wire) -> None:
    wire.handle("POST", "/v1/conversations", "", _headers("old"), BODY)
    calls: list[tuple[Call, bytes]] = []
    for key in ("old", "new", "new"):
        call = wire.start("POST", "/v1/conversations", "", _headers(key), body_length=len(BODY))
        assert isinstance(call, Call)
        calls.append((call, BODY))
    answers = wire.finish_creates(calls)
    assert [_replayed(a) for a in answers] == ["true", None, "true"]


def test_the_openapi_document_names_the_header_on_every_create() -> None:
    paths = document()["paths"]
    for path in ("/v1/conversations", "/v1/risk-profiles"):
        header = paths[path]["post"]["responses"]["200"]["headers"]["Idempotent-Replayed"]
        assert header["schema"] == {"type": "string", "enum": ["true"]}
