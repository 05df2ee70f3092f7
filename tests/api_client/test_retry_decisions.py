"""The retry decisions of DESIGN 1.2 alone, without a request: which outcomes are retried, how
long the client waits first, and when a failed attempt may still have taken effect."""

from __future__ import annotations

import httpx
import pytest

from convrisk.api_client.remote.retries import (
    MAX_RETRY_AFTER,
    may_have_taken_effect,
    reached_service,
    retry_wait,
    should_retry,
)


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504, 599])
def test_busy_conflicting_and_server_error_answers_are_retried(status: int) -> None:
    assert should_retry(status)


@pytest.mark.parametrize("status", [200, 301, 400, 401, 403, 404, 405, 413, 415, 422])
def test_other_answers_are_final(status: int) -> None:
    assert not should_retry(status)


def test_no_answer_is_retried_but_an_unusable_answer_is_not() -> None:
    assert should_retry(None)
    assert not should_retry(None, answer_unusable=True)


def test_the_wait_is_what_the_service_asked_up_to_the_limit() -> None:
    assert retry_wait(0, 7.0, 0.5) == 7.0
    assert retry_wait(3, 0.0, 0.5) == 0.0
    assert retry_wait(0, MAX_RETRY_AFTER, 0.5) == MAX_RETRY_AFTER


def test_a_wait_over_the_limit_means_give_up() -> None:
    assert retry_wait(0, MAX_RETRY_AFTER + 1, 0.5) is None


def test_without_retry_after_the_wait_is_the_jittered_backoff() -> None:
    assert retry_wait(0, None, 0.0) == 0.375
    assert retry_wait(1, None, 0.0) == 0.75
    assert retry_wait(2, None, 1.0) == 2.0
    assert retry_wait(9, None, 1.0) == 8.0


def test_a_server_error_or_a_lost_answer_may_have_taken_effect() -> None:
    assert may_have_taken_effect(500, reached=True)
    assert may_have_taken_effect(None, reached=True)


def test_a_refused_request_or_a_client_error_did_not_take_effect() -> None:
    assert not may_have_taken_effect(None, reached=False)
    assert not may_have_taken_effect(429, reached=True)
    assert not may_have_taken_effect(404, reached=True)


@pytest.mark.parametrize(
    "error",
    [
        httpx.ConnectError("refused"),
        httpx.ConnectTimeout("slow to connect"),
        httpx.PoolTimeout("no free connection"),
        httpx.UnsupportedProtocol("ftp"),
    ],
)
def test_a_connection_never_made_did_not_reach_the_service(error: httpx.RequestError) -> None:
    assert not reached_service(error)


@pytest.mark.parametrize(
    "error",
    [
        httpx.ReadTimeout("slow answer"),
        httpx.WriteTimeout("slow upload"),
        httpx.ReadError("reset"),
        httpx.RemoteProtocolError("garbage"),
    ],
)
def test_a_connection_broken_after_sending_may_have_reached_it(error: httpx.RequestError) -> None:
    assert reached_service(error)
