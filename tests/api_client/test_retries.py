"""Retries of the remote backend, exactly per DESIGN 1.2: which failures, how long, how often."""

from __future__ import annotations

import email.utils
import socket
import uuid
from collections.abc import Callable, Iterator

import httpx
import pytest

from convrisk.api_client.errors import (
    APIConnectionError,
    APITimeoutError,
    AuthenticationError,
    InvalidRequestError,
    NotFoundError,
    ServiceError,
)
from convrisk.api_client.remote.http import HTTPBackend
from convrisk.api_client.remote.retries import backoff_wait, parse_retry_after

from .conftest import Remote, conversation

MakeRemote = Callable[..., Remote]


def ok(body: object | None = None, status: int = 200) -> httpx.Response:
    """A successful answer carrying a conversation (or `body`)."""
    return httpx.Response(status, json=conversation() if body is None else body)


def fail(status: int, **headers: str) -> httpx.Response:
    """An error answer in our own error shape."""
    body = {"error": {"type": "api_error", "message": f"failure {status}", "param": None}}
    return httpx.Response(status, json=body, headers=headers)


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504])
def test_retryable_status_then_success_returns_the_object(remote: MakeRemote, status: int) -> None:
    r = remote(fail(status), ok())
    conv = r.backend.conversations.retrieve("conv_01")
    assert conv["id"] == "conv_01"
    assert len(r.requests) == 2
    assert len(r.waits) == 1


def test_backoff_doubles_with_jitter_between_three_quarters_and_one(remote: MakeRemote) -> None:
    r = remote(fail(500), fail(503), fail(502), ok(), max_retries=3, random=lambda: 0.0)
    r.backend.conversations.retrieve("conv_01")
    assert r.waits == [0.375, 0.75, 1.5]
    r2 = remote(fail(500), fail(500), ok(), random=lambda: 0.999999)
    r2.backend.conversations.retrieve("conv_01")
    assert r2.waits == pytest.approx([0.5, 1.0], rel=1e-5)


def test_backoff_is_capped_at_eight_seconds() -> None:
    assert [backoff_wait(n, 0.0) for n in range(6)] == [0.375, 0.75, 1.5, 3.0, 6.0, 6.0]
    assert backoff_wait(10, 0.999999) == pytest.approx(8.0, rel=1e-5)
    assert all(6.0 <= backoff_wait(n, 0.3) <= 8.0 for n in range(4, 30))


def test_retry_after_seconds_is_honoured(remote: MakeRemote) -> None:
    r = remote(fail(429, **{"Retry-After": "7"}), fail(503, **{"Retry-After": "0"}), ok())
    r.backend.conversations.retrieve("conv_01")
    assert r.waits == [7.0, 0.0]


def test_retry_after_http_date_is_measured_from_the_response_date(remote: MakeRemote) -> None:
    date = "Wed, 21 Oct 2026 07:28:00 GMT"
    later = "Wed, 21 Oct 2026 07:28:42 GMT"
    r = remote(fail(429, **{"Retry-After": later, "Date": date}), ok())
    r.backend.conversations.retrieve("conv_01")
    assert r.waits == [42.0]


def test_retry_after_http_date_without_date_header_uses_the_clock(remote: MakeRemote) -> None:
    past = email.utils.format_datetime(
        email.utils.parsedate_to_datetime("Mon, 01 Jan 2001 00:00:00 GMT"), usegmt=True
    )
    r = remote(fail(503, **{"Retry-After": past}), ok())
    r.backend.conversations.retrieve("conv_01")
    assert r.waits == [0.0]


def test_unusable_retry_after_falls_back_to_backoff(remote: MakeRemote) -> None:
    r = remote(fail(503, **{"Retry-After": "soon"}), ok(), random=lambda: 0.0)
    r.backend.conversations.retrieve("conv_01")
    assert r.waits == [0.375]


@pytest.mark.parametrize(
    "retry_after",
    ["121", "3600", "Wed, 21 Oct 2026 08:28:00 GMT"],
)
def test_retry_after_over_120_seconds_gives_up_at_once(
    remote: MakeRemote, retry_after: str
) -> None:
    r = remote(fail(429, **{"Retry-After": retry_after, "Date": "Wed, 21 Oct 2026 07:28:00 GMT"}))
    with pytest.raises(ServiceError) as info:
        r.backend.conversations.retrieve("conv_01")
    assert info.value.status == 429
    assert "429" in str(info.value)
    assert "120 s" in str(info.value)
    assert len(r.requests) == 1
    assert r.waits == []


def test_retry_after_of_exactly_120_seconds_is_waited(remote: MakeRemote) -> None:
    r = remote(fail(429, **{"Retry-After": "120"}), ok())
    r.backend.conversations.retrieve("conv_01")
    assert r.waits == [120.0]


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after("5", None, 0.0) == 5.0
    assert parse_retry_after(" 2.5 ", None, 0.0) == 2.5
    assert parse_retry_after("-3", None, 0.0) == 0.0
    assert parse_retry_after("", None, 0.0) is None
    assert parse_retry_after("nan", None, 0.0) is None
    assert parse_retry_after("tomorrow", None, 0.0) is None
    when = email.utils.parsedate_to_datetime("Wed, 21 Oct 2026 07:28:30 GMT").timestamp()
    assert parse_retry_after("Wed, 21 Oct 2026 07:28:30 GMT", None, when - 30) == 30.0
    # A broken Date header falls back to the local clock.
    assert parse_retry_after("Wed, 21 Oct 2026 07:28:30 GMT", "garbage", when - 9) == 9.0


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (400, InvalidRequestError),
        (401, AuthenticationError),
        (403, AuthenticationError),
        (404, NotFoundError),
        (405, InvalidRequestError),
        (413, InvalidRequestError),
        (415, InvalidRequestError),
        (422, InvalidRequestError),
    ],
)
def test_other_4xx_are_never_retried(
    remote: MakeRemote, status: int, error: type[Exception]
) -> None:
    r = remote(fail(status, **{"Retry-After": "1"}))
    with pytest.raises(error) as info:
        r.backend.conversations.retrieve("conv_01")
    assert getattr(info.value, "status", None) == status
    assert f"HTTP {status}" in str(info.value)
    assert len(r.requests) == 1
    assert r.waits == []


def test_400_keeps_the_param_the_service_named(remote: MakeRemote) -> None:
    body = {
        "error": {
            "type": "invalid_request_error",
            "code": "invalid_request",
            "message": "Exactly one of contact_id or group_id is required; both were given.",
            "param": "group_id",
        }
    }
    r = remote(httpx.Response(400, json=body))
    with pytest.raises(InvalidRequestError) as info:
        r.backend.conversations.create({"contact_id": "ct_1"})
    assert info.value.param == "group_id"
    assert info.value.code == "invalid_request"
    assert str(info.value).startswith("Exactly one of contact_id or group_id")
    assert len(r.requests) == 1


def test_post_is_retried_with_the_same_idempotency_key(remote: MakeRemote) -> None:
    r = remote(
        fail(503),
        httpx.ConnectError("connection reset"),
        fail(409),
        ok(status=201),
        max_retries=3,
    )
    conv = r.backend.conversations.create({"contact_id": "ct_1"})
    assert conv["id"] == "conv_01"
    keys = [req.headers["Idempotency-Key"] for req in r.requests]
    assert len(keys) == 4
    assert len(set(keys)) == 1
    assert uuid.UUID(keys[0]).version == 4
    assert {req.content for req in r.requests} == {b'{"contact_id":"ct_1"}'}


def test_each_create_call_has_its_own_key_and_a_given_key_is_used(remote: MakeRemote) -> None:
    r = remote(ok(status=201), ok(status=201), ok(status=201))
    r.backend.conversations.create({"contact_id": "ct_1"})
    r.backend.conversations.create({"contact_id": "ct_1"})
    r.backend.conversations.create({"contact_id": "ct_1"}, idempotency_key="import-row-17")
    keys = [req.headers["Idempotency-Key"] for req in r.requests]
    assert keys[0] != keys[1]
    assert keys[2] == "import-row-17"


def test_gives_up_after_max_retries_with_the_last_status(remote: MakeRemote) -> None:
    r = remote(fail(503), fail(500), fail(502))
    with pytest.raises(ServiceError) as info:
        r.backend.risk_profiles.retrieve("rp_01")
    assert info.value.status == 502
    assert "failure 502 (HTTP 502)" in str(info.value)
    assert "gave up after 3 attempts" in str(info.value)
    assert len(r.requests) == 3
    assert len(r.waits) == 2


def test_max_retries_zero_sends_once(remote: MakeRemote) -> None:
    r = remote(fail(503), max_retries=0)
    with pytest.raises(ServiceError, match="HTTP 503"):
        r.backend.conversations.retrieve("conv_01")
    assert len(r.requests) == 1
    assert r.waits == []


def test_gives_up_on_the_error_of_the_last_answer(remote: MakeRemote) -> None:
    r = remote(fail(503), httpx.ConnectError("refused"), fail(429))
    with pytest.raises(ServiceError) as info:
        r.backend.conversations.retrieve("conv_01")
    assert info.value.status == 429
    r2 = remote(fail(503), fail(500), httpx.ReadTimeout("slow"))
    with pytest.raises(APITimeoutError):
        r2.backend.conversations.retrieve("conv_01")


def test_timeouts_are_retried_then_become_the_timeout_error(remote: MakeRemote) -> None:
    r = remote(httpx.ConnectTimeout("t"), httpx.ReadTimeout("t"), httpx.ReadTimeout("t"))
    with pytest.raises(APITimeoutError) as info:
        r.backend.conversations.list()
    assert isinstance(info.value, APIConnectionError)
    assert "svc.test:8080" in str(info.value)
    assert "did not answer in time" in str(info.value)
    assert len(r.requests) == 3
    assert len(r.waits) == 2


def test_a_dropped_connection_is_retried(remote: MakeRemote) -> None:
    r = remote(httpx.RemoteProtocolError("Server disconnected"), httpx.ReadError("reset"), ok())
    assert r.backend.conversations.retrieve("conv_01")["id"] == "conv_01"
    assert len(r.requests) == 3


@pytest.fixture
def closed_port() -> int:
    """A loopback port with nothing listening on it."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port: int = sock.getsockname()[1]
    sock.close()
    return port


def test_refused_connection_becomes_the_connection_error(closed_port: int) -> None:
    waits: list[float] = []
    backend = HTTPBackend(f"http://127.0.0.1:{closed_port}", "tok", sleep=waits.append)
    with backend, pytest.raises(APIConnectionError) as info:
        backend.conversations.list()
    assert not isinstance(info.value, APITimeoutError)
    assert f"127.0.0.1:{closed_port}" in str(info.value)
    assert "could not connect" in str(info.value)
    assert "gave up after 3 attempts" in str(info.value)
    assert len(waits) == 2


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A loopback port that accepts connections but never answers."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    yield sock.getsockname()[1]
    sock.close()


def test_a_real_timeout_becomes_the_timeout_error(silent_server: int) -> None:
    backend = HTTPBackend(f"http://127.0.0.1:{silent_server}", "tok", timeout=0.2, max_retries=0)
    with backend, pytest.raises(APITimeoutError) as info:
        backend.conversations.retrieve("conv_01")
    assert f"127.0.0.1:{silent_server}" in str(info.value)
    assert "waiting for the answer" in str(info.value)


def test_a_redirect_is_an_error_and_is_not_followed(remote: MakeRemote) -> None:
    r = remote(
        httpx.Response(302, headers={"Location": "https://elsewhere.example/v1/conversations"}),
    )
    with pytest.raises(ServiceError) as info:
        r.backend.conversations.list()
    assert info.value.status == 302
    assert "302" in str(info.value)
    assert "elsewhere.example" in str(info.value)
    assert [req.url.host for req in r.requests] == ["svc.test"]


@pytest.mark.parametrize(
    "first",
    [httpx.ReadError("reset"), httpx.ReadTimeout("slow"), httpx.Response(502)],
    ids=["answer-lost", "timeout", "502"],
)
def test_a_delete_whose_first_attempt_may_have_worked_ends_deleted_on_404(
    remote: MakeRemote, first: httpx.Response | Exception
) -> None:
    r = remote(first, httpx.Response(404, json={"error": {"message": "No such conversation"}}))
    assert r.backend.conversations.delete("conv_01") == {
        "id": "conv_01",
        "deleted": True,
    }
    assert len(r.requests) == 2


@pytest.mark.parametrize(
    "steps",
    [
        [httpx.Response(404)],
        [httpx.ConnectError("refused"), httpx.Response(404)],
        [httpx.ConnectTimeout("slow"), httpx.Response(404)],
    ],
    ids=["plain-404", "never-connected", "connect-timeout"],
)
def test_a_delete_of_a_missing_object_is_not_found(
    remote: MakeRemote, steps: list[httpx.Response | Exception]
) -> None:
    r = remote(*steps)
    with pytest.raises(NotFoundError):
        r.backend.conversations.delete("conv_01")


def test_a_404_to_a_retried_retrieve_stays_not_found(remote: MakeRemote) -> None:
    r = remote(httpx.ReadError("reset"), httpx.Response(404))
    with pytest.raises(NotFoundError):
        r.backend.conversations.retrieve("conv_01")


def test_an_answer_that_breaks_http_is_a_service_error_not_retried(remote: MakeRemote) -> None:
    r = remote(httpx.RemoteProtocolError("illegal header line: bytearray(b'Location: \\x00')"))
    with pytest.raises(ServiceError, match="is not valid HTTP") as info:
        r.backend.conversations.list()
    assert not isinstance(info.value, APIConnectionError) and len(r.requests) == 1
