"""The remote Backend: the service's ten operations over HTTP with httpx (DESIGN 1.2 and 1.3)."""

from __future__ import annotations

import email.utils
import json
import logging
import math
import random as _random
import re
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx
import pydantic

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
from .models import Conversation, Deleted, Page, Resource, RiskProfile
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
    check_risk_profile_create,
    check_risk_profile_update,
    check_text,
    token_problem,
)
from .protocol import ConversationsBackend, RiskProfilesBackend

logger = logging.getLogger("convrisk.http")

RETRY_STATUSES = frozenset({408, 409, 429})
MAX_RETRY_AFTER = 120.0
CONNECT_TIMEOUT = 5.0

M = TypeVar("M", bound=Resource)
C = TypeVar("C", bound=Mapping[str, Any])
U = TypeVar("U", bound=Mapping[str, Any])
F = TypeVar("F", bound=Mapping[str, Any])


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
    return url


# Characters a bearer token is made of (RFC 6750 b64token); the token ends where they do.
_TOKEN_CHARS = r"A-Za-z0-9\-._~+/="
_WHOLE_ONLY_BELOW = 8


class _AnswerTooSlow(httpx.ReadTimeout):
    """The whole answer did not arrive within the attempt's deadline."""


class _DeadlineStream(httpx.SyncByteStream):
    """A response body that fails with `_AnswerTooSlow` once the deadline has passed."""

    def __init__(self, stream: httpx.SyncByteStream, deadline: float) -> None:
        self._stream = stream
        self._deadline = deadline

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._stream:
            if time.monotonic() > self._deadline:
                raise _AnswerTooSlow("the whole answer took longer than the timeout")
            yield chunk

    def close(self) -> None:
        """Close the underlying stream (returning the connection to the pool if it was read)."""
        self._stream.close()


class _Transport:
    """One pooled httpx.Client, the retry loop, error mapping and debug logging."""

    def __init__(
        self,
        base_url: str,
        token: str | None,
        *,
        timeout: float,
        max_retries: int,
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
        url = _check_base_url(base_url)
        self._token = _check_token(token)
        self._max_retries = max_retries
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
        self._http = httpx.Client(
            base_url=url,
            headers=headers,
            timeout=httpx.Timeout(self._timeout, connect=min(CONNECT_TIMEOUT, self._timeout)),
            follow_redirects=False,
            transport=transport,
        )

    def close(self) -> None:
        """Close the pooled connections."""
        self._http.close()

    def _scrub(self, text: str) -> str:
        if not self._token:
            return text
        if len(self._token) >= _WHOLE_ONLY_BELOW:
            return text.replace(self._token, "***")
        # A short token ("T") is hidden only where it stands whole, so "HTTP" stays readable.
        token = re.escape(self._token)
        return re.sub(rf"(?<![{_TOKEN_CHARS}]){token}(?![{_TOKEN_CHARS}])", "***", text)

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
        gone_is_done: bool = False,
    ) -> httpx.Response:
        """Send one logical request, retrying per DESIGN 1.2; returns a 2xx answer or raises.

        With `gone_is_done` (a delete), a 404 to a retry is the answer too when an earlier attempt
        may have been carried out (its answer was lost or was a 5xx): the object is gone.
        """
        if self._http.is_closed:
            raise ConvriskError(f"The connection to {self.host} was already closed.")
        headers: dict[str, str] = {}
        content: bytes | None = None
        if body is not None:
            try:
                content = json.dumps(dict(body), allow_nan=False, separators=(",", ":")).encode()
            except (TypeError, ValueError, RecursionError) as exc:
                raise InvalidRequestError(f"The request cannot be sent as JSON: {exc}.") from None
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
            response: httpx.Response | None = None
            error: ConvriskError
            # Whether this attempt may have reached the service (then the request may be done).
            reached = True
            try:
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
            if not retryable:
                self._log(method, shown, status_text, elapsed_ms, retry, None)
                raise error
            if retry >= self._max_retries:
                self._log(method, shown, status_text, elapsed_ms, retry, None)
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
    ) -> httpx.Response:
        """One attempt, answer read in full within `timeout` seconds of sending (DESIGN 1.2).

        httpx's timeout bounds each read separately, so the body is streamed and the deadline
        checked between chunks; the response is closed, so a fully read connection is reused.
        """
        deadline = time.monotonic() + self._timeout
        request = self._http.build_request(
            method, path, params=params, content=content, headers=headers
        )
        response = self._http.send(request, stream=True)
        try:
            if isinstance(response.stream, httpx.SyncByteStream):
                response.stream = _DeadlineStream(response.stream, deadline)
            response.read()
        finally:
            response.close()
        return response

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
        return self._scrub(f"{kind} ({text})" if text else kind)

    def _error_for(self, response: httpx.Response) -> APIError:
        status = response.status_code
        if 300 <= status < 400:
            target = httpx.URL(response.headers.get("Location", ""))
            where = f" to {target.host}" if target.host else ""
            return ServiceError(
                f"The service answered HTTP {status} {response.reason_phrase}, a redirect{where}; "
                "redirects are not followed (check base_url).",
                status=status,
            )
        try:
            body: object = json.loads(response.content) if response.content else None
        except (ValueError, RecursionError):
            body = None
        error = error_from_response(status, body, reason=response.reason_phrase)
        if error.param is not None:
            error.param = self._scrub(error.param)
        error.code = self._scrub(error.code)
        return _with_note(error, None, scrub=self._scrub)

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
            self._scrub(shown),
            status,
            elapsed_ms,
            attempt,
            then,
        )


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


def _json_body(response: httpx.Response, what: str) -> object:
    status = response.status_code
    if not response.content.strip():
        raise ServiceError(
            f"The service answered HTTP {status} with an empty body where {what} was expected.",
            status=status,
        )
    try:
        return json.loads(response.content)
    except (ValueError, RecursionError):
        kind = response.headers.get("Content-Type", "").split(";")[0].strip() or "unknown type"
        raise ServiceError(
            f"The service answered HTTP {status} with a body that is not JSON ({kind}) where "
            f"{what} was expected.",
            status=status,
        ) from None


def _validate(model: type[pydantic.BaseModel], data: object, status: int, what: str) -> Any:
    try:
        return model.model_validate(data)
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the body"
        raise ServiceError(
            f"The service answered HTTP {status} with {what} that does not fit: "
            f"{where}: {first['msg']} ({exc.error_count()} problem(s)).",
            status=status,
        ) from None
    except (ValueError, RecursionError) as exc:
        raise ServiceError(
            f"The service answered HTTP {status} with {what} that cannot be read: {exc}.",
            status=status,
        ) from None


def _query_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class HTTPResource(Generic[M, C, U, F]):
    """list / create / retrieve / update / delete of one resource over HTTP (path + model)."""

    def __init__(
        self,
        transport: _Transport,
        *,
        name: ResourceName,
        path: str,
        model: type[M],
        noun: str,
        check_create: Callable[[object], C],
        check_update: Callable[[object], U],
    ) -> None:
        self._t = transport
        self._name: ResourceName = name
        self._path = path
        self._model = model
        self._noun = noun
        self._check_create = check_create
        self._check_update = check_update

    def _item_path(self, id: str) -> str:
        if not isinstance(id, str) or id.strip() in ("", ".", ".."):
            raise NotFoundError(f"No such {self._noun}: {id!r}.", param="id")
        check_text(id, "id")
        return f"{self._path}/{quote(id, safe='')}"

    def _one(self, response: httpx.Response) -> M:
        what = f"a {self._noun}"
        data = _json_body(response, what)
        result: M = _validate(self._model, data, response.status_code, what)
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
            if cursor is None:
                continue
            if not isinstance(cursor, str) or not cursor:
                raise InvalidRequestError(f"{key} must be a non-empty id.", param=key)
            check_text(cursor, key)
            query[key] = cursor
        if starting_after is not None and ending_before is not None:
            raise InvalidRequestError(
                "Give at most one of starting_after and ending_before.", param="ending_before"
            )
        response = self._t.request("GET", self._path, params=query)
        what = f"a page of {self._noun}s"
        data = _json_body(response, what)
        return _validate_page(self._model, data, response.status_code, what)

    def create(self, params: C, *, idempotency_key: str | None = None) -> M:
        """Create an object; the same Idempotency-Key is sent on each retry."""
        checked = self._check_create(params)
        body = {k: v for k, v in checked.items() if v is not None}
        response = self._t.request("POST", self._path, body=body, idempotency_key=idempotency_key)
        return self._one(response)

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


def _validate_page(model: type[M], data: object, status: int, what: str) -> Page[M]:
    page_type: type[Page[M]] = Page[model]  # type: ignore[valid-type]
    result: Page[M] = _validate(page_type, data, status, what)
    return result


class HTTPBackend:
    """The Backend of a remote service at `base_url`, over one pooled httpx.Client."""

    def __init__(
        self,
        base_url: str,
        token: str | None,
        *,
        timeout: float = 30.0,
        max_retries: int = 2,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        random: Callable[[], float] = _random.random,
    ) -> None:
        self._transport = _Transport(
            base_url,
            token,
            timeout=timeout,
            max_retries=max_retries,
            transport=transport,
            sleep=sleep,
            random=random,
        )
        self._conversations: HTTPResource[
            Conversation, ConversationCreateParams, ConversationUpdateParams, ConversationFilters
        ] = HTTPResource(
            self._transport,
            name="conversations",
            path="/v1/conversations",
            model=Conversation,
            noun="conversation",
            check_create=check_conversation_create,
            check_update=check_conversation_update,
        )
        self._risk_profiles: HTTPResource[
            RiskProfile, RiskProfileCreateParams, RiskProfileUpdateParams, RiskProfileFilters
        ] = HTTPResource(
            self._transport,
            name="risk_profiles",
            path="/v1/risk-profiles",
            model=RiskProfile,
            noun="risk profile",
            check_create=check_risk_profile_create,
            check_update=check_risk_profile_update,
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
