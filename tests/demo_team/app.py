"""The demo team's application: it opens a conversation for a customer's contact on the
conversations service, over httpx, retrying a 503 as the service's Retry-After asks."""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable
from typing import Any

import httpx

ATTEMPTS = 3
# The longest wait between attempts, whatever Retry-After asks.
MAX_WAIT_SECONDS = 5.0


class ServiceUnavailable(Exception):
    """The service answered 503 to every attempt."""


def open_conversation(
    base_url: str,
    token: str,
    contact_id: str,
    *,
    attempts: int = ATTEMPTS,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """Create a conversation for `contact_id`; a 503 is tried again (the same Idempotency-Key,
    so a retry never makes two), at most `attempts` times in all."""
    key = str(uuid.uuid4())
    headers = {"Authorization": f"Bearer {token}", "Idempotency-Key": key}
    with httpx.Client(base_url=base_url, headers=headers, timeout=10) as http:
        for attempt in range(1, attempts + 1):
            answer = http.post("/v1/conversations", json={"contact_id": contact_id})
            if answer.status_code != 503:
                answer.raise_for_status()
                record: dict[str, Any] = answer.json()
                return record
            if attempt < attempts:
                sleep(_wait(answer.headers.get("Retry-After")))
    raise ServiceUnavailable(f"the service answered 503 to {attempts} attempts")


def _wait(retry_after: str | None) -> float:
    """Seconds to wait: Retry-After's when it is a number, capped; 1 s otherwise."""
    try:
        seconds = float(retry_after) if retry_after is not None else 1.0
    except ValueError:
        seconds = 1.0
    if not math.isfinite(seconds):
        seconds = 1.0
    return min(max(seconds, 0.0), MAX_WAIT_SECONDS)
