"""A conversations service on loopback that keeps each Idempotency-Key's answer after its record
is deleted and replays it (`Idempotent-Replayed: true`), as a service that stores answers by key
alone may: the record the replayed answer names is not there any more."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

from tests import described
from tests.loopback import JSONService, on_loopback, running, url_of

_PATH = "/v1/conversations"


class KeepingStore:
    """The records and the answers by key of one service; shared by its request threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.records: dict[str, dict[str, Any]] = {}
        self.answers: dict[str, dict[str, Any]] = {}
        self.numbers = iter(range(1, 10**9))
        self.requests: list[tuple[str, str]] = []


class KeepingService(JSONService):
    """POST, GET, PUT and DELETE of conversations; a key's answer outlives its record."""

    store: KeepingStore  # set on the class made for each server (see `keeping_service`)

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length", "0"))
        return json.loads(self.rfile.read(length) or b"{}")

    def _id(self) -> str | None:
        path = urlsplit(self.path).path
        if not path.startswith(_PATH + "/"):
            return None
        return path.removeprefix(_PATH + "/")

    def _not_found(self, ident: str | None) -> None:
        error = {"type": "not_found_error", "message": f"No such conversation: {ident}"}
        self.send_json(404, {"error": {**error, "param": "id"}})

    def _answer(self, status: int, body: dict[str, Any], replayed: bool) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if replayed:
            self.send_header("Idempotent-Replayed", "true")
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        store = self.store
        body = self._body()
        key = self.headers.get("Idempotency-Key", "")
        with store.lock:
            store.requests.append(("POST", self.path))
            kept = store.answers.get(key)
            if kept is None:
                ident = f"conv_{next(store.numbers):026d}"
                kept = {**described.conversation(ident, int(time.time())), **body}
                store.records[ident] = dict(kept)
                store.answers[key] = kept
                self._answer(200, kept, replayed=False)
                return
        self._answer(200, kept, replayed=True)

    def do_GET(self) -> None:
        ident = self._id()
        with self.store.lock:
            self.store.requests.append(("GET", self.path))
            record = self.store.records.get(ident or "")
        if record is None:
            self._not_found(ident)
        else:
            self.send_json(200, record)

    def do_PUT(self) -> None:
        ident = self._id()
        body = self._body()
        with self.store.lock:
            self.store.requests.append(("PUT", self.path))
            record = self.store.records.get(ident or "")
            if record is not None:
                record.update(body)
                record = dict(record)
        if record is None:
            self._not_found(ident)
        else:
            self.send_json(200, record)

    def do_DELETE(self) -> None:
        ident = self._id()
        with self.store.lock:
            self.store.requests.append(("DELETE", self.path))
            # The record goes; the answer stored under its key stays.
            record = self.store.records.pop(ident or "", None)
        if record is None:
            self._not_found(ident)
        else:
            self.send_json(200, {"id": ident, "deleted": True})


@contextmanager
def keeping_service() -> Iterator[tuple[str, KeepingStore]]:
    """A KeepingService on 127.0.0.1 for the length of a `with`: its URL and its store."""
    store = KeepingStore()
    handler = type("KeepingServiceOfOneTest", (KeepingService,), {"store": store})
    with running(on_loopback(handler)) as server:
        yield url_of(server), store
