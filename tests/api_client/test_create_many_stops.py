"""create_many over HTTP stops at the first error every request would meet: the requests in
flight end without their retries, and what was not sent yet is never sent (NotSent)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import httpx
import pytest

from convrisk.api_client.errors import (
    APIConnectionError,
    AuthenticationError,
    ConvriskError,
    InvalidRequestError,
    NotSent,
    ServiceError,
)
from convrisk.api_client.record_types import ConversationCreateParams
from convrisk.api_client.remote.session import Session
from tests.through_httpx import ThroughHttpx

from .conftest import Remote, conversation

MakeRemote = Callable[..., Remote]
ITEMS = 40
IN_FLIGHT = 8  # api_client.remote.session.CREATE_MANY_CONCURRENCY


def items(count: int = ITEMS) -> list[tuple[ConversationCreateParams, str | None]]:
    """`count` creates, each with its own key."""
    return [({"contact_id": f"c_{n}"}, f"key-{n}") for n in range(count)]


def test_a_refused_token_stops_the_batch_after_the_requests_in_flight(
    remote: MakeRemote,
) -> None:
    refused = httpx.Response(401, json={"error": {"message": "Invalid bearer token"}})
    r = remote(*[refused] * ITEMS)
    results = r.backend.conversations.create_many(items())
    assert 1 <= len(r.requests) <= IN_FLIGHT
    assert len(results) == ITEMS
    sent = [result for result in results if not isinstance(result, NotSent)]
    assert len(sent) == len(r.requests)
    assert all(isinstance(result, AuthenticationError) for result in sent)


def test_an_unreachable_service_stops_the_batch_without_more_retries(
    remote: MakeRemote,
) -> None:
    r = remote(*[httpx.ConnectError("refused")] * (ITEMS * 3))
    results = r.backend.conversations.create_many(items())
    # The first request to give up (after its 3 attempts) stops the rest: at most the 8 in
    # flight made their attempts, and none after.
    assert len(r.requests) <= IN_FLIGHT * 3
    assert any(isinstance(result, APIConnectionError) for result in results)
    assert sum(isinstance(result, NotSent) for result in results) >= ITEMS - IN_FLIGHT


def test_an_error_of_one_record_does_not_stop_the_batch(remote: MakeRemote) -> None:
    lock = threading.Lock()
    seen = [0]

    def answer(request: httpx.Request) -> httpx.Response:
        with lock:
            seen[0] += 1
            first = seen[0] == 1
        if first:
            return httpx.Response(400, json={"error": {"message": "bad", "param": "contact_id"}})
        return httpx.Response(200, json=conversation())

    r = remote(*[answer] * ITEMS)
    results = r.backend.conversations.create_many(items())
    assert len(r.requests) == ITEMS
    assert sum(isinstance(result, InvalidRequestError) for result in results) == 1
    assert not any(isinstance(result, NotSent) for result in results)
    assert sum(not isinstance(result, ConvriskError) for result in results) == ITEMS - 1


def test_a_stop_ends_a_retry_wait_at_once_and_nothing_more_is_sent() -> None:
    """A request waiting 20 s to retry a 503 (its Retry-After) gives up when the batch stops."""
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(503, headers={"Retry-After": "20"})

    session = Session(
        "http://svc.test",
        "a-token-1234",
        timeout=5,
        max_retries=1,
        max_response_bytes=1024,
        transport=ThroughHttpx(httpx.MockTransport(answer)),
        sleep=time.sleep,
        random=lambda: 0.5,
        allow_insecure_http=True,  # a MockTransport: nothing leaves the process
    )
    stop = threading.Event()
    timer = threading.Timer(0.2, stop.set)
    timer.start()
    started = time.monotonic()
    try:
        with pytest.raises(ServiceError) as info:
            session.request("POST", "/v1/conversations", body={}, stop=stop)
    finally:
        timer.cancel()
        session.close()
    assert info.value.status == 503 and len(sent) == 1
    assert time.monotonic() - started < 10  # not the 20 s the service asked for
