"""What uvicorn's HTTP protocols lack, added by subclassing them: the one module of convrisk that
uses uvicorn's internals (pyproject.toml bounds uvicorn's version for them).

Added: a deadline and a size cap for each request head (uvicorn has neither: silent, half-sent or
endless heads would hold every descriptor and fill memory), one budget that the heads not yet
complete share across all connections (local_backend.serve.memory: past it, 503 and close), memory
given back once connections close, answers in the JSON error shape for what uvicorn refuses
itself (400 for unparseable HTTP, 431 for a head over the cap), a lingering
close (the write side shut, what the client still sends read and dropped for a bounded time) so
that a client still sending reads its answer instead of a reset, the registry of open
connections an injected drop needs, an answer's head and body sent in one write, and the
hand-over of a request with a method llhttp does not know to h11, so that it gets its 405, in
order after the requests pipelined before it.

What is used beyond uvicorn's public `Config(http=...)`: the classes `HttpToolsProtocol` and
`H11Protocol`, their constructor arguments, the attributes `transport`, `client`, `loop`, `flow`,
`conn`, `pipeline`, `cycle.response_complete`, `timeout_keep_alive_task`, `connections`,
`config`, `server_state`, `app_state`, `parser`, `headers` and `url` (the last three and `conn`
replaced or emptied to let go of a refused head), and the methods `connection_made`,
`connection_lost`, `data_received`, `on_message_begin`, `on_headers_complete`,
`on_message_complete`, `on_response_complete` and `send_400_response`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Callable
from typing import Any, ClassVar, cast

import h11
import httptools
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from convrisk.api_client.errors import APIError, InvalidRequestError, ServiceError
from convrisk.api_client.params import MAX_BODY_BYTES, MAX_HEAD_BYTES
from convrisk.local_backend.serve.faults import Connections
from convrisk.local_backend.serve.memory import RETRY_AFTER, Memory

# The head of a request (request line and headers) must arrive within this many seconds of the
# connection opening or of its first byte.
HEAD_SECONDS = 10.0
# A head over MAX_HEAD_BYTES (api_client.params) is answered 431 and the connection closed. It
# is counted per piece fed to the parser, so a head a piece shorter than the cap always passes.
_PIECE = 4096
# A lingering close: after the answer, what the client still sends is read and dropped for at
# most this long and this much, so that it can read the answer (a close with unread data would
# send a reset, and the client would lose the answer it has not read yet). A body refused is
# read to its end up to LINGER_BYTES (the CLI sends JSON arguments of up to 64 MiB); a refused
# head, whose sender is no HTTP client, a little.
LINGER_SECONDS = 5.0
LINGER_BYTES = 64 * MAX_BODY_BYTES
LINGER_HEAD_BYTES = 16 * MAX_HEAD_BYTES
# A body up to this size goes out joined to its head; a larger one after it (joining would copy
# it whole: a big answer of the proxy held twice).
_JOINED_BYTES = 256 * 1024
# The methods of the interface; a request with any other method is parsed by h11 (below).
_FAST_METHODS = (b"GET", b"POST", b"PUT", b"DELETE")
# A request line, for finding where a pipelined request with another method starts.
_TOKEN = rb"[!#$%&'*+.^_`|~0-9A-Za-z-]"
_REQUEST_LINE = re.compile(rb"(?<!" + _TOKEN + rb")(" + _TOKEN + rb"+) [^ \r\n]+ HTTP/")


def http_protocol(connections: Connections, memory: Memory) -> type[asyncio.Protocol]:
    """The protocol class for `uvicorn.Config(http=...)`, registering into `connections` and
    holding incomplete heads within `memory.heads`."""
    shared = {"registry": connections, "memory": memory}
    slow = type("ConvriskH11", (_SlowProtocol,), shared)
    return type("ConvriskHttpTools", (_FastProtocol,), {**shared, "slow": slow})


class OneWrite:
    """A transport that sends an answer's head together with its body, in one write.

    uvicorn writes the head when the response starts and the body next; on its own that is two
    send calls and two TCP segments per answer (the client woken twice). A head is held until
    the next write, or until the event loop turns (a head with no body write after it).
    `closer`, when set, is asked first on close (the protocol's lingering close); it returns
    whether it took the close over.
    """

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self.transport = transport
        self._loop = loop
        self._held: bytes | None = None
        self.closer: Callable[[], bool] | None = None
        self._closing = False

    def write(self, data: bytes) -> None:
        """Send `data`, or hold it when it is an answer's head (nothing after a close)."""
        if self._closing:
            return
        if self._held is not None:
            if len(data) > _JOINED_BYTES:
                self.transport.write(self._held)
                self._held = None
            else:
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
        """Send what is held, then close (or let the protocol close lingeringly)."""
        self.flush()
        if self._closing:
            return
        self._closing = True
        if self.closer is not None and self.closer():
            return
        self.transport.close()

    def is_closing(self) -> bool:
        """Whether close() was called (a lingering close is a close)."""
        return self._closing or self.transport.is_closing()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


class _Timed:
    """What uvicorn's HTTP protocols lack, mixed into both: a deadline for each request head,
    a lingering close, a registry of connections (for an injected drop), the shared budget of
    incomplete heads, and JSON error answers for what the parser refuses."""

    registry: ClassVar[Connections]
    memory: ClassVar[Memory]
    # The bytes of this connection's incomplete head counted in memory.heads.
    _held = 0
    _deadline: asyncio.TimerHandle | None = None
    _lingering: asyncio.TimerHandle | None = None
    _linger_left = 0
    _refusing = False
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
        cast(OneWrite, transport).closer = self._close_lingeringly
        super().connection_made(transport)  # type: ignore[misc]
        if self.client is not None:
            self.registry.open[self.client] = self.transport
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        """Forget the connection, and give its memory back (soon, with others closing)."""
        self._hold(0)
        # The transport's reference back to this protocol, a cycle: without it, what the
        # connection held (its head's headers among it) is freed now, not at Python's next
        # full garbage collection, which a server at rest may never run.
        cast(OneWrite, self.transport).closer = None
        self.memory.released(self.loop)
        self._disarm()
        if self._lingering is not None:
            self._lingering.cancel()
        if self.client is not None:
            self.registry.open.pop(self.client, None)
        super().connection_lost(exc)  # type: ignore[misc]

    def data_received(self, data: bytes) -> None:
        """The first byte of a request starts its deadline; a complete head ends it. After a
        lingering close, what arrives is dropped (up to its bound)."""
        if self._lingering is not None:
            self._linger_left -= len(data)
            if self._linger_left < 0:
                self._raw().close()
            return
        if self._deadline is None and self._between_requests():
            self._arm()
        super().data_received(data)  # type: ignore[misc]
        if not self._between_requests():
            self._disarm()

    def send_400_response(self, msg: str) -> None:
        """Answer unparseable HTTP with a JSON error (uvicorn's is text), then close."""
        self._refuse(
            InvalidRequestError(
                "The request is not valid HTTP/1.1 (request line, a header or Content-Length)."
            )
        )

    def _refuse(self, error: APIError, retry_after: int | None = None) -> None:
        """Answer `error` in the error shape, then close lingeringly: the client may be in the
        middle of sending, and should read this answer rather than a reset."""
        body = json.dumps(error.to_body(), separators=(",", ":")).encode("ascii")
        retry = "" if retry_after is None else f"retry-after: {retry_after}\r\n"
        head = (
            f"HTTP/1.1 {error.status} {_REASONS[error.status]}\r\n"
            f"content-type: application/json\r\n{retry}"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
        ).encode("ascii")
        self.transport.write(head + body)
        self._refusing = True
        # What came of the refused head is never parsed further: let go of it now, not at the
        # end of the lingering close (refused connections must not hold what the budget bounds).
        self._drop_head()
        self._hold(0)
        self.memory.released(self.loop)
        self.transport.close()

    def _drop_head(self) -> None:
        """Let go of what the parser holds of a request head."""
        raise NotImplementedError

    def _incomplete_head(self) -> int:
        """The bytes of a request head this connection holds, not yet whole."""
        raise NotImplementedError

    def _account(self) -> None:
        """After the bytes read have been parsed: the incomplete head held, counted in the
        shared budget; one that would go past it is refused (503) and the connection closed.
        A head that arrives whole in one read holds nothing (it is not kept past the read)."""
        if self.transport.is_closing():
            self._hold(0)
            return
        if not self._hold(self._incomplete_head()):
            self._hold(0)
            self._too_many_heads()

    def _hold(self, size: int) -> bool:
        """Count `size` bytes for this connection in memory.heads; False (nothing changed) if
        that would go past the budget."""
        heads = self.memory.heads
        if size > self._held and not heads.take(size - self._held):
            return False
        if size < self._held:
            heads.give(self._held - size)
        self._held = size
        return True

    def _too_many_heads(self) -> None:
        heads = self.memory.heads
        who = "{}:{}".format(*self.client) if self.client else "a client"
        logging.getLogger("uvicorn.error").warning(
            "%s: incomplete request heads would go past %s across all connections: answered "
            "503, connection closed.",
            who,
            heads.mib(),
        )
        self._refuse(
            ServiceError(
                f"The server holds as many incomplete request heads as it takes ({heads.mib()} "
                "across all connections); retry later.",
                status=503,
                code="service_unavailable",
            ),
            retry_after=RETRY_AFTER,
        )

    def _too_large_head(self) -> None:
        who = "{}:{}".format(*self.client) if self.client else "a client"
        logging.getLogger("uvicorn.error").warning(
            "%s sent a request head over %d bytes: answered 431, connection closed.",
            who,
            MAX_HEAD_BYTES,
        )
        self._refuse(
            InvalidRequestError(
                f"The request head (request line and headers) is too large: over "
                f"{MAX_HEAD_BYTES} bytes.",
                status=431,
                code="request_header_fields_too_large",
            )
        )

    def _client_sending(self) -> bool:
        """Whether the client may still be sending the request being answered."""
        raise NotImplementedError

    def _close_lingeringly(self) -> bool:
        """On close: when the client is still sending, shut the write side (the answer goes
        out whole, then the end of the stream), drop what it sends for LINGER_SECONDS at most,
        then close. Whether it lingers (else the caller closes at once)."""
        if not (self._refusing or self._client_sending()):
            return False
        self._disarm()
        raw = self._raw()
        self._linger_left = LINGER_HEAD_BYTES if self._refusing else LINGER_BYTES
        self._lingering = self.loop.call_later(LINGER_SECONDS, raw.close)
        if raw.can_write_eof():
            raw.write_eof()
        raw.resume_reading()
        return True

    def _raw(self) -> asyncio.Transport:
        """The socket's own transport, under OneWrite."""
        return cast(OneWrite, self.transport).transport

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
            self._raw().close()


_REASONS = {400: "Bad Request", 431: "Request Header Fields Too Large", 503: "Service Unavailable"}


class _SlowProtocol(_Timed, H11Protocol):
    """h11 (pure Python): takes any method token, so FOO reaches the app and gets its 405.
    Its buffer is capped by `Config(h11_max_incomplete_event_size=MAX_HEAD_BYTES)`."""

    conn: h11.Connection

    def send_400_response(self, msg: str) -> None:
        """A head over the cap is a 431; other unparseable HTTP a 400 (both JSON)."""
        if len(self.conn.trailing_data[0]) > MAX_HEAD_BYTES:
            return self._too_large_head()
        super().send_400_response(msg)

    def data_received(self, data: bytes) -> None:
        """Parse, then count the head still incomplete in the shared budget."""
        super().data_received(data)
        self._account()

    def _drop_head(self) -> None:
        # A fresh connection state: the old one's buffer goes (connection_lost still sends it
        # ConnectionClosed, which a fresh one takes).
        self.conn = h11.Connection(h11.SERVER)

    def _incomplete_head(self) -> int:
        # Before a request's head is whole, h11 keeps what came of it in its buffer.
        if self.conn.their_state is not h11.IDLE:
            return 0
        return len(self.conn.trailing_data[0])

    def _client_sending(self) -> bool:
        return self.conn.their_state not in (h11.DONE, h11.MUST_CLOSE, h11.CLOSED)


class _FastProtocol(_Timed, HttpToolsProtocol):
    """httptools (llhttp, in C) for GET, POST, PUT and DELETE; another method hands the
    connection to _SlowProtocol, since llhttp refuses methods it does not know with a bare
    400 before the app could answer 405 with Allow.

    A head is fed to llhttp a piece (_PIECE bytes) at a time, so that its size is known as it
    grows (llhttp keeps a header whole until it ends); a body goes in as it comes.
    """

    slow: ClassVar[type[_SlowProtocol]]
    _in_message = False
    _in_head = False
    _head_bytes = 0
    # A pipelined request with another method, waiting for the answers before it.
    _waiting: bytes | None = None
    # Whether the connection went to h11 (which counts its incomplete head itself).
    _handed_over = False

    def on_message_begin(self) -> None:
        """A request has begun (the parser holds part of it)."""
        self._in_message = self._in_head = True
        self._head_bytes = 0
        super().on_message_begin()

    def on_headers_complete(self) -> None:
        """The head has been read whole."""
        self._in_head = False
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        """The request has been read whole."""
        self._in_message = False
        super().on_message_complete()

    def on_response_complete(self) -> None:
        """An answer has gone out: a request waiting for h11 gets its turn after the last."""
        super().on_response_complete()
        if (
            self._waiting is not None
            and not self.pipeline
            and self._between_requests()
            and not self.transport.is_closing()
        ):
            rest, self._waiting = self._waiting, None
            self._hand_over(rest)

    def data_received(self, data: bytes) -> None:
        """Parse here a piece at a time, then count the head still incomplete in the shared
        budget; a request with another method goes to h11, at once or after the answers to the
        requests before it."""
        if self._lingering is not None:
            return super().data_received(data)
        self._parse(data)
        if not self._handed_over:
            self._account()

    def _parse(self, data: bytes) -> None:
        if self._waiting is not None:
            self._waiting += data
            if len(self._waiting) > MAX_HEAD_BYTES + MAX_BODY_BYTES:
                self._raw().close()
            return
        cuts = _foreign_starts(data)
        position = 0
        while position < len(data):
            if not self._in_message and _foreign_method(data[position : position + 64]):
                rest = data[position:]
                if self._between_requests() and not self.pipeline:
                    self._hand_over(rest)
                else:
                    self._waiting = rest
                    self.flow.pause_reading()
                return
            end = next((cut for cut in cuts if cut > position), len(data))
            if self._in_head or not self._in_message:
                end = min(end, position + _PIECE)
            piece = data[position:end]
            super().data_received(piece)
            if self.transport.is_closing():
                return
            if self._in_head:
                self._head_bytes += len(piece)
                if self._head_bytes > MAX_HEAD_BYTES:
                    return self._too_large_head()
            position = end

    def _drop_head(self) -> None:
        if self._in_head:
            # The list is also the scope's, which no app has yet (the head is not whole).
            self.headers.clear()
        self.url = b""
        self.parser = httptools.HttpRequestParser(self)
        self._waiting = None

    def _incomplete_head(self) -> int:
        waiting = 0 if self._waiting is None else len(self._waiting)
        return (self._head_bytes if self._in_head else 0) + waiting

    def _client_sending(self) -> bool:
        return self._in_message

    def _hand_over(self, data: bytes) -> None:
        self._hold(0)
        self._handed_over = True
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
    if not head:
        return False
    method, space, _ = head.partition(b" ")
    if not space:
        # The method is not whole yet: foreign only if no fast method starts this way.
        return not any(known.startswith(method) for known in _FAST_METHODS)
    return method not in _FAST_METHODS


def _foreign_starts(data: bytes) -> list[int]:
    """Where request lines with another method may start in `data` past its first line: the
    places a pipelined request could begin (checked when the parser gets there)."""
    last = data.rfind(b" HTTP/")
    if last < 0:
        return []
    # A request line ends in its last " HTTP/": none is searched for past the last one (in the
    # usual piece, one request, that is its first line; its headers are never scanned).
    return [
        match.start()
        for match in _REQUEST_LINE.finditer(data, 1, last + 6)
        if match.group(1) not in _FAST_METHODS
    ]
