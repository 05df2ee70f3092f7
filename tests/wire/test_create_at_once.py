"""Group commit with one connection open: a create is its own batch, committed at once (no other
request can arrive in the same turn); with several connections creates still share one."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import time
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Any, cast

import httpx
import pytest

from convrisk.local_backend.backend import LocalBackend
from convrisk.local_backend.sandbox.wire import Wire
from convrisk.local_backend.serve.access_log import AccessLog
from convrisk.local_backend.serve.asgi_app import ServeApp
from convrisk.local_backend.serve.faults import Connections

from .conftest import TLS, TOKEN, Served

CONV = "/v1/conversations"


@pytest.fixture
def backend(tmp_path: Path) -> Iterator[LocalBackend]:
    """A fresh local database."""
    with LocalBackend(tmp_path / "at-once.db") as store:
        yield store


async def _post(app: ServeApp, contact: str, port: int) -> tuple[int, Any]:
    body = json.dumps({"contact_id": contact}).encode()
    headers = [
        (b"authorization", f"Bearer {TOKEN}".encode()),
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    scope = {
        "type": "http",
        "method": "POST",
        "path": CONV,
        "raw_path": CONV.encode(),
        "query_string": b"",
        "headers": headers,
        "client": ("127.0.0.1", port),
    }
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent[0]["status"], json.loads(b"".join(m.get("body", b"") for m in sent[1:]))


def _batches(
    backend: LocalBackend, monkeypatch: pytest.MonkeyPatch, open_connections: int
) -> tuple[list[int], list[tuple[int, Any]]]:
    """Three creates started together through the app with this many connections open: the
    size of each transaction, and the answers."""
    connections = Connections()
    for port in range(5000, 5000 + open_connections):
        connections.open[("127.0.0.1", port)] = cast(asyncio.Transport, object())
    app = ServeApp(Wire(backend, TOKEN), AccessLog(None, "text", TOKEN), None, connections)
    batches: list[int] = []
    original = backend.conversations.create_many

    def counted(items: Any, **options: Any) -> Any:
        batches.append(len(items))
        return original(items, **options)

    monkeypatch.setattr(backend.conversations, "create_many", counted)

    async def together() -> list[tuple[int, Any]]:
        return await asyncio.gather(*(_post(app, f"ct_{n}", 5000 + n) for n in range(3)))

    answers = asyncio.run(together())
    app.writer.shutdown(wait=True)
    return batches, answers


def test_over_one_open_connection_each_create_is_committed_at_once(
    backend: LocalBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    batches, answers = _batches(backend, monkeypatch, open_connections=1)
    assert batches == [1, 1, 1]
    assert [status for status, _ in answers] == [200] * 3
    assert [made["contact_id"] for _, made in answers] == ["ct_0", "ct_1", "ct_2"]
    ids = [made["id"] for _, made in answers]
    assert ids == sorted(ids)
    stored = backend.conversations.list()["data"]
    assert sorted(stored, key=lambda c: c["id"]) == [made for _, made in answers]


def test_over_several_open_connections_creates_of_one_turn_share_a_transaction(
    backend: LocalBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    batches, answers = _batches(backend, monkeypatch, open_connections=3)
    assert batches == [3]
    assert [status for status, _ in answers] == [200] * 3
    assert [made["contact_id"] for _, made in answers] == ["ct_0", "ct_1", "ct_2"]


@pytest.mark.e2e  # slow: about a second, or more (the quick loop leaves it out)
def test_over_one_connection_a_create_that_meets_another_process_lock_waits_and_is_made(
    served: Served,
) -> None:
    result: dict[str, httpx.Response] = {}
    other = sqlite3.connect(served.db_path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:

        def create() -> None:
            with httpx.Client(base_url=served.url, verify=TLS, timeout=30) as client:
                result["response"] = client.post(
                    CONV,
                    json={"contact_id": "ct_waited"},
                    headers={"Authorization": f"Bearer {TOKEN}"},
                )

        writer = threading.Thread(target=create)
        writer.start()
        time.sleep(0.5)
        assert writer.is_alive()  # waiting for the lock (on the writer thread), not failed
    finally:
        other.execute("ROLLBACK")
        other.close()
    writer.join(timeout=30)
    assert result["response"].status_code == 200
    made = result["response"].json()
    with sqlite3.connect(served.db_path) as conn:
        stored = conn.execute("SELECT contact_id FROM conversations WHERE id = ?", (made["id"],))
        assert stored.fetchall() == [("ct_waited",)]
    conn.close()
