"""The one error tree, and the one table between HTTP statuses and errors (used both ways)."""

from __future__ import annotations

from typing import Any


class ConvriskError(Exception):
    """Base of every error the client raises.

    `before_write` is True on an error met by the read a remote `change` or `remove` makes
    right before its write: that write was never sent, so nothing was written.
    """

    before_write: bool = False

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class APIConnectionError(ConvriskError):
    """The service could not be reached (connection refused, reset, DNS...)."""


class APITimeoutError(APIConnectionError):
    """The service did not answer in time."""


class NotSent(ConvriskError):
    """An item of a batch that was never sent: an earlier error stopped the batch."""

    def __init__(self, message: str = "Not sent: the batch stopped at an earlier error.") -> None:
        super().__init__(message)


class ChangedSince(ConvriskError):
    """A conditional write (`expect=`) found the record not as expected: nothing was written.

    `fields` names the expected fields that differ; `current` is the record as it was read
    (locally inside the write's own transaction, remotely right before the write).
    """

    def __init__(self, id: str, fields: list[str], current: dict[str, Any]) -> None:
        super().__init__(f"{id} changed since ({', '.join(fields)}): nothing was written.")
        self.id = id
        self.fields = fields
        self.current = current


class APIError(ConvriskError):
    """The service answered with an error, or a request was refused before it was sent.

    `answered` tells the two apart: it is True only for an error built from an HTTP answer
    (one given the answer's `status`); an error raised by a check before any request (the
    input rules of `params`, the local backend) has the default status of its class and
    `answered` False. The command line exits 2 for such an invalid request and 1 for a
    refusal that came back from a service.
    """

    type: str = "api_error"
    default_status: int = 500

    def __init__(
        self,
        message: str,
        *,
        param: str | None = None,
        status: int | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.param = param
        self.status = self.default_status if status is None else status
        self.answered = status is not None
        if code is None:
            code = STATUS_TABLE[self.status][1] if self.status in STATUS_TABLE else self.type
        self.code = code

    def to_body(self) -> dict[str, Any]:
        """The wire body of this error: `{"error": {type, code, message, param}}`."""
        return {
            "error": {
                "type": self.type,
                "code": self.code,
                "message": self.message,
                "param": self.param,
            }
        }


class InvalidRequestError(APIError):
    """The request was malformed or broke a rule; `param` names the offending field."""

    type = "invalid_request_error"
    default_status = 400


class AuthenticationError(APIError):
    """The token is missing or wrong."""

    type = "authentication_error"
    default_status = 401


class PermissionDeniedError(AuthenticationError):
    """The token was accepted, but this operation is not allowed (a write to `serve
    --read-only`): an authentication error for the exit code (4), without blaming the token."""

    type = "permission_error"
    default_status = 403


class NotFoundError(APIError):
    """No such object or route."""

    type = "not_found_error"
    default_status = 404


class ServiceError(APIError):
    """The service failed (5xx), or answered something that cannot be understood."""

    type = "api_error"
    default_status = 500


def stops_every_request(error: BaseException) -> bool:
    """Whether every other request to the same service would fail alike: it cannot be reached,
    or it refused the token."""
    return isinstance(error, APIConnectionError | AuthenticationError)


# The one table between HTTP statuses and errors, read both ways: the server takes an error's
# status (`APIError.default_status`) and code from it, and the remote client maps a status back
# to an error class with `error_class_for_status`. Statuses not listed map by family.
STATUS_TABLE: dict[int, tuple[type[APIError], str]] = {
    400: (InvalidRequestError, "invalid_request"),
    401: (AuthenticationError, "unauthorized"),
    403: (PermissionDeniedError, "forbidden"),
    404: (NotFoundError, "not_found"),
    405: (InvalidRequestError, "method_not_allowed"),
    408: (ServiceError, "request_timeout"),
    409: (ServiceError, "conflict"),
    413: (InvalidRequestError, "body_too_large"),
    415: (InvalidRequestError, "unsupported_media_type"),
    429: (ServiceError, "rate_limited"),
    500: (ServiceError, "internal_error"),
    503: (ServiceError, "service_unavailable"),
}

_BY_TYPE: dict[str, type[APIError]] = {
    cls.type: cls
    for cls in (
        InvalidRequestError,
        AuthenticationError,
        PermissionDeniedError,
        NotFoundError,
        ServiceError,
    )
}


def error_class_for_status(status: int) -> type[APIError]:
    """The error class a response status maps to (the reverse of `APIError.status`)."""
    if status in STATUS_TABLE:
        return STATUS_TABLE[status][0]
    if 400 <= status < 500:
        return InvalidRequestError
    return ServiceError


def error_from_response(status: int, body: object, *, reason: str = "") -> APIError:
    """Build the error for an HTTP error answer, whatever shape (or none) its body has.

    The message always names the HTTP status: the service's own message followed by
    `(HTTP <status>)`, or the status line when the body carries no message.
    """
    cls = error_class_for_status(status)
    message = ""
    param: str | None = None
    code: str | None = None
    detail = body.get("error") if isinstance(body, dict) else None
    if isinstance(detail, dict):
        message = str(detail.get("message") or "")
        param = detail.get("param") if isinstance(detail.get("param"), str) else None
        code = detail.get("code") if isinstance(detail.get("code"), str) else None
        by_type = _BY_TYPE.get(str(detail.get("type")))
        # Trust a known error type only where it agrees with the status family.
        if by_type is not None and by_type.default_status // 100 == status // 100:
            cls = by_type
    elif isinstance(detail, str):
        message = detail
    elif isinstance(body, dict) and isinstance(body.get("message"), str):
        message = body["message"]
    message = message.strip()
    if message:
        message = f"{message} (HTTP {status})"
    else:
        message = f"The service answered HTTP {status} {reason}".rstrip() + " with no error message"
    return cls(message, param=param, status=status, code=code)
