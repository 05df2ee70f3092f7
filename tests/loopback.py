"""A scripted HTTP service for tests: a stdlib server on 127.0.0.1, answering from a thread."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

Server = TypeVar("Server", bound=ThreadingHTTPServer)
JOIN_SECONDS = 10


class JSONService(BaseHTTPRequestHandler):
    """A request handler that answers in JSON and keeps no access log on stderr."""

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def send_json(self, status: int, body: object) -> None:
        """Answer `status` with `body` as JSON (bytes are sent as they are)."""
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        try:
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            # The client went away first (a page read ahead by `--all` when the reader stopped,
            # `| head`): nothing to tell it, and no traceback on the test run's stderr.
            self.close_connection = True


def on_loopback(handler: type[BaseHTTPRequestHandler]) -> ThreadingHTTPServer:
    """A server for `handler` on a free port of 127.0.0.1 (not answering until `running`)."""
    return ThreadingHTTPServer(("127.0.0.1", 0), handler)


def url_of(server: ThreadingHTTPServer, scheme: str = "http") -> str:
    """The base URL of a server, as `scheme://host:port`."""
    host, port = server.server_address[:2]
    return f"{scheme}://{host!s}:{port}"


@contextmanager
def running(server: Server) -> Iterator[Server]:
    """`server` answering from a thread for the length of a `with`; then shut down, closed,
    and its thread joined."""
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
    )
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=JOIN_SECONDS)
