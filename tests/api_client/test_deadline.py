"""The timeout setting bounds each attempt in total (DESIGN 1.2), against a real loopback server."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import ThreadingHTTPServer

import pytest

from convrisk.api_client.errors import APITimeoutError
from convrisk.api_client.remote.http import HTTPBackend
from tests.loopback import JSONService, running

from .conftest import conversation

BODY = json.dumps(conversation()).encode()


class _Handler(JSONService):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_GET(self) -> None:
        self.server.peers.append(self.client_address)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.flush()
        size, pause = self.server.chunk, self.server.pause
        try:
            for start in range(0, len(BODY), size):
                if self.server.stopping.wait(pause):
                    return
                self.wfile.write(BODY[start : start + size])
                self.wfile.flush()
        except OSError:
            # The client gave up and closed the connection.
            self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.peers: list[tuple[str, int]] = []
        self.stopping = threading.Event()
        # The body is sent `chunk` bytes at a time, `pause` seconds apart.
        self.chunk = 1
        self.pause = 0.3

    @property
    def url(self) -> str:
        """The base URL of this server."""
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"


@pytest.fixture
def trickle() -> Iterator[_Server]:
    """A service that sends its answer's body slowly, one chunk per pause."""
    with running(_Server()) as srv:
        try:
            yield srv
        finally:
            srv.stopping.set()  # the handler stops trickling, so that shutdown need not wait


@pytest.mark.e2e  # slow: waits out a timeout of a second or more
def test_a_service_trickling_its_answer_times_out_at_the_setting(trickle: _Server) -> None:
    backend = HTTPBackend(trickle.url, "tok", timeout=1, max_retries=0)
    started = time.monotonic()
    with backend, pytest.raises(APITimeoutError) as info:
        backend.conversations.retrieve("conv_01")
    elapsed = time.monotonic() - started
    # Each byte comes well within the 1 s timeout, but the whole answer would take a minute.
    assert 0.9 < elapsed < 2.5
    assert "timeout 1 s" in str(info.value)
    assert "127.0.0.1" in str(info.value)


@pytest.mark.e2e  # slow: waits out a timeout of a second or more
def test_a_trickled_answer_is_retried_like_any_timeout(trickle: _Server) -> None:
    waits: list[float] = []
    backend = HTTPBackend(
        trickle.url, "tok", timeout=0.5, max_retries=1, sleep=waits.append, random=lambda: 1.0
    )
    with backend, pytest.raises(APITimeoutError) as info:
        backend.conversations.retrieve("conv_01")
    assert len(trickle.peers) == 2
    assert waits == [0.5]
    assert "gave up after 2 attempts" in str(info.value)


def test_a_slow_answer_that_arrives_in_time_is_read_and_its_connection_reused(
    trickle: _Server,
) -> None:
    trickle.chunk, trickle.pause = len(BODY) // 3 + 1, 0.05
    with HTTPBackend(trickle.url, "tok", timeout=5) as backend:
        first = backend.conversations.retrieve("conv_01")
        second = backend.conversations.retrieve("conv_01")
    assert first == conversation()
    assert second == first
    assert len(trickle.peers) == 2
    assert len(set(trickle.peers)) == 1
