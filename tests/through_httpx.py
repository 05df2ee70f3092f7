"""An httpx transport (MockTransport, HTTPTransport) as a Session's transport, for tests that
script answers with httpx or compare the client with httpx's own transport."""

from __future__ import annotations

from collections.abc import Iterable

import httpcore
import httpx


class ThroughHttpx:
    """Hands each request, as the httpx.Request that httpx would make of it, to `transport`."""

    def __init__(self, transport: httpx.BaseTransport) -> None:
        self._transport = transport

    def handle_request(self, request: httpcore.Request) -> httpx.Response:
        """The httpx transport's answer to the request."""
        if not isinstance(request.stream, Iterable):
            raise TypeError("the request body must be a synchronous stream")
        host = next(value for name, value in request.headers if name.lower() == b"host")
        url = request.url
        sent = httpx.Request(
            request.method.decode("ascii"),
            f"{url.scheme.decode('ascii')}://{host.decode('ascii')}{url.target.decode('ascii')}",
            headers=request.headers,
            stream=httpx.ByteStream(b"".join(request.stream)),
            extensions=request.extensions,
        )
        return self._transport.handle_request(sent)

    def close(self) -> None:
        """Close the httpx transport."""
        self._transport.close()
