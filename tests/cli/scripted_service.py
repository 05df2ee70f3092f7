"""A service on 127.0.0.1 that answers as it was told (redirects, echoes, bytes that are not
UTF-8), for `convrisk api` in-process (tests/cli) or through the installed script (tests/e2e)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.loopback import running, url_of

# What the service answers: (status, headers, body); a body of None echoes the request's
# Authorization header back in an error message.
Answer = tuple[int, list[tuple[str, str]], bytes | None]


class Scripted(BaseHTTPRequestHandler):
    """Answers each path (with its query) with what the server's `script` holds for it."""

    protocol_version = "HTTP/1.1"

    def _answer(self) -> None:
        assert isinstance(self.server, ScriptedServer)
        self.server.seen.append(self.path)
        missing: Answer = (404, [], b'{"error": {"message": "?"}}')
        status, headers, body = self.server.script.get(self.path, missing)
        if body is None:
            echoed = self.headers.get("Authorization", "")
            body = json.dumps(
                {"error": {"message": f"bad header {echoed}", "param": echoed}, "you": echoed}
            ).encode()
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_DELETE = _answer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


class ScriptedServer(ThreadingHTTPServer):
    """The server of `Scripted`: what to answer on each path, and the paths requested."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Scripted)
        self.script: dict[str, Answer] = {}
        self.seen: list[str] = []


@contextmanager
def scripted_service() -> Iterator[tuple[ScriptedServer, str]]:
    """A scripted service answering from a thread (fill `server.script`), and its URL."""
    with running(ScriptedServer()) as server:
        yield server, url_of(server)
