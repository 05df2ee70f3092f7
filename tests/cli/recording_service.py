"""A service on 127.0.0.1 that answers every request plausibly and records it, to compare what
convrisk sends with what its printed curl lines send (tests/cli and tests/e2e)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

from tests.loopback import JSONService, on_loopback, running, url_of

# One request as the service read it: method, path, headers (names in lower case) and body.
Request = tuple[str, str, dict[str, str], bytes]
# The headers a curl line must send as convrisk does (curl writes Host and Content-Length).
SENT_HEADERS = ("user-agent", "accept", "authorization", "content-type", "idempotency-key")


class Recorder(JSONService):
    """Answers every request plausibly and records it in `seen`."""

    seen: list[Request]
    lock = threading.Lock()

    def _record(self) -> tuple[str, str]:
        size = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(size) if size else b""
        path = urlsplit(self.path).path
        headers = {name.lower(): value for name, value in self.headers.items()}
        with self.lock:
            self.seen.append((self.command, self.path, headers, body))
        return path, path.rsplit("/", 1)[-1]

    def do_GET(self) -> None:
        """A page of one conversation, or the record asked for."""
        path, last = self._record()
        if path.count("/") == 2:
            self.send_json(200, {"has_more": False, "data": [{"id": "conv_1"}]})
        else:
            self.send_json(200, {"id": last})

    def do_POST(self) -> None:
        """A record made."""
        self._record()
        self.send_json(201, {"id": "conv_new"})

    def do_PUT(self) -> None:
        """The record changed."""
        _, last = self._record()
        self.send_json(200, {"id": last})

    def do_DELETE(self) -> None:
        """The record deleted."""
        _, last = self._record()
        self.send_json(200, {"id": last, "deleted": True})

    def do_PATCH(self) -> None:
        """The record changed."""
        _, last = self._record()
        self.send_json(200, {"id": last})


@contextmanager
def recorder() -> Iterator[tuple[str, list[Request]]]:
    """A Recorder on 127.0.0.1: its URL and what it has seen."""
    seen: list[Request] = []
    handler = type("Recording", (Recorder,), {"seen": seen})
    with running(on_loopback(handler)) as server:
        yield url_of(server), seen


def comparable(requests: list[Request]) -> list[Any]:
    """The parts of requests that must agree, in one order (an import sends several creates at
    once)."""
    return sorted(
        (method, path, [headers.get(h) for h in SENT_HEADERS], body)
        for method, path, headers, body in requests
    )
