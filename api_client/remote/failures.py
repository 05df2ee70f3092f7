"""What went wrong with an attempt, as the client's errors: timeouts, broken connections,
answers too large or undecodable, and error answers (each message free of the token)."""

from __future__ import annotations

import json
import ssl
from collections.abc import Callable
from typing import TypeVar

import httpx

from convrisk.api_client.errors import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    ConvriskError,
    ServiceError,
    error_from_response,
)
from convrisk.api_client.raw import redirect_error

MIB = 1024 * 1024
# Where a user raises the limit (cli/settings.py); named in the error.
_SIZE_SETTING = "max_response_mb (CONVRISK_MAX_RESPONSE_MB)"

# The code of a ServiceError for an answer that breaks HTTP.
_MALFORMED = "malformed_answer"

E = TypeVar("E", bound=ConvriskError)
Scrub = Callable[[str], str]


class AnswerTooSlow(httpx.ReadTimeout):
    """The whole answer did not arrive within the attempt's deadline."""


class TooLarge(Exception):
    """The answer weighs more than the limit (decoded), or declares so in its Content-Length."""

    def __init__(self, declared: int | None = None) -> None:
        super().__init__("the answer is over the size limit")
        self.declared = declared


def timeout_error(host: str, exc: httpx.TimeoutException, timeout: float) -> APITimeoutError:
    """The error of an attempt that ran out of time, naming what it was waiting for."""
    return APITimeoutError(
        f"{host} did not answer in time ({_what_timed_out(exc)}, timeout {timeout:g} s)."
    )


def connection_error(
    host: str, exc: httpx.RequestError, scheme: str, scrub: Scrub
) -> APIConnectionError:
    """The error of an attempt whose connection failed or broke."""
    return APIConnectionError(f"Could not reach {host}: {_describe(exc, scheme, scrub)}.")


def malformed_answer(exc: httpx.RemoteProtocolError) -> bool:
    """Whether the service sent an answer that is not HTTP (a bad status line, an illegal
    header such as a Location holding a NUL), rather than closing the connection before the
    answer was complete (a broken connection, worth a retry). httpcore tells the two apart
    only in its words: the closings say "disconnected" or "closed connection"."""
    text = str(exc).lower()
    return not any(word in text for word in ("disconnected", "closed connection", "peer state"))


def malformed_error(
    host: str, method: str, path: str, exc: Exception, scrub: Scrub
) -> ServiceError:
    """The error of an answer that breaks HTTP: a bad answer from the service, not retried."""
    text = str(exc).strip()
    return ServiceError(
        scrub(f"The answer from {host} to {method} {path} is not valid HTTP ({text})."),
        code=_MALFORMED,
    )


def undecodable_error(host: str, method: str, path: str) -> ServiceError:
    """The error of an answer whose Content-Encoding could not be undone."""
    return ServiceError(f"The answer from {host} to {method} {path} could not be decoded.")


def too_large_error(host: str, method: str, path: str, limit: int, exc: TooLarge) -> ServiceError:
    """The error of an answer over the size limit, saying how to raise it."""
    how = "stopped reading it"
    if exc.declared is not None:
        how = f"it declared {exc.declared} bytes, not read"
    return ServiceError(
        f"The answer from {host} to {method} {path} is over the {_size_text(limit)} limit on a "
        f"response ({how}); raise {_SIZE_SETTING} if the service is trusted.",
        code="response_too_large",
    )


def answer_error(
    status: int, reason: str, headers: httpx.Headers, content: bytes, scrub: Scrub
) -> APIError:
    """The error an answer of 300 or more stands for (DESIGN 1.3: any body, or none)."""
    if 300 <= status < 400:
        return redirect_error(status, reason, headers.get("Location", ""))
    try:
        body: object = json.loads(content) if content else None
    except (ValueError, RecursionError):
        body = None
    error = error_from_response(status, body, reason=reason)
    if error.param is not None:
        error.param = scrub(error.param)
    error.code = scrub(error.code)
    return with_note(error, None, scrub=scrub)


def with_note(error: E, note: str | None, *, scrub: Scrub | None = None) -> E:
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


def failure_text(error: ConvriskError) -> str:
    """What the debug log says in place of a status when no usable answer came."""
    if isinstance(error, APITimeoutError):
        return "timeout"
    if isinstance(error, APIConnectionError):
        return "connection error"
    if isinstance(error, APIError) and error.code == _MALFORMED:
        return "answer not valid HTTP"
    return "undecodable answer"


def _describe(exc: httpx.RequestError, scheme: str, scrub: Scrub) -> str:
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
    if scheme == "https" and _plain_http_answered_tls(exc):
        kind = "the port seems to speak plain HTTP, not HTTPS; try http:// in base_url"
    return scrub(f"{kind} ({text})" if text else kind)


def _what_timed_out(exc: httpx.TimeoutException) -> str:
    if isinstance(exc, httpx.ConnectTimeout):
        return "connecting"
    if isinstance(exc, httpx.WriteTimeout):
        return "sending the request"
    if isinstance(exc, httpx.PoolTimeout):
        return "waiting for a free connection"
    if isinstance(exc, AnswerTooSlow):
        return "the whole answer took longer"
    return "waiting for the answer"


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
