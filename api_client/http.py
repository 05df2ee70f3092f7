"""The remote Backend: the service's ten operations over HTTP with httpx (DESIGN 1.2 and 1.3)."""

from __future__ import annotations

import builtins
import contextlib
import contextvars
import email.utils
import json
import logging
import math
import random as _random
import re
import ssl
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar
from urllib.parse import quote

import httpcore
import httpx

from . import __version__
from .errors import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    ConvriskError,
    InvalidRequestError,
    NotFoundError,
    ServiceError,
    error_from_response,
)
from .params import (
    DEFAULT_LIMIT,
    ConversationCreateParams,
    ConversationFilters,
    ConversationUpdateParams,
    ResourceName,
    RiskProfileCreateParams,
    RiskProfileFilters,
    RiskProfileUpdateParams,
    check_conversation_create,
    check_conversation_update,
    check_filters,
    check_idempotency_key,
    check_paging,
    check_remote_cursor,
    check_risk_profile_create,
    check_risk_profile_update,
    check_text,
    token_problem,
)
from .protocol import ConversationsBackend, RiskProfilesBackend
from .records import (
    Conversation,
    Deleted,
    JsonPage,
    NotANumber,
    Page,
    Record,
    RiskProfile,
    ShapeError,
    check_page,
    check_record,
    json_text,
    load_json,
)
from .resources import CONVERSATIONS, RISK_PROFILES

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

    from .raw import RawAnswer

logger = logging.getLogger("convrisk.http")

RETRY_STATUSES = frozenset({408, 409, 429})
# Methods `convrisk api` retries: idempotent ones, and POST (it carries an Idempotency-Key).
_RETRIED_AS_SENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE", "POST"})
MAX_RETRY_AFTER = 120.0
CONNECT_TIMEOUT = 5.0
MIB = 1024 * 1024
# How many creates of one create_many are in flight at once, each on its own kept-alive
# connection: enough to hide the round trip on loopback and a LAN, few enough not to look like
# a flood to a rate limiter (a 429 is retried as usual).
CREATE_MANY_CONCURRENCY = 8
# The most a response may weigh once decoded: a page of 100 risk profiles with up to 1 MiB of
# details each is about 100 MiB, so this fits the largest legitimate page with room.
DEFAULT_MAX_RESPONSE_BYTES = 256 * MIB
# Where a user raises the limit (cli/settings.py); named in the error.
_SIZE_SETTING = "max_response_mb (CONVRISK_MAX_RESPONSE_MB)"

M = TypeVar("M", bound=Record)
C = TypeVar("C", bound=Mapping[str, Any])
U = TypeVar("U", bound=Mapping[str, Any])
F = TypeVar("F", bound=Mapping[str, Any])
R = TypeVar("R")


def backoff_wait(retry: int, rand: float) -> float:
    """The wait before retry number `retry` (0-based) without Retry-After: capped, with jitter."""
    return min(0.5 * 2.0**retry, 8.0) * (0.75 + 0.25 * rand)


def parse_retry_after(value: str | None, date_header: str | None, now: float) -> float | None:
    """Seconds asked by a Retry-After header (delta-seconds or an HTTP date), or None if unusable.

    An HTTP date is measured from the response's own Date header when it has one (so a skewed
    local clock does not matter), else from `now`.
    """
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if math.isfinite(seconds) else None
    try:
        when = email.utils.parsedate_to_datetime(text).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    reference = now
    if date_header:
        try:
            reference = email.utils.parsedate_to_datetime(date_header).timestamp()
        except (TypeError, ValueError, IndexError, OverflowError):
            reference = now
    return max(0.0, when - reference)


def _check_token(token: str | None) -> str | None:
    if token is None:
        return None
    token = token.strip()
    if not token:
        return None
    # A token that is not a plain header value would make httpx fail with the value in its
    # message; refuse it here without ever echoing it.
    problem = token_problem(token)
    if problem is not None:
        raise InvalidRequestError(problem, param="token")
    return token


def _shown_url(text: str) -> str:
    """A URL as it may be shown: everything before its last '@' (user:password) is hidden."""
    head, at, tail = text.rpartition("@")
    if not at:
        return text
    scheme, sep, _ = head.partition("://")
    return f"{scheme}{sep}***@{tail}" if sep else f"***@{tail}"


def _check_base_url(base_url: str) -> httpx.URL:
    if not isinstance(base_url, str):
        raise InvalidRequestError("base_url must be a string.", param="base_url")
    try:
        url = httpx.URL(base_url.strip())
    except (httpx.InvalidURL, TypeError, ValueError):
        url = None
    if url is None or url.scheme not in ("http", "https") or not url.host:
        raise InvalidRequestError(
            "base_url must be an http:// or https:// URL with a host, not "
            f"{_shown_url(base_url)!r}.",
            param="base_url",
        )
    if url.query or url.fragment:
        raise InvalidRequestError(
            "base_url must not carry a query or a fragment.", param="base_url"
        )
    if url.userinfo:
        # httpx would turn it into Basic auth in place of the bearer token.
        raise InvalidRequestError(
            "base_url must not carry a user name or password; set the token instead.",
            param="base_url",
        )
    # The operations' paths start with /v1, so a base_url copied with it names the same service
    # (it used to give `Unknown route: GET /v1/v1/...`, a 404 that reads as "already gone").
    path = url.raw_path.rstrip(b"/")
    if path.endswith(b"/v1"):
        url = url.copy_with(raw_path=path[: -len(b"/v1")] or b"/")
    return url


# Characters a bearer token is made of (RFC 6750 b64token); the token ends where they do.
_TOKEN_CHARS = r"A-Za-z0-9\-._~+/="
_WHOLE_ONLY_BELOW = 8


class _AnswerTooSlow(httpx.ReadTimeout):
    """The whole answer did not arrive within the attempt's deadline."""


class _TooLarge(Exception):
    """The answer weighs more than the limit (decoded), or declares so in its Content-Length."""

    def __init__(self, declared: int | None = None) -> None:
        super().__init__("the answer is over the size limit")
        self.declared = declared


@dataclass(frozen=True)
class _Answer:
    """A response read in full: what the resources need of it."""

    status_code: int
    reason_phrase: str
    headers: httpx.Headers
    content: bytes

    @property
    def is_success(self) -> bool:
        """Whether the status is 2xx."""
        return 200 <= self.status_code < 300


# The deadline (time.monotonic()) of the attempt running in this context, or None.
_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "convrisk_attempt_deadline", default=None
)


def _time_left(timeout: float | None, late: type[httpcore.TimeoutException]) -> float | None:
    """A socket operation's timeout, cut to what is left of the attempt; `late` once none is."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise late("the attempt's deadline has passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineNetworkStream(httpcore.NetworkStream):
    """A socket whose every wait (read, write, TLS handshake) ends by the attempt's deadline."""

    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        """Read up to max_bytes, waiting no later than the deadline."""
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


class _DeadlineTransport(httpx.BaseTransport):
    """httpx over an httpcore pool whose sockets obey the attempt's deadline (DESIGN 1.2).

    httpx's own timeouts bound each wait; this bounds the attempt as a whole, from connecting to
    the last byte, status line and headers included, without a second thread: every blocking
    socket call gets at most the time left.
    """

    def __init__(self, url: httpx.URL) -> None:
        limits = httpx.Limits()
        proxy = _environment_proxy(url)
        self._pool = httpcore.ConnectionPool(
            # Loading the CA bundle takes about 50 ms: only for https.
            ssl_context=httpx.create_ssl_context() if url.scheme == "https" else None,
            proxy=proxy,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=_DeadlineNetworkBackend(),
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Send the request over the pool; the answer's body is read later, as httpx reads it."""
        if not isinstance(request.stream, httpx.SyncByteStream):
            raise TypeError("the request body must be a synchronous stream")
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _as_httpx_errors():
            answer = self._pool.handle_request(core_request)
        if not isinstance(answer.stream, Iterable):
            raise TypeError("httpcore answered with an asynchronous body")
        return httpx.Response(
            status_code=answer.status,
            headers=answer.headers,
            stream=_CoreBody(answer.stream),
            extensions=answer.extensions,
        )

    def exchange(self, request: httpcore.Request) -> httpcore.Response:
        """Send an httpcore request over the pool (the create path); httpx's errors."""
        with _as_httpx_errors():
            return self._pool.handle_request(request)

    def close(self) -> None:
        """Close the pooled connections."""
        with _as_httpx_errors():
            self._pool.close()


def _environment_proxy(url: httpx.URL) -> httpcore.Proxy | None:
    """The proxy the environment sets for `url` (HTTP(S)_PROXY, ALL_PROXY, NO_PROXY), or None.

    httpx reads these itself only for its own transport, so they are read here the same way.
    """
    proxies = urllib.request.getproxies()
    target = proxies.get(url.scheme) or proxies.get("all")
    if not target:
        return None
    port = f":{url.port}" if url.port is not None else ""
    if urllib.request.proxy_bypass(f"{url.host}{port}"):
        return None
    if "://" not in target:
        target = f"http://{target}"
    try:
        proxy_url = httpx.URL(target)
    except (httpx.InvalidURL, TypeError, ValueError):
        proxy_url = None
    if proxy_url is None or proxy_url.scheme not in ("http", "https") or not proxy_url.host:
        raise InvalidRequestError(
            f"The proxy set in the environment for {url.scheme}:// ({_shown_url(target)}) is not "
            "an http:// or https:// proxy, the only kinds convrisk can use.",
            param="proxy",
        )
    auth = None
    if proxy_url.username or proxy_url.password:
        auth = (proxy_url.username, proxy_url.password)
    return httpcore.Proxy(
        url=str(proxy_url.copy_with(username=None, password=None)),
        auth=auth,
        ssl_context=httpx.create_ssl_context() if proxy_url.scheme == "https" else None,
    )


class _Transport:
    """One pooled httpx.Client, the retry loop, error mapping and debug logging."""

    def __init__(
        self,
        base_url: str,
        token: str | None,
        *,
        timeout: float,
        max_retries: int,
        max_response_bytes: int,
        transport: httpx.BaseTransport | None,
        sleep: Callable[[float], None],
        random: Callable[[], float],
    ) -> None:
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
            raise InvalidRequestError(
                "timeout must be a number of seconds above 0.", param="timeout"
            )
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise InvalidRequestError(
                "max_retries must be an integer of 0 or more.", param="max_retries"
            )
        if (
            isinstance(max_response_bytes, bool)
            or not isinstance(max_response_bytes, int)
            or max_response_bytes < 1
        ):
            raise InvalidRequestError(
                "max_response_bytes must be a whole number of bytes of 1 or more.",
                param="max_response_bytes",
            )
        url = _check_base_url(base_url)
        self._token = _check_token(token)
        self._max_retries = max_retries
        self._max_bytes = max_response_bytes
        self._scheme = url.scheme
        self._timeout = float(timeout)
        self._sleep = sleep
        self._random = random
        port = f":{url.port}" if url.port is not None else ""
        # Named in messages; never the userinfo part of the URL.
        self.host = f"{url.host}{port}"
        headers = {
            "User-Agent": f"convrisk/{__version__}",
            "Accept": "application/json",
        }
        if self._token is not None:
            headers["Authorization"] = f"Bearer {self._token}"
        # The create path goes straight to httpcore over this transport (see _send_direct);
        # with a transport of the caller's, everything goes through httpx.
        self._direct = _DeadlineTransport(url) if transport is None else None
        self._http = httpx.Client(
            base_url=url,
            headers=headers,
            timeout=httpx.Timeout(self._timeout, connect=min(CONNECT_TIMEOUT, self._timeout)),
            follow_redirects=False,
            transport=self._direct if transport is None else transport,
        )
        self._direct_routes: dict[str, tuple[httpcore.URL, list[tuple[bytes, bytes]]]] = {}
        self._executor: ThreadPoolExecutor | None = None

    def executor(self) -> ThreadPoolExecutor:
        """The threads that send concurrent requests (create_many), made on first use."""
        if self._executor is None:
            from concurrent.futures import ThreadPoolExecutor

            self._executor = ThreadPoolExecutor(
                max_workers=CREATE_MANY_CONCURRENCY, thread_name_prefix="convrisk-http"
            )
        return self._executor

    def close(self) -> None:
        """Stop the request threads (requests not yet started are dropped), close connections."""
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None
        self._http.close()

    def scrub(self, text: str) -> str:
        """`text` with the token replaced by `***`."""
        if not self._token:
            return text
        if len(self._token) >= _WHOLE_ONLY_BELOW:
            return text.replace(self._token, "***")
        # A short token ("T") is hidden only where it stands whole, so "HTTP" stays readable.
        token = re.escape(self._token)
        return re.sub(rf"(?<![{_TOKEN_CHARS}]){token}(?![{_TOKEN_CHARS}])", "***", text)

    def scrub_bytes(self, data: bytes) -> bytes:
        """`data` (a body, in any encoding) with the token's ASCII bytes replaced by `***`."""
        if not self._token or self._token.encode() not in data:
            return data
        # latin-1 maps every byte to one character and back, so the rest stays byte for byte.
        return self.scrub(data.decode("latin-1")).encode("latin-1")

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Mapping[str, Any] | None = None,
        content: bytes | None = None,
        idempotency_key: str | None = None,
        gone_is_done: bool = False,
        any_status: bool = False,
        retries: int | None = None,
    ) -> _Answer:
        """Send one logical request, retrying per DESIGN 1.2; returns a 2xx answer or raises.

        `content` is a JSON body already encoded (instead of `body`). With `gone_is_done` (a
        delete), a 404 to a retry is the answer too when an earlier attempt may have been
        carried out (its answer was lost or was a 5xx): the object is gone. With `any_status`
        the last answer is returned whatever its status (`convrisk api`); only a failure to get
        one is raised. `retries` overrides max_retries for this request.
        """
        max_retries = self._max_retries if retries is None else retries
        if self._http.is_closed:
            raise ConvriskError(f"The connection to {self.host} was already closed.")
        headers: dict[str, str] = {}
        if body is not None:
            try:
                content = json.dumps(dict(body), allow_nan=False, separators=(",", ":")).encode()
            except (TypeError, ValueError, RecursionError) as exc:
                raise InvalidRequestError(f"The request cannot be sent as JSON: {exc}.") from None
        if content is not None:
            headers["Content-Type"] = "application/json"
        if method == "POST":
            headers["Idempotency-Key"] = check_idempotency_key(idempotency_key) or str(uuid.uuid4())
        shown = path
        if params:
            shown = f"{path}?{httpx.QueryParams(params)}"
        retry = 0
        maybe_done = False
        while True:
            started = time.monotonic()
            response: _Answer | None = None
            error: ConvriskError
            # Whether this attempt may have reached the service (then the request may be done).
            reached = True
            try:
                if self._direct is not None and method == "POST" and not params:
                    response = self._send_direct(path, content, headers)
                else:
                    response = self._send(method, path, params, content, headers)
            except httpx.TimeoutException as exc:
                reached = not isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout)
                error = APITimeoutError(
                    f"{self.host} did not answer in time ({_what_timed_out(exc)}, "
                    f"timeout {self._timeout:g} s)."
                )
            except httpx.DecodingError:
                error = ServiceError(
                    f"The answer from {self.host} to {method} {path} could not be decoded."
                )
            except _TooLarge as exc:
                how = "stopped reading it"
                if exc.declared is not None:
                    how = f"it declared {exc.declared} bytes, not read"
                error = ServiceError(
                    f"The answer from {self.host} to {method} {path} is over the "
                    f"{_size_text(self._max_bytes)} limit on a response ({how}); raise "
                    f"{_SIZE_SETTING} if the service is trusted.",
                    code="response_too_large",
                )
            except httpx.RequestError as exc:
                reached = not isinstance(exc, httpx.ConnectError | httpx.UnsupportedProtocol)
                error = APIConnectionError(f"Could not reach {self.host}: {self._describe(exc)}.")
            elapsed_ms = (time.monotonic() - started) * 1000
            if response is not None:
                status = response.status_code
                if response.is_success or (gone_is_done and maybe_done and status == 404):
                    self._log(method, shown, str(status), elapsed_ms, retry, None)
                    return response
                error = self._error_for(response)
                retryable = status in RETRY_STATUSES or status >= 500
                status_text = str(status)
                maybe_done = maybe_done or status >= 500
            else:
                retryable = not isinstance(error, ServiceError)
                status_text = _failure_text(error)
                maybe_done = maybe_done or reached
            if not retryable or retry >= max_retries:
                self._log(method, shown, status_text, elapsed_ms, retry, None)
                if any_status and response is not None:
                    return response
            if not retryable:
                raise error
            if retry >= max_retries:
                if retry == 0:
                    raise error
                raise _with_note(error, f"gave up after {retry + 1} attempts")
            wait: float | None = None
            if response is not None:
                wait = parse_retry_after(
                    response.headers.get("Retry-After"), response.headers.get("Date"), time.time()
                )
                if wait is not None and wait > MAX_RETRY_AFTER:
                    self._log(method, shown, status_text, elapsed_ms, retry, None)
                    if any_status:
                        return response
                    raise _with_note(
                        error,
                        f"the service asked to retry after {wait:.0f} s, over the "
                        f"{MAX_RETRY_AFTER:.0f} s this client waits; not retried",
                    )
            if wait is None:
                wait = backoff_wait(retry, self._random())
            self._log(method, shown, status_text, elapsed_ms, retry, wait)
            self._sleep(wait)
            retry += 1

    def _send(
        self,
        method: str,
        path: str,
        params: Mapping[str, str] | None,
        content: bytes | None,
        headers: Mapping[str, str],
    ) -> _Answer:
        """One attempt, over within `timeout` seconds of starting, from connect to last byte.

        The deadline reaches every socket wait through `_DEADLINE` (see `_DeadlineTransport`)
        and is checked again between chunks of the body, which also bounds time spent decoding.
        """

        def start() -> httpx.Response:
            request = self._http.build_request(
                method, path, params=params, content=content, headers=headers
            )
            return self._http.send(request, stream=True)

        return self._attempt(start, self._read, lambda response: response.close())

    def _attempt(
        self,
        start: Callable[[], R],
        read: Callable[[R, float], _Answer],
        close: Callable[[R], None],
    ) -> _Answer:
        """One attempt under the deadline: `start` sends the request and returns the response
        (its headers read), `read` reads its body by the deadline, `close` releases it."""
        deadline = time.monotonic() + self._timeout
        token = _DEADLINE.set(deadline)
        try:
            # A timeout before the headers are in reads "waiting for the answer"...
            response = start()
            try:
                return read(response, deadline)
            except httpx.ReadTimeout as exc:
                # ... and one in the body, cut short by the deadline, "the whole answer".
                if isinstance(exc, _AnswerTooSlow) or time.monotonic() < deadline:
                    raise
                raise _AnswerTooSlow("the whole answer took longer than the timeout") from exc
            finally:
                close(response)
        finally:
            _DEADLINE.reset(token)

    def _send_direct(self, path: str, content: bytes | None, headers: Mapping[str, str]) -> _Answer:
        """One attempt of a POST (a create) over httpcore's public API, without httpx's
        per-request machinery (URL merging, auth and redirect flows, cookies, the Response
        model), which was about half of a create's client CPU.

        The same request as `_send` sends (the URL and default headers are httpx's own, built
        once per path), the same pool and deadline, the same errors (httpx's) and size limit;
        an answer with a Content-Encoding is decoded by httpx as `_send` would.
        """
        assert self._direct is not None
        route = self._direct_routes.get(path)
        if route is None:
            route = self._direct_route(path)
        url, base_headers = route
        direct = self._direct
        body = content or b""
        sent = [*base_headers, *((k.encode(), v.encode()) for k, v in headers.items())]
        sent.append((b"Content-Length", str(len(body)).encode()))
        request = httpcore.Request(
            method=b"POST",
            url=url,
            headers=sent,
            content=body,
            extensions={"timeout": self._http.timeout.as_dict()},
        )

        def close(response: httpcore.Response) -> None:
            with _as_httpx_errors():
                response.close()

        return self._attempt(lambda: direct.exchange(request), self._read_direct, close)

    def _direct_route(self, path: str) -> tuple[httpcore.URL, list[tuple[bytes, bytes]]]:
        """The URL and default headers httpx would send a POST to `path` with (no cookies)."""
        model = self._http.build_request("POST", path)
        url = httpcore.URL(
            scheme=model.url.raw_scheme,
            host=model.url.raw_host,
            port=model.url.port,
            target=model.url.raw_path,
        )
        left_out = {"content-length", "cookie", "transfer-encoding"}
        base = [(k, v) for k, v in model.headers.raw if k.lower().decode() not in left_out]
        self._direct_routes[path] = (url, base)
        return url, base

    def _read_direct(self, response: httpcore.Response, deadline: float) -> _Answer:
        """An httpcore answer read as `_read` reads httpx's: the limit and the deadline."""
        encoding, declared = b"identity", b""
        for name, value in response.headers:
            lowered = name.lower()
            if lowered == b"content-encoding":
                encoding = value
            elif lowered == b"content-length":
                declared = value
        if encoding.strip().lower() != b"identity":
            if not isinstance(response.stream, Iterable):
                raise TypeError("httpcore answered with an asynchronous body")
            encoded = httpx.Response(
                status_code=response.status,
                headers=response.headers,
                stream=_CoreBody(response.stream),
                extensions=response.extensions,
            )
            return self._read(encoded, deadline)
        with _as_httpx_errors():
            content = self._body(declared.decode("latin-1"), response.iter_stream(), deadline)
        reason = response.extensions.get("reason_phrase")
        return _Answer(
            status_code=response.status,
            reason_phrase=(
                reason.decode("ascii", errors="ignore")
                if isinstance(reason, bytes)
                else httpx.codes.get_reason_phrase(response.status)
            ),
            headers=httpx.Headers(response.headers),
            content=content,
        )

    def _read(self, response: httpx.Response, deadline: float) -> _Answer:
        """The body decoded, at most `max_response_bytes` of it held: beyond is `_TooLarge`."""
        content = self._body(
            response.headers.get("Content-Length", ""), response.iter_bytes(), deadline
        )
        return _Answer(
            status_code=response.status_code,
            reason_phrase=response.reason_phrase,
            headers=response.headers,
            content=content,
        )

    def _body(self, declared: str, chunks: Iterable[bytes], deadline: float) -> bytes:
        """The chunks of a body joined, by the deadline and within the size limit (a declared
        Content-Length over it is refused before reading)."""
        declared = declared.strip()
        if declared.isdigit() and int(declared) > self._max_bytes:
            raise _TooLarge(int(declared))
        held: list[bytes] = []
        size = 0
        for chunk in chunks:
            size += len(chunk)
            if size > self._max_bytes:
                raise _TooLarge()
            if time.monotonic() > deadline:
                raise _AnswerTooSlow("the whole answer took longer than the timeout")
            held.append(chunk)
        return b"".join(held)

    def _describe(self, exc: httpx.RequestError) -> str:
        text = str(exc).strip()
        kinds: dict[type[httpx.RequestError], str] = {
            httpx.ConnectError: "could not connect",
            httpx.ReadError: "the connection broke while reading the answer",
            httpx.WriteError: "the connection broke while sending the request",
            httpx.RemoteProtocolError: "the service broke the HTTP protocol",
            httpx.ProxyError: "the proxy failed",
            httpx.UnsupportedProtocol: "unsupported protocol",
        }
        kind = kinds.get(type(exc), type(exc).__name__)
        if self._scheme == "https" and _plain_http_answered_tls(exc):
            kind = "the port seems to speak plain HTTP, not HTTPS; try http:// in base_url"
        return self.scrub(f"{kind} ({text})" if text else kind)

    def _error_for(self, response: _Answer) -> APIError:
        status = response.status_code
        if 300 <= status < 400:
            from .raw import redirect_error

            location = response.headers.get("Location", "")
            return redirect_error(status, response.reason_phrase, location)
        try:
            body: object = json.loads(response.content) if response.content else None
        except (ValueError, RecursionError):
            body = None
        error = error_from_response(status, body, reason=response.reason_phrase)
        if error.param is not None:
            error.param = self.scrub(error.param)
        error.code = self.scrub(error.code)
        return _with_note(error, None, scrub=self.scrub)

    def _log(
        self,
        method: str,
        shown: str,
        status: str,
        elapsed_ms: float,
        retry: int,
        wait: float | None,
    ) -> None:
        if not logger.isEnabledFor(logging.DEBUG):
            return
        attempt = f"attempt {retry + 1}/{self._max_retries + 1}"
        then = f", retrying in {wait:.2f} s" if wait is not None else ""
        logger.debug(
            "%s %s -> %s in %.0f ms (%s%s)",
            method,
            self.scrub(shown),
            status,
            elapsed_ms,
            attempt,
            then,
        )


def _size_text(size: int) -> str:
    """A byte count as people write it: 256 MiB, 64 KiB, 1000 bytes."""
    for unit, name in ((1024 * MIB, "GiB"), (MIB, "MiB"), (1024, "KiB")):
        if size % unit == 0:
            return f"{size // unit} {name}"
    return f"{size} bytes"


def _plain_http_answered_tls(exc: BaseException) -> bool:
    """Whether a TLS handshake failed because the other end answered in plain HTTP."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            break
        if isinstance(seen, ssl.SSLError) and seen.reason == "WRONG_VERSION_NUMBER":
            return True
        seen = seen.__cause__ or seen.__context__
    return "WRONG_VERSION_NUMBER" in str(exc)


def _failure_text(error: ConvriskError) -> str:
    if isinstance(error, APITimeoutError):
        return "timeout"
    if isinstance(error, APIConnectionError):
        return "connection error"
    return "undecodable answer"


def _what_timed_out(exc: httpx.TimeoutException) -> str:
    if isinstance(exc, httpx.ConnectTimeout):
        return "connecting"
    if isinstance(exc, httpx.WriteTimeout):
        return "sending the request"
    if isinstance(exc, httpx.PoolTimeout):
        return "waiting for a free connection"
    if isinstance(exc, _AnswerTooSlow):
        return "the whole answer took longer"
    return "waiting for the answer"


E = TypeVar("E", bound=ConvriskError)


def _with_note(error: E, note: str | None, *, scrub: Callable[[str], str] | None = None) -> E:
    """The same error with `note` added to its message (and the message scrubbed of the token)."""
    message = error.message
    if note:
        message = f"{message.rstrip('.')}; {note}."
    if scrub is not None:
        message = scrub(message)
    if message == error.message:
        return error
    error.message = message
    error.args = (message,)
    return error


def _json_body(response: _Answer, what: str) -> object:
    status = response.status_code
    if not response.content.strip():
        raise ServiceError(
            f"The service answered HTTP {status} with an empty body where {what} was expected.",
            status=status,
        )
    try:
        return load_json(response.content)
    except NotANumber as exc:
        raise ServiceError(
            f"The service answered HTTP {status} with {what} that cannot be shown as JSON: {exc}.",
            status=status,
        ) from None
    except (ValueError, RecursionError):
        kind = response.headers.get("Content-Type", "").split(";")[0].strip() or "unknown type"
        raise ServiceError(
            f"The service answered HTTP {status} with a body that is not JSON ({kind}) where "
            f"{what} was expected.",
            status=status,
        ) from None


def _validate(check: Callable[[object], Any], data: object, status: int, what: str) -> Any:
    """`data` as sent, once `check` finds in it what the client relies on; else ServiceError."""
    try:
        return check(data)
    except ShapeError as exc:
        raise ServiceError(
            f"The service answered HTTP {status} with {what} that does not fit: {exc}.",
            status=status,
        ) from None


def _query_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class HTTPResource(Generic[M, C, U, F]):
    """list / create / retrieve / update / delete of one resource over HTTP; records as sent."""

    def __init__(
        self,
        transport: _Transport,
        *,
        name: ResourceName,
        path: str,
        noun: str,
        check_create: Callable[[object], C],
        check_update: Callable[[object], U],
    ) -> None:
        self._t = transport
        self._name: ResourceName = name
        self._path = path
        self._noun = noun
        self._check_create = check_create
        self._check_update = check_update

    def _item_path(self, id: str) -> str:
        if not isinstance(id, str) or id.strip() in ("", ".", ".."):
            raise NotFoundError(f"No such {self._noun}: {id!r}.", param="id")
        check_text(id, "id")
        return f"{self._path}/{quote(id, safe='')}"

    def _one(self, response: _Answer) -> M:
        what = f"a {self._noun}"
        data = _json_body(response, what)
        result: M = _validate(check_record, data, response.status_code, what)
        return result

    def list(
        self,
        filters: F | None = None,
        *,
        limit: int = DEFAULT_LIMIT,
        starting_after: str | None = None,
        ending_before: str | None = None,
    ) -> Page[M]:
        """One page; the service judges the cursors (its ids may have any form)."""
        query = {k: _query_value(v) for k, v in check_filters(self._name, filters).items()}
        check_paging(self._name, limit, None, None)
        query["limit"] = str(limit)
        for key, cursor in (("starting_after", starting_after), ("ending_before", ending_before)):
            checked = check_remote_cursor(self._name, key, cursor)
            if checked is not None:
                query[key] = checked
        if starting_after is not None and ending_before is not None:
            raise InvalidRequestError(
                "Give at most one of starting_after and ending_before.", param="ending_before"
            )
        response = self._t.request("GET", self._path, params=query)
        what = f"a page of {self._noun}s"
        data = _json_body(response, what)
        result: Page[M] = _validate(check_page, data, response.status_code, what)
        return result

    def list_json(
        self,
        filters: F | None = None,
        *,
        limit: int = DEFAULT_LIMIT,
        starting_after: str | None = None,
    ) -> JsonPage:
        """The page `list` returns, each record as its compact JSON text."""
        page = self.list(filters, limit=limit, starting_after=starting_after)
        items = page["data"]
        return {
            "has_more": page["has_more"],
            "data": [json_text(item) for item in items],
            "ids": [item["id"] for item in items],
        }

    def create(self, params: C, *, idempotency_key: str | None = None) -> M:
        """Create an object; the same Idempotency-Key is sent on each retry."""
        checked = self._check_create(params)
        body = {k: v for k, v in checked.items() if v is not None}
        response = self._t.request("POST", self._path, body=body, idempotency_key=idempotency_key)
        return self._one(response)

    def create_many(
        self,
        items: Sequence[tuple[C, str | None]],
        *,
        stop_on_error: bool = False,
    ) -> builtins.list[M | ConvriskError]:
        """Create several objects, one request each, results in the order of `items`.

        Up to CREATE_MANY_CONCURRENCY requests are in flight at once (so the objects may be
        created in a slightly different order); with `stop_on_error` one at a time, and nothing
        after the first error is sent. Each request has its retries and its own key.
        """
        if stop_on_error or len(items) < 2:
            results: builtins.list[M | ConvriskError] = []
            for params, key in items:
                result = self._create_or_error(params, key)
                results.append(result)
                if stop_on_error and isinstance(result, ConvriskError):
                    break
            return results
        # A few workers each take the next item until none is left: one Future per worker, not
        # per item (a Future's lock and wake-up cost about as much CPU as the request itself).
        slots: builtins.list[M | ConvriskError | None] = [None] * len(items)
        pending = iter(enumerate(items))
        taking = threading.Lock()
        stopped = threading.Event()

        def work() -> None:
            while not stopped.is_set():
                with taking:
                    step = next(pending, None)
                if step is None:
                    return
                index, (params, key) = step
                slots[index] = self._create_or_error(params, key)

        executor = self._t.executor()
        workers = [executor.submit(work) for _ in range(min(CREATE_MANY_CONCURRENCY, len(items)))]
        try:
            for worker in workers:
                worker.result()
        finally:
            # Interrupted (Ctrl-C) or failed: what has not started yet is not sent.
            stopped.set()
            for worker in workers:
                worker.cancel()
        done: builtins.list[M | ConvriskError] = []
        for slot in slots:
            assert slot is not None
            done.append(slot)
        return done

    def _create_or_error(self, params: C, key: str | None) -> M | ConvriskError:
        try:
            return self.create(params, idempotency_key=key)
        except ConvriskError as exc:
            return exc

    def retrieve(self, id: str) -> M:
        """The object with this id."""
        return self._one(self._t.request("GET", self._item_path(id)))

    def update(self, id: str, params: U) -> M:
        """Change the supplied attributes."""
        checked = self._check_update(params)
        path = self._item_path(id)
        return self._one(self._t.request("PUT", path, body=checked))

    def delete(self, id: str) -> Deleted:
        """Remove the object; whatever the service's 2xx body, the answer is this id deleted."""
        self._t.request("DELETE", self._item_path(id), gone_is_done=True)
        return Deleted(id=id, deleted=True)


class HTTPBackend:
    """The Backend of a remote service at `base_url`, over one pooled httpx.Client.

    `timeout` bounds each attempt from connect to last byte; `max_response_bytes` bounds each
    answer once decoded. With a `transport` of your own, the deadline is checked only between
    chunks of the body (the whole-attempt deadline lives in the default transport).
    """

    def __init__(
        self,
        base_url: str,
        token: str | None,
        *,
        timeout: float = 30.0,
        max_retries: int = 2,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        random: Callable[[], float] = _random.random,
    ) -> None:
        self._transport = _Transport(
            base_url,
            token,
            timeout=timeout,
            max_retries=max_retries,
            max_response_bytes=max_response_bytes,
            transport=transport,
            sleep=sleep,
            random=random,
        )
        self._conversations: HTTPResource[
            Conversation, ConversationCreateParams, ConversationUpdateParams, ConversationFilters
        ] = HTTPResource(
            self._transport,
            name="conversations",
            path=CONVERSATIONS.path,
            noun=CONVERSATIONS.noun,
            check_create=check_conversation_create,
            check_update=check_conversation_update,
        )
        self._risk_profiles: HTTPResource[
            RiskProfile, RiskProfileCreateParams, RiskProfileUpdateParams, RiskProfileFilters
        ] = HTTPResource(
            self._transport,
            name="risk_profiles",
            path=RISK_PROFILES.path,
            noun=RISK_PROFILES.noun,
            check_create=check_risk_profile_create,
            check_update=check_risk_profile_update,
        )

    def send(self, method: str, target: str, body: bytes | None) -> RawAnswer:
        """One request as it is (`target`: a path under /v1/ with its query, percent-encoded),
        with the token and retries; the answer whatever its status."""
        from .raw import RawAnswer

        transport = self._transport
        # A method outside the interface (PATCH, ...) may not be idempotent and carries no
        # Idempotency-Key: sent once, never retried, so it cannot take effect twice.
        retries = None if method in _RETRIED_AS_SENT else 0
        answer = transport.request(method, target, content=body, any_status=True, retries=retries)
        # The token never reaches output (DESIGN 3), even from a service that echoes it back.
        return RawAnswer(
            answer.status_code,
            transport.scrub_bytes(answer.content),
            transport.scrub(answer.reason_phrase),
            transport.scrub(answer.headers.get("Location", "")),
        )

    @property
    def conversations(self) -> ConversationsBackend:
        """The conversations resource."""
        return self._conversations

    @property
    def risk_profiles(self) -> RiskProfilesBackend:
        """The risk profiles resource."""
        return self._risk_profiles

    def close(self) -> None:
        """Close the pooled connections."""
        self._transport.close()

    def __enter__(self) -> HTTPBackend:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
