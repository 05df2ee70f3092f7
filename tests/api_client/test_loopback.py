"""The remote backend against a real loopback HTTP/1.1 server: one pooled keep-alive connection."""

from __future__ import annotations

from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from convrisk.api_client import Client
from convrisk.api_client.remote.http import HTTPBackend
from tests.loopback import JSONService, running

from .conftest import conversation

IDS = [f"conv_{n:03d}" for n in range(250, 0, -1)]


class _Handler(JSONService):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_GET(self) -> None:
        self.server.peers.append(self.client_address)
        query = parse_qs(urlsplit(self.path).query)
        limit = int(query["limit"][0])
        start = 0
        if "starting_after" in query:
            start = IDS.index(query["starting_after"][0]) + 1
        chunk = IDS[start : start + limit]
        page = {"has_more": start + limit < len(IDS), "data": [conversation(i) for i in chunk]}
        self.send_json(200, page)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.peers: list[tuple[str, int]] = []


@pytest.fixture
def server() -> Iterator[_Server]:
    """A small list-only service on a loopback port, recording the client port of each request."""
    with running(_Server()) as srv:
        yield srv


def test_pages_are_fetched_over_one_reused_connection(server: _Server) -> None:
    host, port = server.server_address[:2]
    with Client(HTTPBackend(f"http://{host!s}:{port}", "tok"), page_size=40) as client:
        ids = [c["id"] for c in client.conversations.iterate()]
    assert ids == IDS
    assert len(server.peers) == 7
    assert len(set(server.peers)) == 1
