"""One request to the interface as it is (`convrisk api`): the answer whatever its status, and
`--paginate`'s walk over a list path.

Both backends answer through `Backend.send`: the remote one over HTTP with its token and
retries, the local one through the wire rules `convrisk serve` applies (local_backend.sandbox.wire),
without a socket. What reaches the service is the same bytes either way.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, quote, unquote_to_bytes, urlencode, urlsplit

from convrisk.api_client import resources
from convrisk.api_client.errors import (
    APIError,
    InvalidRequestError,
    ServiceError,
    error_from_response,
)
from convrisk.api_client.page import Page
from convrisk.api_client.pagination import paginate
from convrisk.api_client.params import shown_id

# Every PATH is under the interface's prefix (the resources' description has it).
API_PREFIX = f"{resources.API_PREFIX}/"
# Characters sent as they are in a path or a query; anything else is percent-encoded (what
# httpx does to a path it is given), so both backends receive the same bytes.
_PATH_SAFE = "/%:@!$&'()*+,;=-._~"
_QUERY_SAFE = _PATH_SAFE + "?"
# The longest target sent, percent-encoded: well inside httpx's 64 KiB limit on a whole URL
# (which also holds the base URL), so a PATH is refused alike on both backends, before sending.
MAX_TARGET = 32 * 1024
# How many layers of percent-encoding a PATH may carry (`%252e` is two) before it is refused.
_MAX_DECODES = 4


@dataclass(frozen=True)
class RawAnswer:
    """What the service answered: status, reason phrase and body, as sent, where a redirect
    pointed (its Location header), and whether a retried DELETE found its object gone."""

    status: int
    body: bytes
    reason: str = ""
    location: str = ""
    # A 404 to a retried DELETE after an attempt whose answer was lost: that attempt deleted it.
    gone: bool = False
    # The Idempotency-Key the request carried (a POST's, made by the client), else None.
    idempotency_key: str | None = None
    # The answer's Content-Type header as sent ("" when it had none).
    content_type: str = ""

    @property
    def ok(self) -> bool:
        """Whether the command succeeds: a status below 300 (redirects are not followed), or a
        DELETE found done by a retry (`gone`)."""
        return self.status < 300 or self.gone

    def json(self) -> Any:
        """The body parsed as JSON (ValueError when it is not JSON)."""
        return json.loads(self.body)

    def error(self) -> APIError:
        """The error of an answer of 300 or more, with its status (exit 3, 4 or 1)."""
        if self.status < 400:
            return redirect_error(self.status, self.reason, self.location)
        try:
            body: object = self.json() if self.body else None
        except (ValueError, RecursionError):
            body = None
        return error_from_response(self.status, body, reason=self.reason)


Send = Callable[[str, str, bytes | None], RawAnswer]


def redirect_error(status: int, reason: str, location: str) -> ServiceError:
    """The error of a 3xx answer: the client follows no redirect (exit 1)."""
    try:
        host = urlsplit(location).hostname or ""
        valid = bool(location)
    except ValueError:
        host, valid = "", False
    where = f" to {host}" if host else " to an invalid Location" if location and not valid else ""
    return ServiceError(
        f"The service answered HTTP {status} {reason}".rstrip()
        + f", a redirect{where}; redirects are not followed (check base_url).",
        status=status,
    )


def api_target(path: str) -> str:
    """PATH as given to `convrisk api`, checked and percent-encoded: path and query string.

    It must start with /v1/ and may carry a query string; `.` and `..` segments and fragments
    are refused, however the path is written (see `_check_stays_under_prefix`), so the request
    stays under /v1/ whatever a proxy or server on the way decodes.
    """
    if not path.startswith(API_PREFIX):
        raise InvalidRequestError(
            f"PATH must start with {API_PREFIX} (as in /v1/conversations), not {shown_id(path)}.",
            param="PATH",
        )
    if "#" in path:
        raise InvalidRequestError("PATH cannot carry a fragment (#...).", param="PATH")
    if any(not char.isprintable() or char.isspace() for char in path):
        raise InvalidRequestError(
            "PATH cannot contain spaces or control characters; percent-encode them "
            "(%20 for a space).",
            param="PATH",
        )
    where, _, query = path.partition("?")
    _check_stays_under_prefix(where)
    target = quote(where, safe=_PATH_SAFE)
    if query:
        target += "?" + quote(query, safe=_QUERY_SAFE)
    if len(target) > MAX_TARGET:
        raise InvalidRequestError(
            f"PATH is too long: {len(target)} characters once percent-encoded, over the "
            f"{MAX_TARGET} this client sends.",
            param="PATH",
        )
    return target


def _check_stays_under_prefix(where: str) -> None:
    """Refuse a path that is, or could be read as, leaving API_PREFIX or holding dot segments.

    Servers and proxies differ in what they decode, so the check reads the path the most
    decoded way (`_decoded`: percent-decoded until it no longer changes, refusing what some
    server would read as something else), backslashes as slashes, each segment without its
    `;parameters` (Tomcat and Spring drop them: `/v1/..;/admin` is `/v1/../admin` there), and
    dot segments resolved.
    """
    decoded = _decoded(where)
    segments = [segment.partition(";")[0] for segment in decoded.replace("\\", "/").split("/")]
    resolved: list[str] = []
    for segment in segments[1:]:
        if segment == "..":
            if resolved:
                resolved.pop()
        elif segment != ".":
            resolved.append(segment)
    prefix = API_PREFIX.strip("/")
    if not resolved or resolved[0] != prefix or len(resolved) < 2:
        read_as = shown_id("/" + "/".join(resolved))
        raise InvalidRequestError(
            f"PATH leads outside {API_PREFIX} once decoded (as {read_as}): {shown_id(where)} is "
            "refused.",
            param="PATH",
        )
    # Dots and spaces alone are a dot segment too where a server trims a segment's trailing
    # dots and spaces (Windows, IIS: `..%20` and `...` are `..`).
    if any(segment and not segment.strip(". ") for segment in segments):
        raise InvalidRequestError(
            f"PATH cannot contain . or .. segments, however encoded ({shown_id(where)}): it must "
            f"stay under {API_PREFIX}.",
            param="PATH",
        )


# An IIS-style `%uXXXX` escape, which some servers decode as the character U+XXXX.
_U_ESCAPE = re.compile(rb"%[uU][0-9a-fA-F]{4}")


def _decoded(where: str) -> str:
    """The path as the most decoding server reads it: percent-decoded (as bytes) until it no
    longer changes, then UTF-8. Refused (InvalidRequestError): a path encoded more than
    _MAX_DECODES times over, a `%u` escape at any level, bytes that are not UTF-8 (an overlong
    form such as `%c0%ae` is a dot to a lax decoder), a NUL (C servers end the path there), any
    other control or invisible character (CR/LF, a zero width space: what the raw PATH may not
    hold either), and
    any character that Unicode's NFKC normalization reads as `.`, `/` or a backslash (the
    fullwidth full stop U+FF0E of `/v1/\uff0e\uff0e/x`)."""
    shown = shown_id(where)
    data = where.encode("utf-8", "surrogatepass")
    for _ in range(_MAX_DECODES):
        escape = _U_ESCAPE.search(data)
        if escape is not None:
            raise InvalidRequestError(
                f"PATH holds a %u escape ({escape.group().decode()}), which some servers decode "
                f"as a character: {shown} is refused.",
                param="PATH",
            )
        again = unquote_to_bytes(data)
        if again == data:
            break
        data = again
    else:
        raise InvalidRequestError(
            f"PATH is percent-encoded more than {_MAX_DECODES} times over: it cannot be checked.",
            param="PATH",
        )
    try:
        decoded = data.decode("utf-8")  # strict: overlong forms and lone surrogates fail
    except UnicodeDecodeError:
        raise InvalidRequestError(
            f"PATH is not UTF-8 once percent-decoded (an overlong form such as %c0%ae is a dot "
            f"to some servers): {shown} is refused.",
            param="PATH",
        ) from None
    if "\0" in decoded:
        raise InvalidRequestError(
            f"PATH holds a NUL character once percent-decoded (%00): {shown} is refused.",
            param="PATH",
        )
    hidden = next((char for char in decoded if not char.isprintable()), None)
    if hidden is not None:
        # As the raw PATH is refused them: CR/LF, tabs, and the format characters (a zero
        # width space, a BOM) that some servers drop, making `..%e2%80%8b` a `..` segment.
        raise InvalidRequestError(
            f"PATH holds U+{ord(hidden):04X}, a control or invisible character, once "
            f"percent-decoded: {shown} is refused.",
            param="PATH",
        )
    if not decoded.isascii():
        import unicodedata

        for char in decoded:
            if char.isascii():
                continue
            normal = unicodedata.normalize("NFKC", char)
            if any(mark in normal for mark in "./\\"):
                raise InvalidRequestError(
                    f"PATH holds U+{ord(char):04X}, which Unicode normalization (NFKC) reads as "
                    f"{normal!r}: {shown} is refused.",
                    param="PATH",
                )
    return decoded


def with_cursor(target: str, cursor: str) -> str:
    """`target` with `starting_after=cursor` in its query (replacing one that is there)."""
    where, _, query = target.partition("?")
    pairs = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k != "starting_after"]
    pairs.append(("starting_after", cursor))
    return f"{where}?{urlencode(pairs, quote_via=quote)}"


def with_default(target: str, name: str, value: str) -> str:
    """A collection's `target` (`/v1/<name>`) with `name=value` added to its query, unless the
    query has `name` already; any other target as it is."""
    where, _, query = target.partition("?")
    if where.count("/") != 2 or any(
        key == name for key, _ in parse_qsl(query, keep_blank_values=True)
    ):
        return target
    return f"{target}{'&' if query else '?'}{name}={quote(value, safe='')}"


def check_paginate(method: str, target: str) -> None:
    """--paginate walks forward through a GET list: other uses are refused before any request."""
    if method != "GET":
        raise InvalidRequestError(
            f"--paginate follows the pages of a list (GET), not of {method}.", param="--paginate"
        )
    _, _, query = target.partition("?")
    if any(name == "ending_before" for name, _ in parse_qsl(query, keep_blank_values=True)):
        raise InvalidRequestError(
            "--paginate goes forward with starting_after; drop ending_before from PATH.",
            param="--paginate",
        )


def pages(send: Send, target: str) -> Iterator[Page[Any]]:
    """Each page (its `data` and `has_more`) of a list, the first at `target`, following
    `has_more`. Its items are what the service sent, objects or not; an item's id is "" where
    it has none (only the last one's matters, to go on from).

    An error answer is raised (APIError with its status); an answer that is not a list page, or
    a page that makes no progress, is a ServiceError: nothing loops.
    """
    import json

    def fetch(size: int, cursor: str | None) -> Page[Any]:
        answer = send("GET", target if cursor is None else with_cursor(target, cursor), None)
        if not answer.ok:
            raise answer.error()
        try:
            # As `api` takes any body: NaN, Infinity and 1e400 are read (as floats), and the
            # printer writes each as a string (cli/cells.finite_json), never as no JSON at all.
            page = json.loads(answer.body)
        except (ValueError, RecursionError):
            page = None
        if (
            not isinstance(page, dict)
            or not isinstance(page.get("data"), list)
            or not isinstance(page.get("has_more"), bool)
        ):
            raise ServiceError(
                f"{target.partition('?')[0]} did not answer with a list page (an object with "
                "data and has_more): --paginate needs a list path, such as /v1/conversations."
            )
        items: list[Any] = page["data"]
        ids = [_id_of(item) for item in items]
        if page["has_more"] and items and not ids[-1]:
            raise ServiceError("The last item of a page has no id to go on from.")
        return Page(page["has_more"], records=items, ids=ids)

    start = None
    _, _, query = target.partition("?")
    for name, value in parse_qsl(query, keep_blank_values=True):
        if name == "starting_after":
            start = value
    yield from paginate(fetch, None, start, sys.maxsize)  # never cut: no page is that long


def _id_of(item: object) -> str:
    """An item's id, "" where it has none that is a string."""
    item_id = item.get("id") if isinstance(item, dict) else None
    return item_id if isinstance(item_id, str) else ""
