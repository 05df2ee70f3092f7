"""Group commit in `serve`: creates that arrive together are written in one transaction, and
each still gets the answer it would get alone."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Coroutine, Iterator, MutableMapping
from pathlib import Path
from typing import Any

import httpx
import pytest

from convrisk.api_client.errors import ServiceError
from convrisk.local_backend.backend import LocalBackend
from convrisk.local_backend.sandbox.wire import Answer, Call, Wire
from convrisk.local_backend.serve.access_log import AccessLog
from convrisk.local_backend.serve.asgi_app import ServeApp
from convrisk.local_backend.serve.faults import Connections
from convrisk.local_backend.store.database import WouldWait, never_wait

from .conftest import TLS, TOKEN, Served

RISK = "/v1/risk-profiles"
CONV = "/v1/conversations"


def _body(number: int) -> dict[str, Any]:
    return {
        "customer_id": f"cus_{number}",
        "profile_type": "moderate",
        "score": number,
        "details": {},
    }


def _headers(body: bytes, key: str | None) -> list[tuple[str, str]]:
    headers = [
        ("authorization", f"Bearer {TOKEN}"),
        ("content-type", "application/json"),
        ("content-length", str(len(body))),
    ]
    if key is not None:
        headers.append(("idempotency-key", key))
    return headers


@pytest.fixture
def backend(tmp_path: Path) -> Iterator[LocalBackend]:
    """A fresh local database."""
    with LocalBackend(tmp_path / "group.db") as store:
        yield store


def _call(wire: Wire, path: str, body: bytes, key: str | None) -> Call:
    started = wire.start("POST", path, "", _headers(body, key), body_length=len(body))
    assert isinstance(started, Call)
    return started


def test_concurrent_creates_over_http_each_get_their_own_object(served: Served) -> None:
    answers: list[httpx.Response] = []
    lock = threading.Lock()

    def client(worker: int) -> None:
        with httpx.Client(
            base_url=served.url, headers={"Authorization": f"Bearer {TOKEN}"}, verify=TLS
        ) as http:
            for number in range(20):
                body = _body(worker * 100 + number)
                response = http.post(
                    RISK, json=body, headers={"Idempotency-Key": f"k-{worker}-{number}"}
                )
                with lock:
                    answers.append(response)

    threads = [threading.Thread(target=client, args=(worker,)) for worker in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert [a.status_code for a in answers] == [200] * 160
    ids = {a.json()["id"] for a in answers}
    assert len(ids) == 160
    with httpx.Client(
        base_url=served.url, headers={"Authorization": f"Bearer {TOKEN}"}, verify=TLS
    ) as http:
        for answer in answers[::16]:
            assert http.get(f"{RISK}/{answer.json()['id']}").json() == answer.json()
        stored = http.get(RISK, params={"limit": 100}).json()
        assert len(stored["data"]) == 100
        assert stored["has_more"]


def _asgi_post(
    app: ServeApp, path: str, body: bytes, key: str
) -> Coroutine[Any, Any, tuple[int, Any]]:
    """One POST through the ASGI app; its (status, parsed body)."""
    scope = {
        "type": "http",
        "method": "POST",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": [(k.encode(), v.encode()) for k, v in _headers(body, key)],
        "client": ("127.0.0.1", 5000),
    }
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    async def run() -> tuple[int, Any]:
        await app(scope, receive, send)
        status = sent[0]["status"]
        return status, json.loads(b"".join(m.get("body", b"") for m in sent[1:]))

    return run()


def test_creates_that_arrive_together_share_one_transaction(
    backend: LocalBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    wire = Wire(backend, TOKEN)
    app = ServeApp(wire, AccessLog(None, "text", TOKEN), None, Connections())
    batches: list[int] = []
    original = backend.risk_profiles.create_many

    def counted(items: Any, **options: Any) -> Any:
        batches.append(len(items))
        return original(items, **options)

    monkeypatch.setattr(backend.risk_profiles, "create_many", counted)
    bodies = [json.dumps(_body(number)).encode() for number in range(6)]

    async def together() -> list[tuple[int, Any]]:
        return await asyncio.gather(
            *(_asgi_post(app, RISK, body, f"key-{n}") for n, body in enumerate(bodies))
        )

    answers = asyncio.run(together())
    app.writer.shutdown(wait=True)
    assert batches == [6]
    assert [status for status, _ in answers] == [200] * 6
    assert [made["customer_id"] for _, made in answers] == [f"cus_{n}" for n in range(6)]
    # Ids are issued in the order the creates arrived.
    ids = [made["id"] for _, made in answers]
    assert ids == sorted(ids)


def test_a_batch_answers_each_create_as_it_would_be_answered_alone(tmp_path: Path) -> None:
    good = json.dumps(_body(1)).encode()
    other = json.dumps(_body(2)).encode()
    requests: list[tuple[str, bytes, str | None]] = [
        (RISK, good, "same"),
        (RISK, b"{not json", "k-bad-json"),
        (RISK, b'{"customer_id": "cus_x"}', "k-missing"),
        (RISK, good, "same"),  # the same request again: the same object
        (RISK, other, "same"),  # the same key with another body: refused
        (RISK, other, None),
        (RISK, b"[1, 2]", "k-array"),
    ]
    with (
        LocalBackend(tmp_path / "batched.db") as batched,
        LocalBackend(tmp_path / "alone.db") as alone,
    ):
        batched_wire, alone_wire = Wire(batched, TOKEN), Wire(alone, TOKEN)
        together = batched_wire.finish_creates(
            [(_call(batched_wire, path, body, key), body) for path, body, key in requests]
        )
        one_by_one = [
            alone_wire.finish(_call(alone_wire, path, body, key), body)
            for path, body, key in requests
        ]
    assert [a.status for a in together] == [a.status for a in one_by_one]
    assert [a.status for a in together] == [200, 400, 400, 200, 400, 200, 400]
    for mine, theirs in zip(together, one_by_one, strict=True):
        if mine.status != 200:
            assert mine.json() == theirs.json()
    assert together[0].json() == together[3].json()
    assert together[5].json()["id"] != together[0].json()["id"]


def test_creates_of_two_resources_are_refused_as_one_batch(backend: LocalBackend) -> None:
    wire = Wire(backend, TOKEN)
    risk = json.dumps(_body(1)).encode()
    conv = b'{"contact_id": "ct_1"}'
    with pytest.raises(ValueError, match="one resource"):
        wire.finish_creates(
            [(_call(wire, RISK, risk, None), risk), (_call(wire, CONV, conv, None), conv)]
        )
    assert backend.risk_profiles.list()["data"] == []


def test_a_database_failure_in_a_batch_is_each_creates_own(
    backend: LocalBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    wire = Wire(backend, TOKEN)

    original = backend.risk_profiles.create_many

    def failing(items: Any, **options: Any) -> Any:
        if len(items) > 1:  # the batch fails; a create alone (one item) goes through
            raise ServiceError("disk I/O error")
        return original(items, **options)

    monkeypatch.setattr(backend.risk_profiles, "create_many", failing)
    bodies = [json.dumps(_body(number)).encode() for number in range(3)]
    calls = [(_call(wire, RISK, body, f"k-{n}"), body) for n, body in enumerate(bodies)]
    # On the event loop (never wait) nothing is written: the caller runs it where it may wait...
    with never_wait(), pytest.raises(WouldWait):
        wire.finish_creates(calls)
    assert backend.risk_profiles.list()["data"] == []
    # ... where each create runs alone, as without batching.
    answers: list[Answer] = wire.finish_creates(calls)
    assert [a.status for a in answers] == [200, 200, 200]
    assert len(backend.risk_profiles.list()["data"]) == 3


def test_creates_of_two_resources_in_one_turn_are_two_batches(
    backend: LocalBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    wire = Wire(backend, TOKEN)
    app = ServeApp(wire, AccessLog(None, "text", TOKEN), None, Connections())
    batches: list[tuple[str, int]] = []
    for name in ("risk_profiles", "conversations"):
        resource = getattr(backend, name)
        original = resource.create_many

        def counted(items: Any, _name: str = name, _original: Any = original, **kw: Any) -> Any:
            batches.append((_name, len(items)))
            return _original(items, **kw)

        monkeypatch.setattr(resource, "create_many", counted)
    risk = [json.dumps(_body(number)).encode() for number in range(3)]
    conv = [json.dumps({"contact_id": f"ct_{number}"}).encode() for number in range(2)]

    async def together() -> list[tuple[int, Any]]:
        return await asyncio.gather(
            *(
                _asgi_post(app, path, body, key)
                for path, body, key in [
                    (RISK, risk[0], "r0"),
                    (CONV, conv[0], "c0"),
                    (RISK, risk[1], "r1"),
                    (CONV, conv[1], "c1"),
                    (RISK, risk[2], "r2"),
                ]
            )
        )

    answers = asyncio.run(together())
    app.writer.shutdown(wait=True)
    assert sorted(batches) == [("conversations", 2), ("risk_profiles", 3)]
    assert [status for status, _ in answers] == [200] * 5
    assert [made["id"][:3] for _, made in answers] == ["rp_", "con", "rp_", "con", "rp_"]
