"""The admin routes of a `convrisk serve` sandbox (`/__sandbox/...`, DESIGN 5.4), sent through
the backend's one request path (its token, timeout, retries and size limit)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from convrisk.api_client.errors import InvalidRequestError

if TYPE_CHECKING:
    from convrisk.api_client.raw import RawAnswer

PREFIX = "/__sandbox/"
# The largest snapshot: `restore` sends no more, and the sandbox (local_backend.sandbox.snapshot)
# takes
# no more (413). 64 MiB is some 200,000 records, past any test fixture.
MAX_SNAPSHOT_BYTES = 64 * 1024 * 1024
# The fields of a journal entry, in the order they are shown.
REQUEST_FIELDS = (
    "seq",
    "time",
    "method",
    "path",
    "query",
    "status",
    "idempotency_key",
    "body",
    "body_truncated",
    "fault",
    "duration_ms",
    "violations",
)

# A quoted name: `serve` reads MAX_SNAPSHOT_BYTES here without loading the HTTP answer's module.
Send = Callable[[str, str, bytes | None], "RawAnswer"]


class NotASandbox(InvalidRequestError):
    """The service has no `/__sandbox/` routes: it is not a `convrisk serve` (exit 2)."""


@dataclass(frozen=True)
class Journal:
    """The request journal's entries that matched, oldest first, and how many were dropped."""

    requests: list[dict[str, Any]]
    dropped: int
    total: int


def requests(
    send: Send, *, method: str | None = None, path: str | None = None, status: int | None = None
) -> Journal:
    """The recorded requests that match every filter given (the sandbox filters them)."""
    query = {
        name: value
        for name, value in (("method", method), ("path", path), ("status", status))
        if value is not None
    }
    target = PREFIX + "requests"
    if query:
        target += "?" + urlencode(query, quote_via=quote, safe="/*?[]!")
    body = _json(send("GET", target, None), target)
    data, dropped, total = body.get("data"), body.get("dropped"), body.get("total")
    if (
        not isinstance(data, list)
        or not all(isinstance(item, dict) for item in data)
        or not isinstance(dropped, int)
        or not isinstance(total, int)
    ):
        raise _not_a_sandbox(target, "its answer is not a request journal")
    return Journal(data, dropped, total)


def reset(send: Send) -> None:
    """Empty the store (both resources, idempotency keys) and clear the request journal."""
    target = PREFIX + "reset"
    if _json(send("POST", target, None), target).get("reset") is not True:
        raise _not_a_sandbox(target, "its answer does not say it was reset")


def snapshot(send: Send) -> bytes:
    """Every record, one JSON line each with its `resource` (conversations first)."""
    target = PREFIX + "snapshot"
    return _checked(send("GET", target, None), target).body


def restore(send: Send, snapshot: bytes) -> dict[str, int]:
    """Replace the whole store with the snapshot's records: how many of each were restored."""
    target = PREFIX + "restore"
    restored = _json(send("POST", target, snapshot), target).get("restored")
    if not isinstance(restored, dict) or not all(
        isinstance(count, int) for count in restored.values()
    ):
        raise _not_a_sandbox(target, "its answer does not say what was restored")
    return {str(name): int(count) for name, count in restored.items()}


def _checked(answer: RawAnswer, target: str) -> RawAnswer:
    """The answer when it is a success; a 404 means no sandbox is there, anything else its
    error (401: the token, 400: what the sandbox refused, ...)."""
    if answer.status == 404:
        raise _not_a_sandbox(target, "it answered 404 Not Found")
    if not answer.ok:
        raise answer.error()
    return answer


def _json(answer: RawAnswer, target: str) -> dict[str, Any]:
    """The answer's JSON object, or NotASandbox when it is none."""
    body = _checked(answer, target).body
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        value = None
    if not isinstance(value, dict):
        raise _not_a_sandbox(target, "it did not answer with a JSON object")
    return value


def _not_a_sandbox(target: str, why: str) -> NotASandbox:
    return NotASandbox(
        f"The service is not a convrisk sandbox: {target} has no admin route ({why}). "
        "`convrisk sandbox` talks to `convrisk serve`."
    )
