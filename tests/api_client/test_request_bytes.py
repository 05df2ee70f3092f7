"""A list's request on the wire: its target and headers as httpx writes them, whatever the
filter's text and however long the query.
"""

from __future__ import annotations

from collections.abc import Iterator
from http.server import ThreadingHTTPServer

import httpx
import pytest

from convrisk.api_client.errors import ConvriskError
from convrisk.api_client.remote.http import HTTPBackend
from tests.loopback import JSONService, running, url_of

GROUPS = [
    "grp_1",
    "a b+c&d=e%20f/g?h#i",
    "café 😀",
    "~._-",
    "[x]:@!$'()*,;",
    "\u2028\x7f",
    "g" * 5000,  # a long query
]


class _Handler(JSONService):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_GET(self) -> None:
        headers = [(name.lower(), value) for name, value in self.headers.items()]
        self.server.seen.append((self.path, headers))
        self.send_json(200, {"has_more": False, "data": [{"id": "conv_1"}]})


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.seen: list[tuple[str, list[tuple[str, str]]]] = []


@pytest.fixture
def server() -> Iterator[_Server]:
    """A one-page list service on a loopback port, recording each request's target and headers."""
    with running(_Server()) as srv:
        yield srv


@pytest.mark.parametrize("group", GROUPS)
def test_a_list_request_is_sent_as_httpx_writes_it(server: _Server, group: str) -> None:
    base = url_of(server)
    with HTTPBackend(base, "tok") as backend:
        texts = backend.conversations.list({"group_id": group}, limit=5, view="json")
        assert texts.ids == ["conv_1"]
        assert backend.conversations.list({"group_id": group}, limit=5)["data"] == [
            {"id": "conv_1"}
        ]
    params = {"group_id": group, "limit": "5"}
    written = httpx.URL(base + "/v1/conversations").copy_with(params=params).raw_path.decode()
    assert [path for path, _ in server.seen] == [written, written]
    headers = dict(server.seen[0][1])
    assert headers["host"] == base.removeprefix("http://")
    assert headers["authorization"] == "Bearer tok"
    assert headers["accept"] == "application/json"
    assert headers["user-agent"].startswith("convrisk/")
    assert "content-length" not in headers and "content-type" not in headers


def test_a_query_too_long_for_a_url_is_refused_as_httpx_refuses_it(server: _Server) -> None:
    backend = HTTPBackend(url_of(server), "tok")
    with backend, pytest.raises(httpx.InvalidURL, match="too long"):
        backend.conversations.list({"group_id": "g" * 70_000}, limit=5, view="json")
    assert server.seen == []


def test_a_refused_list_request_is_the_same_error_whatever_its_length(server: _Server) -> None:
    # Nothing listens there any more: a usual list request and a long one fail alike.
    base = url_of(server)
    server.shutdown()
    server.server_close()
    errors = []
    for group in ("grp_1", "g" * 5000):
        backend = HTTPBackend(base, "tok", max_retries=0)
        with backend, pytest.raises(ConvriskError) as info:
            backend.conversations.list({"group_id": group}, limit=5, view="json")
        errors.append((type(info.value), str(info.value)))
    assert errors[0] == errors[1]
