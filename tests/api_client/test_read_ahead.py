"""Reading ahead on a remote walk of pages: the next page is asked for while this one is
handled, and the walk gives the same pages and errors, in the same order, as without it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import ThreadingHTTPServer

import httpx
import pytest

from convrisk.api_client import Client
from convrisk.api_client.errors import APIError
from convrisk.api_client.page import View
from convrisk.api_client.pagination import Ahead
from convrisk.api_client.remote.deadline import when_sent
from convrisk.api_client.remote.http import HTTPBackend
from tests.loopback import JSONService, running, url_of

from .conftest import Remote, conversation

MakeRemote = Callable[..., Remote]
WAIT = 5.0  # seconds a test waits at most for the request made on the read-ahead thread


def page(*ids: str, has_more: bool) -> httpx.Response:
    """A list answer with conversations of these ids."""
    return httpx.Response(200, json={"has_more": has_more, "data": [conversation(i) for i in ids]})


def noted(
    answer: httpx.Response, asked: threading.Event
) -> Callable[[httpx.Request], httpx.Response]:
    """A step answering `answer` that sets `asked` when its request arrives."""

    def step(request: httpx.Request) -> httpx.Response:
        asked.set()
        return answer

    return step


def test_reading_ahead_asks_for_the_next_page_before_it_is_needed(remote: MakeRemote) -> None:
    asked = threading.Event()
    r = remote(
        page("conv_4", "conv_3", has_more=True), noted(page("conv_2", has_more=False), asked)
    )
    conversations = Client(r.backend, page_size=2).conversations
    conversations.read_ahead(True)
    pages = conversations.iter_pages(view="json")
    first = next(pages)
    # The second page is asked for while the first is still in the caller's hands.
    assert asked.wait(WAIT)
    assert r.requests[1].url.params["starting_after"] == "conv_3"
    rest = list(pages)
    assert [first.ids, *(p.ids for p in rest)] == [["conv_4", "conv_3"], ["conv_2"]]
    assert len(r.requests) == 2


def test_without_reading_ahead_no_page_is_asked_for_before_it_is_needed(
    remote: MakeRemote,
) -> None:
    r = remote(page("conv_4", "conv_3", has_more=True), page("conv_2", has_more=False))
    pages = Client(r.backend, page_size=2).conversations.iter_pages(view="json")
    next(pages)
    assert len(r.requests) == 1
    assert [p.ids for p in pages] == [["conv_2"]]


@pytest.mark.parametrize("view", ["json", "ids", "records"])
def test_an_error_on_the_page_read_ahead_comes_after_every_page_before_it(
    remote: MakeRemote, view: View
) -> None:
    r = remote(
        page("conv_4", "conv_3", has_more=True),
        httpx.Response(500, json={"error": {"message": "broken"}}),
        max_retries=0,
    )
    conversations = Client(r.backend, page_size=2).conversations
    conversations.read_ahead(True)
    pages = conversations.iter_pages(view=view)
    assert next(pages).has_more is True
    with pytest.raises(APIError) as info:
        next(pages)
    assert info.value.status == 500


def test_a_page_read_ahead_for_another_size_is_not_used(remote: MakeRemote) -> None:
    # The walk wants 3 items in pages of 2: the page read ahead (2 items) is not the one it
    # asks for last (1 item), which is asked for again; the items are the same.
    r = remote(
        page("conv_5", "conv_4", has_more=True),
        page("conv_3", "conv_2", has_more=True),
        page("conv_3", has_more=True),
        page("conv_2", has_more=False),  # read ahead after the last page, never used
    )
    conversations = Client(r.backend, page_size=2).conversations
    conversations.read_ahead(True)
    pages = list(conversations.iter_pages(limit=3, view="json"))
    assert [p.ids for p in pages] == [["conv_5", "conv_4"], ["conv_3"]]
    assert [q.url.params["limit"] for q in r.requests[:3]] == ["2", "2", "1"]


def test_a_page_read_ahead_is_forgotten_once_reading_ahead_is_off(remote: MakeRemote) -> None:
    asked = threading.Event()
    r = remote(
        page("conv_4", "conv_3", has_more=True),
        noted(page("conv_9", has_more=False), asked),
        page("conv_2", has_more=False),
    )
    conversations = Client(r.backend, page_size=2).conversations
    conversations.read_ahead(True)
    pages = conversations.iter_pages(view="json")
    next(pages)
    assert asked.wait(WAIT)
    conversations.read_ahead(False)
    assert [p.ids for p in pages] == [["conv_2"]]


def test_a_call_read_ahead_is_sent_before_the_caller_goes_on() -> None:
    # The caller (which holds the interpreter while it checks and prints a page) goes on only
    # once the call has sent its request, and does not wait for the answer.
    steps: list[str] = []
    answer = threading.Event()

    def call(sent: Callable[[], None]) -> str:
        steps.append("sent")
        sent()
        answer.wait(WAIT)
        return "page"

    ahead = Ahead(call)
    steps.append("caller goes on")
    answer.set()
    assert ahead.take() == "page"
    assert steps == ["sent", "caller goes on"]


class _Withheld(JSONService):
    """Answers a list only once the test lets it (`server.answer`)."""

    protocol_version = "HTTP/1.1"
    server: _WithheldServer

    def do_GET(self) -> None:
        self.server.answer.wait(WAIT)
        self.send_json(200, {"has_more": False, "data": []})


class _WithheldServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Withheld)
        self.answer = threading.Event()


@pytest.mark.e2e  # slow: about a second, or more (the quick loop leaves it out)
def test_the_transport_says_a_request_is_sent_before_its_answer_comes() -> None:
    sent = threading.Event()
    with running(_WithheldServer()) as server, HTTPBackend(url_of(server), "tok") as backend:

        def list_page() -> object:
            with when_sent(sent.set):
                return backend.conversations.list(limit=5, view="ids")

        worker = Ahead(lambda _: list_page())
        # The answer is held back until the transport has said that the request is sent.
        assert sent.wait(WAIT)
        server.answer.set()
        assert worker.take() == {"has_more": False, "data": []}
