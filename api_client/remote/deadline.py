"""The deadline transport: an httpcore pool whose every socket wait ends by the attempt's
deadline (DESIGN 1.2), its answers as httpx reads them.

httpx's own timeouts bound each wait; this bounds an attempt as a whole, from connecting to the
last byte, status line and headers included, without a second thread: every blocking socket
call gets at most the time left. It stands in for httpx's HTTPTransport and uses httpcore's
public network-backend interface only; pyproject.toml bounds httpcore below its next minor.
"""

from __future__ import annotations

import contextlib
import contextvars
import ssl
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import httpcore
import httpx

# The deadline (time.monotonic()) of the attempt running in this context, or None.
_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "convrisk_attempt_deadline", default=None
)


# Called when the attempt running in this context has sent its request (see `when_sent`).
_SENT: contextvars.ContextVar[Callable[[], None] | None] = contextvars.ContextVar(
    "convrisk_request_sent", default=None
)


@contextlib.contextmanager
def when_sent(call: Callable[[], None]) -> Iterator[None]:
    """Within this block, `call()` is made whenever the deadline transport waits for an answer
    (its request is written): a thread waiting for that may go on."""
    token = _SENT.set(call)
    try:
        yield
    finally:
        _SENT.reset(token)


@contextlib.contextmanager
def deadline(at: float) -> Iterator[None]:
    """Within this block, every socket wait of the deadline transport ends by `at` (monotonic)."""
    token = _DEADLINE.set(at)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def _time_left(timeout: float | None, late: type[httpcore.TimeoutException]) -> float | None:
    """A socket operation's timeout, cut to what is left of the attempt; `late` once none is."""
    at = _DEADLINE.get()
    if at is None:
        return timeout
    left = at - time.monotonic()
    if left <= 0:
        raise late("the attempt's deadline has passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineNetworkStream(httpcore.NetworkStream):
    """A socket whose every wait (read, write, TLS handshake) ends by the attempt's deadline."""

    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        """Read up to max_bytes, waiting no later than the deadline."""
        sent = _SENT.get()
        if sent is not None:
            sent()
        return self._stream.read(max_bytes, _time_left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        """Write the buffer, waiting no later than the deadline."""
        self._stream.write(buffer, _time_left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        """Close the socket."""
        self._stream.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        """The TLS stream over this one, its handshake ending by the deadline."""
        tls = self._stream.start_tls(
            ssl_context, server_hostname, _time_left(timeout, httpcore.ConnectTimeout)
        )
        return _DeadlineNetworkStream(tls)

    def get_extra_info(self, info: str) -> Any:
        """What the underlying stream knows (socket, ssl_object, is_readable...)."""
        return self._stream.get_extra_info(info)


class _DeadlineNetworkBackend(httpcore.NetworkBackend):
    """httpcore's own sockets, connected and wrapped so that they obey the attempt's deadline."""

    def __init__(self) -> None:
        self._backend = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        """A TCP connection, made by the deadline."""
        stream = self._backend.connect_tcp(
            host, port, _time_left(timeout, httpcore.ConnectTimeout), local_address, socket_options
        )
        return _DeadlineNetworkStream(stream)

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        """A Unix socket connection, made by the deadline."""
        stream = self._backend.connect_unix_socket(
            path, _time_left(timeout, httpcore.ConnectTimeout), socket_options
        )
        return _DeadlineNetworkStream(stream)

    def sleep(self, seconds: float) -> None:
        """Sleep (used by httpcore between connection retries, which we do not ask for)."""
        self._backend.sleep(seconds)


# httpcore's errors and httpx's of the same meaning, most specific first.
_HTTPX_ERRORS: tuple[tuple[type[Exception], type[httpx.TransportError]], ...] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.ProxyError, httpx.ProxyError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.ProtocolError, httpx.ProtocolError),
)


@contextlib.contextmanager
def _as_httpx_errors() -> Iterator[None]:
    """Raise httpcore's errors as the httpx errors of the same meaning."""
    try:
        yield
    except Exception as exc:
        for core, mapped in _HTTPX_ERRORS:
            if isinstance(exc, core):
                raise mapped(str(exc)) from exc
        raise


class _CoreBody(httpx.SyncByteStream):
    """An httpcore response body as httpx reads it, with httpx's errors."""

    def __init__(self, stream: Iterable[bytes]) -> None:
        self._stream = stream

    def __iter__(self) -> Iterator[bytes]:
        with _as_httpx_errors():
            yield from self._stream

    def close(self) -> None:
        """Close the body: its connection goes back to the pool if it was read to the end."""
        close = getattr(self._stream, "close", None)
        if close is not None:
            with _as_httpx_errors():
                close()


class DeadlineTransport:
    """An httpcore pool whose sockets obey `deadline`, answering as httpx reads answers.

    `proxy` is where every request goes through (see api_client.remote.proxies); `https` loads the
    CA bundle (about 50 ms), so only a service or proxy on https asks for it.
    """

    def __init__(self, *, https: bool, proxy: httpcore.Proxy | None) -> None:
        limits = httpx.Limits()
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context() if https else None,
            proxy=proxy,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=_DeadlineNetworkBackend(),
        )

    def handle_request(self, request: httpcore.Request) -> httpx.Response:
        """Send the request over the pool; the answer's body is read later, as httpx reads it."""
        with _as_httpx_errors():
            answer = self._pool.handle_request(request)
        if not isinstance(answer.stream, Iterable):
            raise TypeError("httpcore answered with an asynchronous body")
        return httpx.Response(
            status_code=answer.status,
            headers=answer.headers,
            stream=_CoreBody(answer.stream),
            extensions=answer.extensions,
        )

    def close(self) -> None:
        """Close the pooled connections."""
        with _as_httpx_errors():
            self._pool.close()
