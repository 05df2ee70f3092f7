"""One request path to the remote service: build the request, send it under the attempt's
deadline, read the answer within the size limit, and retry as api_client.remote.retries decides.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlencode

import httpcore
import httpx

from convrisk.api_client import __version__
from convrisk.api_client.defaults import DEFAULT_MAX_RESPONSE_MB
from convrisk.api_client.endpoint import (
    Scrubber,
    base_url_problem,
    insecure_token_problem,
    shown_url,
    token_problem,
)
from convrisk.api_client.errors import ConvriskError, InvalidRequestError, ServiceError
from convrisk.api_client.params import check_idempotency_key
from convrisk.api_client.remote.capture import CaptureTransport
from convrisk.api_client.remote.deadline import DeadlineTransport, deadline
from convrisk.api_client.remote.failures import (
    AnswerTooSlow,
    TooLarge,
    answer_error,
    connection_error,
    failure_text,
    malformed_answer,
    malformed_error,
    timeout_error,
    too_large_error,
    undecodable_error,
    with_note,
)
from convrisk.api_client.remote.proxies import environment_proxy
from convrisk.api_client.remote.retries import (
    MAX_RETRY_AFTER,
    may_have_taken_effect,
    parse_retry_after,
    reached_service,
    retry_wait,
    should_retry,
)

if TYPE_CHECKING:
    import threading

logger = logging.getLogger("convrisk.http")

CONNECT_TIMEOUT = 5.0
# How many requests of one create_many are in flight at once, each on its own kept-alive
# connection: enough to hide the round trip on loopback and a LAN, few enough not to look like
# a flood to a rate limiter (a 429 is retried as usual).
CREATE_MANY_CONCURRENCY = 8
DEFAULT_MAX_RESPONSE_BYTES = DEFAULT_MAX_RESPONSE_MB * 1024 * 1024
# What httpx.Client sends by default, less its own User-Agent and Accept: the encodings named
# are the ones httpx decodes without optional packages.
_BASE_HEADERS = ((b"Accept-Encoding", b"gzip, deflate"), (b"Connection", b"keep-alive"))
# Targets whose full URL is kept once built (the collection paths a bulk create posts to).
_KEPT_URLS = 32
# A query up to this long is written here as httpx writes it (a longer one goes through httpx's
# URL, which refuses one over 64 KiB).
_WRITTEN_QUERY = 4096


class Transport(Protocol):
    """What a Session sends over: the deadline transport, a capture (`--as-curl`) or a test's."""

    def handle_request(self, request: httpcore.Request) -> httpx.Response:
        """Send the request; the answer's body is read afterwards, from the response's stream."""
        ...

    def close(self) -> None:
        """Close the connections."""
        ...


@dataclass(frozen=True)
class Answer:
    """A response read in full: what the resources need of it."""

    status_code: int
    reason_phrase: str
    headers: httpx.Headers
    content: bytes
    # An earlier attempt of the same request may have been carried out (its answer was lost).
    earlier_attempt_may_have_landed: bool = False
    # A 404 to a retried DELETE after an attempt that may have been carried out (`gone_is_done`):
    # the object is gone, by that earlier attempt.
    gone: bool = False

    @property
    def is_success(self) -> bool:
        """Whether the status is 2xx."""
        return 200 <= self.status_code < 300


@dataclass(frozen=True)
class _Failure:
    """An attempt that got no usable answer, and whether it may have reached the service."""

    error: ConvriskError
    reached: bool


class Session:
    """The connection to one remote service: its pool, token, limits and the retry loop."""

    def __init__(
        self,
        base_url: str,
        token: str | None,
        *,
        timeout: float,
        max_retries: int,
        max_response_bytes: int,
        transport: Transport | None,
        sleep: Callable[[float], None],
        random: Callable[[], float],
        allow_insecure_http: bool = False,
    ) -> None:
        _check_options(timeout, max_retries, max_response_bytes)
        url = _service_url(base_url)
        self._token = _checked_token(token)
        insecure = insecure_token_problem(base_url, self._token, allowed=allow_insecure_http)
        if insecure is not None:
            raise InvalidRequestError(insecure, param="base_url")
        self._scrubber = Scrubber(self._token)
        self._max_retries = max_retries
        self._max_bytes = max_response_bytes
        self._scheme = url.scheme
        self._timeout = float(timeout)
        self._timeouts = httpx.Timeout(
            self._timeout, connect=min(CONNECT_TIMEOUT, self._timeout)
        ).as_dict()
        self._sleep = sleep
        self._random = random
        port = f":{url.port}" if url.port is not None else ""
        # Named in messages; never the userinfo part of the URL.
        self.host = f"{url.host}{port}"
        self._base = url
        self._urls: dict[str, httpx.URL] = {}
        headers = [
            *_BASE_HEADERS,
            (b"User-Agent", f"convrisk/{__version__}".encode()),
            (b"Accept", b"application/json"),
        ]
        if self._token is not None:
            headers.append((b"Authorization", f"Bearer {self._token}".encode()))
        self._headers = headers
        if transport is None:
            proxy = environment_proxy(url)
            if proxy is not None and url.scheme == "http":
                # Over plain http the whole request, token included, reaches the proxy as it is.
                hop = proxy.url
                hop_url = f"{hop.scheme.decode()}://{hop.host.decode()}:{hop.port}/"
                problem = insecure_token_problem(hop_url, self._token, allowed=allow_insecure_http)
                if problem is not None:
                    raise InvalidRequestError(
                        f"{problem} (it is the proxy the environment sets for http://)",
                        param="proxy",
                    )
            transport = DeadlineTransport(https=url.scheme == "https", proxy=proxy)
        self._transport = transport
        # A capture (`--as-curl`) hands requests over in the order they are made: no batch
        # sends several at once.
        self.one_at_a_time = isinstance(transport, CaptureTransport)
        self._closed = False

    def close(self) -> None:
        """Close the connections (a request still in flight on another thread fails)."""
        if not self._closed:
            self._closed = True
            self._transport.close()

    def scrub(self, text: str) -> str:
        """`text` with the token replaced by `***`."""
        return self._scrubber.text(text)

    def scrub_bytes(self, data: bytes) -> bytes:
        """`data` (a body, in any encoding) with the token's ASCII bytes replaced by `***`."""
        return self._scrubber.bytes(data)

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
        stop: threading.Event | None = None,
    ) -> Answer:
        """Send one logical request, retrying per DESIGN 1.2; returns a 2xx answer or raises.

        `content` is a JSON body already encoded (instead of `body`). With `gone_is_done` (a
        delete), a 404 to a retry is the answer too when an earlier attempt may have been
        carried out (its answer was lost or was a 5xx): the object is gone. With `any_status`
        the last answer is returned whatever its status (`convrisk api`); only a failure to get
        one is raised. `retries` overrides max_retries for this request. Once `stop` is set (a
        batch stopped), no retry is made and no retry wait goes on.
        """
        max_retries = self._max_retries if retries is None else retries
        if self._closed:
            raise ConvriskError(f"The connection to {self.host} was already closed.")
        request = self._build(method, path, params, body, content, idempotency_key)
        shown = (path, params)  # made into text only for the debug log
        retry = 0
        maybe_done = False
        while True:
            started = time.monotonic()
            outcome = self._try(request, method, path)
            elapsed_ms = (time.monotonic() - started) * 1000
            if isinstance(outcome, Answer):
                status: int | None = outcome.status_code
                gone = gone_is_done and maybe_done and status == 404
                if outcome.is_success or gone:
                    self._log(method, shown, str(status), elapsed_ms, retry, None)
                    if gone or maybe_done:
                        landed = maybe_done
                        return replace(outcome, gone=gone, earlier_attempt_may_have_landed=landed)
                    return outcome
                error = self._error_for(outcome)
                answer: Answer | None = outcome
                reached = True
            else:
                status, error, answer, reached = None, outcome.error, None, outcome.reached
            maybe_done = maybe_done or may_have_taken_effect(status, reached=reached)
            retryable = should_retry(status, answer_unusable=isinstance(error, ServiceError))
            wait: float | None = None
            note = f"gave up after {retry + 1} attempts" if retryable and retry else None
            if retryable and retry < max_retries:
                asked = None if answer is None else _retry_after(answer.headers)
                wait = retry_wait(retry, asked, self._random())
                note = None if wait is not None else _too_long(asked)
            if stop is not None and stop.is_set():
                wait, note = None, None
            self._log(method, shown, _status_text(status, error), elapsed_ms, retry, wait)
            if wait is not None and self._pause(wait, stop):
                wait, note = None, None
            if wait is None:
                if any_status and answer is not None:
                    return answer
                raise with_note(error, note)
            retry += 1

    def _pause(self, seconds: float, stop: threading.Event | None) -> bool:
        """Wait `seconds` before a retry; True (at once) if `stop` is or gets set meanwhile."""
        if stop is None:
            self._sleep(seconds)
            return False
        if stop.is_set():
            return True
        if self._sleep is time.sleep:
            return stop.wait(seconds)
        self._sleep(seconds)  # a test's clock
        return stop.is_set()

    def _build(
        self,
        method: str,
        path: str,
        params: Mapping[str, str] | None,
        body: Mapping[str, Any] | None,
        content: bytes | None,
        idempotency_key: str | None,
    ) -> httpcore.Request:
        """The request every attempt sends: the same headers, body and Idempotency-Key."""
        url = self._url(path)
        target = url.raw_path
        if params:
            encoded = urlencode(params)
            if len(encoded) <= _WRITTEN_QUERY:
                # What httpx's copy_with(params=) writes: urlencode, nothing left to escape
                # (without parsing the URL again: a sixth of a page's request).
                target = target.partition(b"?")[0] + b"?" + encoded.encode("ascii")
            else:
                target = url.copy_with(params=params).raw_path
        if body is not None:
            try:
                content = json.dumps(dict(body), allow_nan=False, separators=(",", ":")).encode()
            except (TypeError, ValueError, RecursionError) as exc:
                raise InvalidRequestError(f"The request cannot be sent as JSON: {exc}.") from None
        headers = [(b"Host", url.netloc), *self._headers]
        if content is not None:
            headers.append((b"Content-Type", b"application/json"))
        if method == "POST":
            key = check_idempotency_key(idempotency_key) or str(uuid.uuid4())
            headers.append((b"Idempotency-Key", key.encode()))
        if content is not None or method in ("POST", "PUT", "PATCH"):
            headers.append((b"Content-Length", str(len(content or b"")).encode()))
        # Host and Content-Length as httpx.Request(content=...) would write them.
        return httpcore.Request(
            method,
            httpcore.URL(scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=target),
            headers=headers,
            content=content or b"",
            extensions={"timeout": self._timeouts},
        )

    def _url(self, target: str) -> httpx.URL:
        """`target` (a path under /v1/, with its query) under the base URL, as httpx joins them."""
        url = self._urls.get(target)
        if url is None:
            joined = self._base.raw_path + httpx.URL(target).raw_path.lstrip(b"/")
            url = self._base.copy_with(raw_path=joined)
            if len(self._urls) < _KEPT_URLS:
                self._urls[target] = url
        return url

    def _try(self, request: httpcore.Request, method: str, path: str) -> Answer | _Failure:
        """One attempt: its answer, or why there is none."""
        try:
            return self._send(request)
        except httpx.TimeoutException as exc:
            return _Failure(timeout_error(self.host, exc, self._timeout), reached_service(exc))
        except httpx.DecodingError:
            return _Failure(undecodable_error(self.host, method, path), reached=True)
        except TooLarge as exc:
            too_large = too_large_error(self.host, method, path, self._max_bytes, exc)
            return _Failure(too_large, reached=True)
        except httpx.RemoteProtocolError as exc:
            if malformed_answer(exc):
                bad = malformed_error(self.host, method, path, exc, self.scrub)
                return _Failure(bad, reached=True)
            broken = connection_error(self.host, exc, self._scheme, self.scrub)
            return _Failure(broken, reached_service(exc))
        except httpx.RequestError as exc:
            broken = connection_error(self.host, exc, self._scheme, self.scrub)
            return _Failure(broken, reached_service(exc))

    def _send(self, request: httpcore.Request) -> Answer:
        """One attempt, over within `timeout` seconds of starting, from connect to last byte.

        The deadline reaches every socket wait of the default transport (api_client.remote.deadline)
        and is checked again between chunks of the body, which also bounds time spent decoding
        (the only bound with a transport of the caller's).
        """
        at = time.monotonic() + self._timeout
        with deadline(at):
            # A timeout before the headers are in reads "waiting for the answer"...
            response = self._transport.handle_request(request)
            try:
                return self._read(response, at)
            except httpx.ReadTimeout as exc:
                # ... and one in the body, cut short by the deadline, "the whole answer".
                if isinstance(exc, AnswerTooSlow) or time.monotonic() < at:
                    raise
                raise AnswerTooSlow("the whole answer took longer than the timeout") from exc
            finally:
                response.close()

    def _read(self, response: httpx.Response, at: float) -> Answer:
        """The body decoded, at most `max_response_bytes` of it held: beyond is `TooLarge`."""
        encoding, declared = b"identity", b""
        for name, value in response.headers.raw:
            lowered = name.lower()
            if lowered == b"content-encoding":
                encoding = value
            elif lowered == b"content-length":
                declared = value
        chunks: Iterable[bytes] = response.iter_bytes()
        if encoding.strip().lower() == b"identity" and isinstance(response.stream, Iterable):
            # Nothing to decode: the body as the transport gives it, without httpx's decoder and
            # chunker around it (a tenth of a create's CPU in the client).
            chunks = response.stream
        content = self._body(declared.decode("latin-1"), chunks, at)
        return Answer(
            status_code=response.status_code,
            reason_phrase=response.reason_phrase,
            headers=response.headers,
            content=content,
        )

    def _body(self, declared: str, chunks: Iterable[bytes], at: float) -> bytes:
        """The chunks of a body joined, by the deadline and within the size limit (a declared
        Content-Length over it is refused before reading)."""
        declared = declared.strip()
        if declared.isdigit() and int(declared) > self._max_bytes:
            raise TooLarge(int(declared))
        held: list[bytes] = []
        size = 0
        for chunk in chunks:
            size += len(chunk)
            if size > self._max_bytes:
                raise TooLarge()
            if time.monotonic() > at:
                raise AnswerTooSlow("the whole answer took longer than the timeout")
            held.append(chunk)
        return b"".join(held)

    def _error_for(self, answer: Answer) -> ConvriskError:
        return answer_error(
            answer.status_code, answer.reason_phrase, answer.headers, answer.content, self.scrub
        )

    def _log(
        self,
        method: str,
        shown: tuple[str, Mapping[str, str] | None],
        status: str,
        elapsed_ms: float,
        retry: int,
        wait: float | None,
    ) -> None:
        if not logger.isEnabledFor(logging.DEBUG):
            return
        path, params = shown
        target = f"{path}?{httpx.QueryParams(params)}" if params else path
        attempt = f"attempt {retry + 1}/{self._max_retries + 1}"
        then = f", retrying in {wait:.2f} s" if wait is not None else ""
        logger.debug(
            "%s %s -> %s in %.0f ms (%s%s)",
            method,
            self.scrub(target),
            status,
            elapsed_ms,
            attempt,
            then,
        )


def _status_text(status: int | None, error: ConvriskError) -> str:
    """What the debug log names as an attempt's outcome: its status, or the failure."""
    return str(status) if status is not None else failure_text(error)


def _retry_after(headers: httpx.Headers) -> float | None:
    return parse_retry_after(headers.get("Retry-After"), headers.get("Date"), time.time())


def _too_long(asked: float | None) -> str:
    return (
        f"the service asked to retry after {asked or 0:.0f} s, over the "
        f"{MAX_RETRY_AFTER:.0f} s this client waits; not retried"
    )


def _check_options(timeout: float, max_retries: int, max_response_bytes: int) -> None:
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        raise InvalidRequestError("timeout must be a number of seconds above 0.", param="timeout")
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


def _service_url(base_url: str) -> httpx.URL:
    """The checked base_url as httpx joins paths to it: ending in '/', without a final /v1."""
    if not isinstance(base_url, str):
        raise InvalidRequestError("base_url must be a string.", param="base_url")
    problem = base_url_problem(base_url)
    url = None
    if problem is None:
        try:
            url = httpx.URL(base_url.strip())
        except (httpx.InvalidURL, TypeError, ValueError):
            problem = f"base_url is not a URL the client can send to: {shown_url(base_url)!r}."
    if url is None:
        raise InvalidRequestError(problem or "base_url is not a URL.", param="base_url")
    path = url.raw_path
    # The operations' paths start with /v1, so a base_url copied with it names the same service
    # (it used to give `Unknown route: GET /v1/v1/...`, a 404 that reads as "already gone").
    if path.rstrip(b"/").endswith(b"/v1"):
        path = path.rstrip(b"/")[: -len(b"/v1")]
    return url.copy_with(raw_path=path if path.endswith(b"/") else path + b"/")


def _checked_token(token: str | None) -> str | None:
    """The token as sent (None: none), refused without echoing it when it cannot be a header."""
    if token is None or not token.strip():
        return None
    token = token.strip()
    problem = token_problem(token)
    if problem is not None:
        raise InvalidRequestError(problem, param="token")
    return token
