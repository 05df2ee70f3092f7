"""What uvicorn's HTTP protocols lack, added by subclassing them: the one module of convrisk that
uses uvicorn's internals (pyproject.toml bounds uvicorn's version for them).

Added: a deadline for each request head (uvicorn has none: silent or half-sent connections would
hold every descriptor), a JSON body on the 400 for unparseable HTTP, the registry of open
connections an injected drop needs, an answer's head and body sent in one write, and the hand-over
of a request with a method llhttp does not know to h11, so that it gets its 405.

What is used beyond uvicorn's public `Config(http=...)`: the classes `HttpToolsProtocol` and
`H11Protocol`, their constructor arguments, the attributes `transport`, `client`, `loop`,
`cycle.response_complete`, `timeout_keep_alive_task`, `connections`, `config`, `server_state`,
`app_state`, and the methods `connection_made`, `connection_lost`, `data_received`,
`on_message_begin`, `on_message_complete` and `send_400_response`.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, ClassVar, cast

from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from convrisk.api_client.errors import InvalidRequestError

from .faults import Connections

# The head of a request (request line and headers) must arrive within this many seconds of the
# connection opening or of its first byte.
HEAD_SECONDS = 10.0
# The methods of the interface; a request with any other method is parsed by h11 (below).
_FAST_METHODS = (b"GET", b"POST", b"PUT", b"DELETE")


def http_protocol(connections: Connections) -> type[asyncio.Protocol]:
    """The protocol class for `uvicorn.Config(http=...)`, registering into `connections`."""
    slow = type("ConvriskH11", (_SlowProtocol,), {"registry": connections})
    return type("ConvriskHttpTools", (_FastProtocol,), {"registry": connections, "slow": slow})


class OneWrite:
    """A transport that sends an answer's head together with its body, in one write.

    uvicorn writes the head when the response starts and the body next; on its own that is two
    send calls and two TCP segments per answer (the client woken twice). A head is held until
    the next write, or until the event loop turns (a head with no body write after it).
    """

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self.transport = transport
        self._loop = loop
        self._held: bytes | None = None

    def write(self, data: bytes) -> None:
        """Send `data`, or hold it when it is an answer's head."""
        if self._held is not None:
            data, self._held = self._held + data, None
        elif data.startswith(b"HTTP/1.1 ") and data.endswith(b"\r\n\r\n"):
            self._held = data
            self._loop.call_soon(self.flush)
            return
        self.transport.write(data)

    def flush(self) -> None:
        """Send a head still held."""
        if self._held is not None:
            data, self._held = self._held, None
            self.transport.write(data)

    def close(self) -> None:
        """Send what is held, then close."""
        self.flush()
        self.transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


class _Timed:
    """What uvicorn's HTTP protocols lack, mixed into both: a deadline for each request head,
    a registry of connections (for an injected drop), and a JSON body on a 400 for bad HTTP."""

    registry: ClassVar[Connections]
    _deadline: asyncio.TimerHandle | None = None
    # Provided by the uvicorn protocol this is mixed into.
    transport: asyncio.Transport
    client: tuple[str, int] | None
    loop: asyncio.AbstractEventLoop
    cycle: Any

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Register the connection and give it HEAD_SECONDS to send a request."""
        if not isinstance(transport, OneWrite):  # (a connection handed over has one)
            one = OneWrite(cast(asyncio.Transport, transport), asyncio.get_running_loop())
            transport = cast(asyncio.BaseTransport, one)
        super().connection_made(transport)  # type: ignore[misc]
        if self.client is not None:
            self.registry.open[self.client] = self.transport
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        """Forget the connection."""
        self._disarm()
        if self.client is not None:
            self.registry.open.pop(self.client, None)
        super().connection_lost(exc)  # type: ignore[misc]

    def data_received(self, data: bytes) -> None:
        """The first byte of a request starts its deadline; a complete head ends it."""
        if self._deadline is None and self._between_requests():
            self._arm()
        super().data_received(data)  # type: ignore[misc]
        if not self._between_requests():
            self._disarm()

    def send_400_response(self, msg: str) -> None:
        """Answer unparseable HTTP with a JSON error (uvicorn's is text), then close."""
        error = InvalidRequestError(
            "The request is not valid HTTP/1.1 (request line, a header or Content-Length)."
        )
        body = json.dumps(error.to_body(), separators=(",", ":")).encode("ascii")
        head = (
            "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
        ).encode("ascii")
        self.transport.write(head + body)
        self.transport.close()

    def _between_requests(self) -> bool:
        return self.cycle is None or bool(self.cycle.response_complete)

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(HEAD_SECONDS, self._expire)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expire(self) -> None:
        self._deadline = None
        if self._between_requests() and not self.transport.is_closing():
            self.transport.close()


class _SlowProtocol(_Timed, H11Protocol):
    """h11 (pure Python): takes any method token, so FOO reaches the app and gets its 405."""


class _FastProtocol(_Timed, HttpToolsProtocol):
    """httptools (llhttp, in C) for GET, POST, PUT and DELETE; another method hands the
    connection to _SlowProtocol, since llhttp refuses methods it does not know with a bare
    400 before the app could answer 405 with Allow."""

    slow: ClassVar[type[_SlowProtocol]]
    _in_message = False

    def on_message_begin(self) -> None:
        """A request has begun (the parser holds part of it)."""
        self._in_message = True
        super().on_message_begin()

    def on_message_complete(self) -> None:
        """The request has been read whole."""
        self._in_message = False
        super().on_message_complete()

    def data_received(self, data: bytes) -> None:
        """Parse here, or give the connection to h11 when a request starts with another method."""
        if not self._in_message and self._between_requests() and _foreign_method(data):
            self._hand_over(data)
            return
        super().data_received(data)

    def _hand_over(self, data: bytes) -> None:
        self._disarm()
        if self.timeout_keep_alive_task is not None:
            self.timeout_keep_alive_task.cancel()
            self.timeout_keep_alive_task = None
        self.connections.discard(self)
        slow = self.slow(
            config=self.config,
            server_state=self.server_state,
            app_state=self.app_state,
            _loop=self.loop,
        )
        self.transport.set_protocol(slow)
        slow.connection_made(self.transport)
        slow.data_received(data)


def _foreign_method(data: bytes) -> bool:
    """Whether the request that starts with `data` has a method other than the four."""
    head = data.lstrip(b"\r\n")[:8]
    method, space, _ = head.partition(b" ")
    if not space:
        # The method is not whole yet: foreign only if no fast method starts this way.
        return not any(known.startswith(method) for known in _FAST_METHODS)
    return method not in _FAST_METHODS
