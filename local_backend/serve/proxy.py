"""`serve --proxy-to URL`: each `/v1` request forwarded to a real service, its answer read
within a cap and a time, and both held to the OpenAPI document (local_backend.sandbox.contract).
The answers being read share serve's one budget of bodies (local_backend.serve.memory) with the
requests' bodies: an answer with no room left in it is the proxy's 503, read no further.

Imported only in proxy mode: plain `serve` loads neither httpx nor jsonschema_rs.
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
import re
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import httpx

from convrisk.api_client.endpoint import Scrubber
from convrisk.api_client.errors import ServiceError
from convrisk.api_client.records import REPLAYED_HEADER
from convrisk.api_client.text import printable
from convrisk.local_backend.sandbox.contract import Contract, Violation, violation
from convrisk.local_backend.sandbox.wire import Answer, json_answer
from convrisk.local_backend.serve.memory import RETRY_AFTER, Hold

if TYPE_CHECKING:
    from convrisk.local_backend.serve.recording import Recorder

# `serve --validate`: report passes every answer through, enforce turns a violating one to 502.
MODES = ("report", "enforce")
# `serve --proxy-timeout`: the whole exchange with the upstream, connect to last byte.
DEFAULT_TIMEOUT = 30.0
MAX_TIMEOUT = 3600.0
# The request headers forwarded (no hop-by-hop ones, no Host, no cookies): what the client says
# of itself and of its body, its token and its idempotency key.
FORWARDED_REQUEST = ("authorization", "idempotency-key", "content-type", "accept", "user-agent")
# What a header value may hold (RFC 9110 field-value: visible characters, spaces and tabs).
_HEADER_VALUE = re.compile(r"[\t\x20-\x7e\x80-\xff]*")
# The answer headers passed back; content-type included as sent (or absent).
FORWARDED_ANSWER = (
    "content-type",
    "retry-after",
    "www-authenticate",
    "allow",
    "location",
    REPLAYED_HEADER.lower(),
)
# The largest status HTTP has (RFC 9110 15).
MAX_STATUS = 599
# Connections kept open to the upstream.
MAX_CONNECTIONS = 100


@dataclass(frozen=True)
class Forwarded:
    """What the upstream answered (or the proxy's own 502/504), and what broke the contract."""

    answer: Answer
    violations: list[Violation] = field(default_factory=list)
    # Whether the answer is the proxy's own (the upstream gave none usable).
    own: bool = False
    # A line for the log from `serve --record` (what of the answer was not recorded).
    note: str | None = None


def bad_gateway(status: int, message: str) -> Answer:
    """The proxy's own error answer, in the error shape (502 or 504)."""
    code = "gateway_timeout" if status == 504 else "bad_gateway"
    error = ServiceError(message, status=status, code=code)
    return json_answer(status, error.to_body())


class Proxy:
    """Forwards requests to one upstream base URL and checks each exchange; a `recorder`
    (`serve --record`) takes in each answer the upstream gave."""

    def __init__(
        self,
        upstream: str,
        mode: str,
        timeout: float,
        max_bytes: int,
        recorder: Recorder | None = None,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown validate mode {mode!r}")
        self.upstream = upstream.rstrip("/")
        self.mode = mode
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.contract = Contract.load()
        self.recorder = recorder
        # What this proxy adds to the Via header (RFC 9110 7.6.3); a request that comes back
        # with it went round a loop (--proxy-to naming this serve, directly or through another).
        self.via = f"1.1 convrisk-serve-{secrets.token_hex(6)}"
        # Made now, not on the first request (its TLS context takes a while to build); it
        # connects on the server's event loop, when the first request comes.
        self._client = httpx.AsyncClient(
            follow_redirects=False,
            timeout=httpx.Timeout(timeout),
            limits=httpx.Limits(max_connections=MAX_CONNECTIONS),
            # The environment's proxy and .netrc are for the user's own clients; the upstream
            # is named on the command line and its token comes from the client.
            trust_env=False,
        )
        try:
            # What every forward does first: a host httpx cannot encode (IDNA) or a control
            # character fails here, at start, not as a 500 on each request.
            self._client.build_request("GET", self.upstream + "/v1")
        except (httpx.InvalidURL, ValueError) as exc:
            raise ValueError(f"not a URL a request can go to: {_reason(exc)}") from None

    def check_request(
        self, method: str, path: str, query: str, headers: Sequence[tuple[str, str]], body: bytes
    ) -> list[Violation]:
        """How the client's request breaks the document (reported, never refused here)."""
        found = self.contract.check_request(method, path, query, dict(headers), body)
        return scrubbed(found, headers)

    async def forward(
        self,
        method: str,
        path: str,
        query: str,
        headers: Sequence[tuple[str, str]],
        body: bytes,
        hold: Hold,
    ) -> Forwarded:
        """The upstream's answer to this request, checked; never more than `max_bytes` read,
        nor more than `hold` can take of the shared budget, never longer than `timeout`
        seconds."""
        if any(name == "via" and self.via in value for name, value in headers):
            return self._failed(
                502,
                "upstream",
                "the upstream sent the request back to this proxy: --proxy-to names this serve "
                "itself (or a proxy in front of it)",
            )
        try:
            async with asyncio.timeout(self.timeout):
                got = await self._exchange(method, path, query, headers, body, hold)
        except TimeoutError:
            return self._failed(
                504, "upstream", f"the upstream did not answer within {self.timeout:g} seconds"
            )
        except httpx.ConnectError as exc:
            return self._failed(502, "upstream", f"cannot connect to the upstream: {_reason(exc)}")
        except httpx.TimeoutException:
            return self._failed(
                504, "upstream", f"the upstream did not answer within {self.timeout:g} seconds"
            )
        except httpx.HTTPError as exc:
            return self._failed(502, "upstream", f"the upstream failed: {_reason(exc)}")
        if isinstance(got, Forwarded):
            return got
        found = self.contract.check_answer(method, path, got.status, dict(got.headers), got.body)
        # An upstream that echoes the client's token in a body: never into the log or journal.
        found = scrubbed(found, headers)
        note = None
        if self.recorder is not None:
            # Whatever the client is given: the upstream did answer this, and holds it so.
            note = self.recorder.observe(method, path, got.status, got.headers, got.body)
            note = None if note is None else _scrub(headers)(note)
        if found and self.mode == "enforce":
            first = found[0].line()
            others = len(found) - 1
            more = f" (and {others} more)" if others else ""
            message = f"The upstream's answer breaks the contract: {first}{more}"
            return Forwarded(bad_gateway(502, message), found, own=True, note=note)
        return Forwarded(got, found, note=note)

    async def _exchange(
        self,
        method: str,
        path: str,
        query: str,
        headers: Sequence[tuple[str, str]],
        body: bytes,
        hold: Hold,
    ) -> Answer | Forwarded:
        url = self.upstream + path + (f"?{query}" if query else "")
        # Spaces and tabs around a value are not part of it (RFC 9110 5.5), and httpx refuses
        # to send them.
        chosen = [
            (name, value.strip(" \t")) for name, value in headers if name in FORWARDED_REQUEST
        ]
        # The proxies the request came through, this one last.
        chosen.append(("via", ", ".join([v for n, v in headers if n == "via"] + [self.via])))
        # No compressed answers: the cap counts the bytes as they arrive and as they are kept.
        chosen.append(("accept-encoding", "identity"))
        # The headers came as latin-1 (byte for byte): sent on as those bytes (httpx would
        # encode text as ASCII, and fail on a User-Agent in UTF-8).
        sent = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in chosen]
        client = self._client
        request = client.build_request(method, url, headers=sent, content=body or None)
        response = await client.send(request, stream=True)
        try:
            if response.status_code > MAX_STATUS:
                # httpx reads any three digits; uvicorn cannot send such a status line.
                return self._failed(
                    502,
                    "status",
                    f"the upstream answered status {response.status_code}, which HTTP does not "
                    f"have (100 to {MAX_STATUS})",
                )
            length = response.headers.get("content-length", "")
            said = int(length) if length.isdigit() else None
            if said is not None and said > self.max_bytes:
                return self._too_large(said)
            # An answer of a given length takes its room at once (h11 reads no more than it).
            if said is not None and not hold.take(said):
                return self._no_room(hold, f"{said} bytes")
            # One buffer grown in place, whose bytes become the answer's without a copy: pieces
            # joined at the end would hold the answer twice at that moment.
            received = io.BytesIO()
            size = 0
            async for chunk in response.aiter_raw():
                size += len(chunk)
                if size > self.max_bytes:
                    return self._too_large(None)
                if said is None and not hold.take(len(chunk)):
                    return self._no_room(hold, f"over {size - len(chunk)} bytes")
                received.write(chunk)
        finally:
            await response.aclose()
        # As latin-1, byte for byte (httpx would decode UTF-8, which the answer cannot carry).
        raw = ((n.decode("latin-1").lower(), v.decode("latin-1")) for n, v in response.headers.raw)
        kept = tuple((name, value) for name, value in raw if name in FORWARDED_ANSWER)
        for name, value in kept:
            if not _HEADER_VALUE.fullmatch(value):
                # uvicorn refuses to send it, and the client would get no answer at all.
                return self._failed(
                    502,
                    "upstream",
                    f"the upstream's {name} header holds a character HTTP does not allow "
                    f"in a header value: {printable(value)}",
                )
        return Answer(response.status_code, received.getvalue(), kept)

    def _too_large(self, length: int | None) -> Forwarded:
        said = f"{length} bytes" if length is not None else f"more than {self.max_bytes} bytes"
        return self._failed(
            502, "size", f"the upstream's answer is {said}, over the cap of {self.max_bytes} bytes"
        )

    @staticmethod
    def _no_room(hold: Hold, size: str) -> Forwarded:
        """The proxy's 503 for an answer that the shared budget of bodies has no room for: the
        upstream did answer (the request took effect there), but serve cannot hold it now."""
        budget = hold.budget
        error = ServiceError(
            f"The upstream's answer ({size}) does not fit in what the server holds of bodies at "
            f"once ({budget.mib()} across all requests); the upstream did answer: retry later.",
            status=503,
            code="service_unavailable",
        )
        answer = json_answer(503, error.to_body(), (("retry-after", str(RETRY_AFTER)),))
        return Forwarded(answer, own=True)

    @staticmethod
    def _failed(status: int, rule: str, message: str) -> Forwarded:
        found = violation(rule, "", message)
        text = message[0].upper() + message[1:] + "."
        return Forwarded(bad_gateway(status, text), [found], own=True)


def scrubbed(found: list[Violation], headers: Sequence[tuple[str, str]]) -> list[Violation]:
    """The violations with the client's bearer token (if any) hidden in their messages."""
    if not found:
        return found
    scrub = _scrub(headers)
    return [dataclasses.replace(v, where=scrub(v.where), message=scrub(v.message)) for v in found]


def _scrub(headers: Sequence[tuple[str, str]]) -> Callable[[str], str]:
    """What hides the client's bearer token (if any) in a text."""
    token = None
    for name, value in headers:
        if name == "authorization":
            token = value.strip().partition(" ")[2].strip() or None
    return (lambda text: text) if token is None else Scrubber(token).text


def _reason(exc: Exception) -> str:
    """An httpx error in a few printable words."""
    return printable(str(exc) or type(exc).__name__)
