"""The admin routes of a `convrisk serve` sandbox (`/__sandbox/...`, DESIGN 5.4), sent through
the backend's one request path (its token, timeout, retries and size limit)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
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
    "fault_rule",
    "duration_ms",
    "violations",
)

# The fields of an aimed fault rule (`/__sandbox/faults`), in the order they are shown.
FAULT_FIELDS = (
    "id",
    "method",
    "path",
    "status",
    "drop",
    "drop_after",
    "times",
    "after",
    "delay_ms",
    "retry_after",
    "body_jq",
    "seen",
    "fired",
)

# The bounds of a fault rule's numbers, the same for the sandbox (local_backend.sandbox.
# fault_rules) and `sandbox fault add`: `times` and `after`, `delay_ms`, `retry_after` (seconds),
# and the statuses it may answer with.
MAX_FAULT_COUNT = 1_000_000_000
# The longest path glob and jq program a fault rule takes, in characters.
MAX_FAULT_GLOB_LENGTH = 2048
MAX_FAULT_JQ_LENGTH = 4096
MAX_FAULT_DELAY_MS = 60_000
MAX_FAULT_RETRY_AFTER = 86_400
FAULT_STATUSES = (200, 599)

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
    journal = requests(send, method=method, path=glob)
    verdicts = [
        (entry, None if body_test is None else body_test(entry)) for entry in journal.requests
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
    if journal.dropped:
        lines.append(
            f"The journal had no room for the {journal.dropped:,} oldest requests (it keeps the "
            "latest ones): they are not counted. Reset the sandbox before the test."
        )
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
    """Empty the store (both resources, idempotency keys), clear the request journal and the
    aimed fault rules, and rewind the seeded random faults and latency."""
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


def add_fault(send: Send, rule: dict[str, Any]) -> dict[str, Any]:
    """Add an aimed fault rule (after those already there): the rule as the sandbox keeps it,
    with its id and its counts."""
    target = PREFIX + "faults"
    body = json.dumps(rule, separators=(",", ":")).encode("utf-8")
    added = _json(send("POST", target, body), target)
    if not isinstance(added.get("id"), int):
        raise _not_a_sandbox(target, "its answer is not a fault rule")
    return added


def faults(send: Send) -> list[dict[str, Any]]:
    """The aimed fault rules, in the order added, each with how often it was seen and fired."""
    target = PREFIX + "faults"
    data = _json(send("GET", target, None), target).get("data")
    if not isinstance(data, list) or not all(
        isinstance(rule, dict) and isinstance(rule.get("id"), int) for rule in data
    ):
        raise _not_a_sandbox(target, "its answer is not a list of fault rules")
    return data


def clear_faults(send: Send) -> int:
    """Remove every aimed fault rule: how many there were."""
    target = PREFIX + "faults"
    cleared = _json(send("DELETE", target, None), target).get("cleared")
    if not isinstance(cleared, int) or isinstance(cleared, bool):
        raise _not_a_sandbox(target, "its answer does not say how many rules it removed")
    return cleared


def glob_problem(glob: str) -> str | None:
    """What makes a path glob unusable (empty, a space or control character, a `[` never
    closed), or None: the one check of `sandbox requests --path`, `fault add --path` and the
    sandbox's own routes."""
    if not glob:
        return "it is empty"
    if any(not char.isprintable() or char.isspace() for char in glob):
        return "it holds a space or a control character (percent-encode it, as in the path)"
    return _unclosed_bracket(glob)


# The path glob of a fault rule, as one regular expression that Python and JSON Schema (ECMA-262)
# read alike: printable ASCII without a space (a path is sent percent-encoded), each `[` closed
# by a `]`, and a set never begun with `]` or `!]` (fnmatch's `[]]` and `[!]]` are not taken).
_LITERAL = r"[!-Z\\-~]"
_SET = r'\[(?:![!-\\^-~]|["-\\^-~])[!-\\^-~]*\]'
FAULT_GLOB = f"(?:{_LITERAL}|{_SET})+"


def fault_glob_problem(glob: str) -> str | None:
    """What makes a glob unusable as a fault rule's path (glob_problem's, and FAULT_GLOB's), or
    None."""
    import re

    problem = glob_problem(glob)
    if problem is None and not glob.isascii():
        problem = "it holds a character outside ASCII (percent-encode it, as in the path)"
    if problem is None and re.fullmatch(FAULT_GLOB, glob) is None:
        problem = "a set [...] must not begin with ] or !] (name the character another way)"
    return problem


def _unclosed_bracket(glob: str) -> str | None:
    """Where a `[` has no `]` to close it (fnmatch would read it as a plain character)."""
    i = 0
    while i < len(glob):
        if glob[i] == "[":
            j = i + 1
            if j < len(glob) and glob[j] == "!":
                j += 1
            if j < len(glob) and glob[j] == "]":
                j += 1
            close = glob.find("]", j)
            if close < 0:
                return f"the [ at character {i + 1} is never closed by ]"
            i = close
        i += 1
    return None


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


def write_whole(path: Path, data: bytes) -> None:
    """`data` to `path` whole or not at all, mode 0600 (a snapshot: `sandbox snapshot FILE`,
    `serve --record`, `Sandbox.snapshot`); OSError when it cannot, `path` as it was."""
    target = snapshot_target(path)
    fd, name = temporary_beside(target)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(name, target)
    except BaseException:
        os.unlink(name)
        raise


def snapshot_target(path: Path) -> Path:
    """The file a snapshot for `path` replaces: the one a symbolic link names, written through
    the link; an OSError for a path that is there and is no regular file (a device, a FIFO, a
    folder), which a rename would put a file in place of."""
    import errno
    import stat

    try:
        # strict: a loop of links is an OSError (ELOOP), not the link itself to write over.
        target = Path(os.path.realpath(path, strict=True))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise
        # Not there yet (made where a link points), or no folder to make it in: the write
        # says why.
        return Path(os.path.realpath(path))
    try:
        mode = os.stat(target).st_mode
    except OSError:
        return target  # its folder cannot be read: the write says why
    if not stat.S_ISREG(mode):
        raise OSError(errno.EINVAL, "it is not a regular file", str(path))
    return target


def temporary_beside(path: Path) -> tuple[int, str]:
    """A new temporary file (mode 0600) in `path`'s folder, to be renamed onto `path`."""
    import tempfile  # here: the admin client's other calls have no need of it

    return tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
