"""Requests captured instead of sent (`--as-curl`): a transport that hands each request the
Session built to a callback and sends nothing.

The request is the one the remote backend would send, built by the same code (Session), so
what is shown is what would go on the wire. No answer is made up: every captured request
raises `Captured`, which the caller treats as "shown, not sent".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import httpcore
import httpx

# What the capturing Session sends as its token: the real token never reaches it, so it cannot
# reach a printed line. Any header value that carries it is shown as a variable instead.
PLACEHOLDER_TOKEN = "CONVRISK-TOKEN-PLACEHOLDER"
# The base URL of a capture with no service chosen (the local backend): shown as a variable.
PLACEHOLDER_BASE_URL = "https://convrisk-base-url.invalid"


@dataclass(frozen=True)
class CapturedRequest:
    """One request as it would be sent: method, full URL, headers in order, body bytes."""

    method: str
    url: str
    headers: tuple[tuple[str, str], ...]
    body: bytes


class Captured(Exception):
    """A request was captured and not sent: there is no answer to go on with.

    Not a ConvriskError on purpose: code that handles a failed request must not take a request
    that was never sent for one; a loop whose requests do not depend on each other's answers
    catches it and goes on.
    """

    def __init__(self, request: CapturedRequest) -> None:
        super().__init__(f"{request.method} {request.url} was captured, not sent")
        self.request = request


class CaptureTransport:
    """A transport that sends nothing: each request goes to `record`, then `Captured` is
    raised. Requests are handed over one at a time, in the order they are made."""

    def __init__(self, record: Callable[[CapturedRequest], None]) -> None:
        self._record = record

    def handle_request(self, request: httpcore.Request) -> httpx.Response:
        """Record the request; raise Captured (there is no answer)."""
        headers = tuple(
            (name.decode("latin-1"), value.decode("latin-1")) for name, value in request.headers
        )
        # The URL as httpx writes it: the Host header is its netloc (an IPv6 host in brackets,
        # no default port).
        host = next(value for name, value in headers if name.lower() == "host")
        url = request.url
        if not isinstance(request.stream, Iterable):
            raise TypeError("the request body must be a synchronous stream")
        captured = CapturedRequest(
            method=request.method.decode("ascii"),
            url=f"{url.scheme.decode('ascii')}://{host}{url.target.decode('ascii')}",
            headers=headers,
            body=b"".join(request.stream),
        )
        self._record(captured)
        raise Captured(captured)

    def close(self) -> None:
        """Nothing to close: nothing was opened."""
