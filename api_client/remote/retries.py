"""Retry decisions of DESIGN 1.2 as pure functions: whether to retry, how long to wait first,
and whether a failed attempt may still have taken effect. The request loop
(api_client.remote.session)
only applies them.
"""

from __future__ import annotations

import email.utils
import math

import httpx

# Answers worth another attempt besides every 5xx; other 4xx never are.
RETRY_STATUSES = frozenset({408, 409, 429})
# The longest Retry-After the client waits; over it, it gives up instead.
MAX_RETRY_AFTER = 120.0


def should_retry(status: int | None, *, answer_unusable: bool = False) -> bool:
    """Whether another attempt may succeed: after an answer of 408, 409, 429 or 5xx, or after
    no answer at all (`status` None: a connection error or timeout), but never after an answer
    that came and could not be used (`answer_unusable`: undecodable or over the size limit)."""
    if status is None:
        return not answer_unusable
    return status in RETRY_STATUSES or status >= 500


def may_have_taken_effect(status: int | None, *, reached: bool) -> bool:
    """Whether a failed attempt may have been carried out all the same: answered 5xx, or no
    answer after the request may have `reached` the service (not a refused connection)."""
    if status is None:
        return reached
    return status >= 500


def reached_service(exc: httpx.RequestError) -> bool:
    """Whether a request that failed with `exc` may have reached the service: all but a
    connection never made (refused, timed out, no free connection, unsupported scheme)."""
    never_sent = (
        httpx.ConnectError,
        httpx.ConnectTimeout,
        httpx.PoolTimeout,
        httpx.UnsupportedProtocol,
    )
    return not isinstance(exc, never_sent)


def backoff_wait(retry: int, rand: float) -> float:
    """The wait before retry number `retry` (0-based) without Retry-After: capped, with jitter."""
    return min(0.5 * 2.0**retry, 8.0) * (0.75 + 0.25 * rand)


def retry_wait(retry: int, retry_after: float | None, rand: float) -> float | None:
    """Seconds to wait before retry number `retry` (0-based): what the service asked in
    Retry-After, else the backoff (`rand` in [0, 1) picks the jitter); None when the service
    asks for more than MAX_RETRY_AFTER, and the client gives up rather than wait."""
    if retry_after is None:
        return backoff_wait(retry, rand)
    return retry_after if retry_after <= MAX_RETRY_AFTER else None


def parse_retry_after(value: str | None, date_header: str | None, now: float) -> float | None:
    """Seconds asked by a Retry-After header (delta-seconds or an HTTP date), or None if unusable.

    An HTTP date is measured from the response's own Date header when it has one (so a skewed
    local clock does not matter), else from `now`.
    """
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if math.isfinite(seconds) else None
    try:
        when = email.utils.parsedate_to_datetime(text).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    reference = now
    if date_header:
        try:
            reference = email.utils.parsedate_to_datetime(date_header).timestamp()
        except (TypeError, ValueError, IndexError, OverflowError):
            reference = now
    return max(0.0, when - reference)
