"""The admin routes of a `convrisk serve` sandbox (`/__sandbox/...`, DESIGN 5.4), sent through
the backend's one request path (its token, timeout, retries and size limit)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
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

# Near misses listed when a verification fails, the closest first.
MAX_NEAR_MISSES = 10

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


@dataclass(frozen=True)
class Verdict:
    """What a verification found: the requests that matched, whether that is what was expected,
    and, when it is not, the lines that say why (the matches, or the near misses)."""

    held: bool
    matched: list[dict[str, Any]]
    wanted: str  # "exactly 2", "at least 1"
    what: str  # "POST /v1/conversations", with the body test when there is one
    explanation: list[str]  # empty when it held

    @property
    def verified(self) -> str:
        """The line that says it held."""
        got = len(self.matched)
        counted = f"{got:,} request" if got == 1 else f"{got:,} requests"
        return f"Verified: {counted} {self.what} (expected {self.wanted})."

    @property
    def failure(self) -> str:
        """The line that says it did not hold."""
        return f"Expected {self.wanted} {self.what}; the sandbox received {len(self.matched)}."


def verify(
    send: Send,
    method: str,
    glob: str,
    *,
    count: int | None = None,
    at_least: int = 1,
    body_test: Callable[[dict[str, Any]], str | None] | None = None,
    body_what: str | None = None,
) -> Verdict:
    """Whether the sandbox received exactly `count` (when given) or at least `at_least`
    requests of `method` on a path matching `glob` (and whose body `body_test` passes: None
    from it, else why not); the near misses from the whole journal when it did not."""
    verdicts = [
        (entry, None if body_test is None else body_test(entry))
        for entry in requests(send, method=method, path=glob).requests
    ]
    matched = [entry for entry, why_not in verdicts if why_not is None]
    refused = [(entry, why_not) for entry, why_not in verdicts if why_not is not None]
    wanted = f"exactly {count}" if count is not None else f"at least {at_least}"
    what = f"{method} {glob}" + (f" with a body where {body_what}" if body_what is not None else "")
    got = len(matched)
    if (got == count) if count is not None else got >= at_least:
        return Verdict(True, matched, wanted, what, [])
    if count is not None and got > count:
        seqs = ", ".join(f"#{entry.get('seq')}" for entry in matched[:MAX_NEAR_MISSES])
        more = ", ..." if got > MAX_NEAR_MISSES else ""
        return Verdict(False, matched, wanted, what, [f"Matched: {seqs}{more}"])
    misses = near_misses(requests(send).requests, method, glob, refused)
    if not misses:
        lines = ["No near miss: the sandbox received no request like it."]
    else:
        lines = ["Near misses, the closest first:"]
        lines += [f"  {line}" for line in misses[:MAX_NEAR_MISSES]]
        if len(misses) > MAX_NEAR_MISSES:
            lines.append(f"  ... and {len(misses) - MAX_NEAR_MISSES:,} more")
    return Verdict(False, matched, wanted, what, lines)


def near_misses(
    journal: Sequence[dict[str, Any]],
    method: str,
    glob: str,
    refused: Sequence[tuple[dict[str, Any], str]] = (),
) -> list[str]:
    """The requests that nearly matched, each a line, the closest first: a body the test
    refused, then the same path with another method, then the same method on another path
    (the most alike paths first)."""
    from difflib import SequenceMatcher
    from fnmatch import fnmatchcase

    lines = [f"{shown(entry)}: {why_not}" for entry, why_not in refused]
    other_method = [
        entry
        for entry in journal
        if entry.get("method") != method and fnmatchcase(str(entry.get("path")), glob)
    ]
    lines += [f"{shown(entry)}: another method" for entry in other_method]
    other_path = [
        entry
        for entry in journal
        if entry.get("method") == method and not fnmatchcase(str(entry.get("path")), glob)
    ]
    other_path.sort(key=lambda e: -SequenceMatcher(None, str(e.get("path")), glob).ratio())
    lines += [f"{shown(entry)}: another path" for entry in other_path]
    return lines


def shown(entry: dict[str, Any]) -> str:
    """A recorded request in a line: its number, method, path and query, and its answer (as
    data: whoever prints it makes it safe)."""
    query = entry.get("query")
    target = f"{entry.get('path')}?{query}" if query else str(entry.get("path"))
    status = entry.get("status")
    answer = "no answer" if status is None else str(status)
    if entry.get("fault"):
        answer += f", fault {entry.get('fault')}"
    return f"#{entry.get('seq')} {entry.get('method')} {target} -> {answer}"


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
