"""The wire rules of DESIGN section 1 as a plain function of a request: what `serve` answers.

No socket and no framework here. `Wire.handle(method, path, query, headers, body)` returns the
status, headers and body of the answer; the ASGI app of `convrisk serve`
(local_backend.serve.asgi_app,
on uvicorn and Starlette) and an in-process caller both go through it. A server calls `start`
first (every check that needs no body, so it can refuse before reading one), then `finish`.
The input rules stay in the backend (`api_client.params`); errors become statuses through the
one table in `api_client.errors`.
"""

from __future__ import annotations

import hmac
import json
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NoReturn
from urllib.parse import parse_qsl, unquote

from convrisk.api_client.errors import (
    APIError,
    AuthenticationError,
    InvalidRequestError,
    NotFoundError,
    ServiceError,
)
from convrisk.api_client.params import DEFAULT_LIMIT, MAX_LIMIT, QUERY_BOOLEANS
from convrisk.api_client.params import MAX_BODY_BYTES as MAX_BODY_BYTES
from convrisk.api_client.protocol import Backend, ResourceBackend
from convrisk.api_client.records import REPLAYED_HEADER, Created
from convrisk.api_client.resources import RESOURCES, Resource
from convrisk.api_client.text import printable
from convrisk.local_backend.store.database import WouldWait, waiting_allowed
from convrisk.local_backend.store.resource import TableResource

OPENAPI_PATH = "/openapi.json"
MAX_QUERY_FIELDS = 50
_MAX_LIMIT_DIGITS = 6
COLLECTION_METHODS = ("GET", "POST")
ITEM_METHODS = ("GET", "PUT", "DELETE")
PAGING = ("limit", "starting_after", "ending_before")
# What a client is told when the server failed; the reason (which may name files) is logged.
SERVER_FAILED = "The server could not complete the request; the reason is in its log."

# (lower-case name, value) in the order received; values as latin-1 text (the bytes sent).
Headers = Sequence[tuple[str, str]]
AnyResource = ResourceBackend[Any, Any, Any, Any]


# The resources by the path of their collection: `/v1/risk-profiles`.
ROUTES: dict[str, Resource] = {resource.path: resource for resource in RESOURCES.values()}
# Each resource's list: the query parameters it takes, and its filters as (name, type). Only the
# interface's filters: a sandbox that took convrisk's own (contact_id) would pass a client that
# a real service fails.
_LISTS: dict[str, tuple[tuple[str, ...], tuple[tuple[str, str], ...]]] = {
    name: (
        PAGING + tuple(f.name for f in resource.interface_filters()),
        tuple((f.name, f.type) for f in resource.interface_filters()),
    )
    for name, resource in RESOURCES.items()
}


@dataclass(frozen=True)
class Answer:
    """What the server sends back; `internal` is for the log only, never sent."""

    status: int
    body: bytes
    headers: tuple[tuple[str, str], ...] = ()
    internal: str | None = None

    def json(self) -> Any:
        """The body, parsed."""
        return json.loads(self.body)


@dataclass(frozen=True)
class Call:
    """A request that passed every check that needs no body; `finish` runs it."""

    method: str
    route: Resource
    object_id: str | None
    query: dict[str, str]
    idempotency_key: str | None
    # POST and PUT: the body to parse; None when it is absent and untyped (means `{}`).
    wants_body: bool


def is_create(call: Call) -> bool:
    """Whether the call creates an object (a POST to a collection)."""
    return call.method == "POST" and call.object_id is None


class _Reply(Exception):
    """Internal: stop and answer with this error (and these extra headers)."""

    def __init__(self, error: APIError, headers: tuple[tuple[str, str], ...] = ()) -> None:
        super().__init__(error.message)
        self.error = error
        self.headers = headers


def _fail(error: APIError, *headers: tuple[str, str]) -> NoReturn:
    raise _Reply(error, headers)


def json_answer(status: int, payload: Any, headers: tuple[tuple[str, str], ...] = ()) -> Answer:
    """A JSON answer (compact, ASCII) with these extra headers."""
    body = json.dumps(payload, separators=(",", ":"), allow_nan=False).encode("ascii")
    return Answer(status, body, headers)


def error_answer(
    error: APIError, headers: tuple[tuple[str, str], ...] = (), internal: str | None = None
) -> Answer:
    """The answer for an error; a server failure (5xx) says no more than SERVER_FAILED."""
    if error.status >= 500:
        internal = internal or error.message
        error = ServiceError(SERVER_FAILED, status=error.status, code=error.code)
    answer = json_answer(error.status, error.to_body(), headers)
    return Answer(answer.status, answer.body, answer.headers, internal)


class Wire:
    """The HTTP interface over one Backend; `token` None means no authentication (in-process)."""

    def __init__(self, backend: Backend, token: str | None) -> None:
        if token is not None and not token:
            raise ValueError("serve needs a non-empty token")
        self.backend = backend
        self._token = None if token is None else token.encode("ascii")
        self._openapi: bytes | None = None

    # -- the whole request ----------------------------------------------------------------------

    def handle(
        self, method: str, path: str, query: str, headers: Headers, body: bytes = b""
    ) -> Answer:
        """Answer one request, whole (an in-process caller, or a test)."""
        started = self.start(method, path, query, headers, body_length=len(body))
        if isinstance(started, Answer):
            return started
        return self.finish(started, body)

    def start(
        self,
        method: str,
        path: str,
        query: str,
        headers: Headers,
        *,
        body_length: int | None = None,
    ) -> Call | Answer:
        """Every check that needs no body, in order: the answer, or the call to finish.

        `path` is the path as sent (percent-encoded); `body_length` the body's size when known
        (else the Content-Length header is read).
        """
        try:
            if path == OPENAPI_PATH:
                return self._openapi_answer(method)
            self._authenticate(headers)
            route, object_id = _route(method, path)
            allowed = COLLECTION_METHODS if object_id is None else ITEM_METHODS
            if method not in allowed:
                _fail(
                    InvalidRequestError(
                        f"Method {printable(method)} is not allowed here; "
                        f"allowed: {', '.join(allowed)}.",
                        status=405,
                    ),
                    ("allow", ", ".join(allowed)),
                )
            params = _parse_query(query)
            if not (object_id is None and method == "GET"):
                _reject_query(params, ())
            wants_body = method in ("POST", "PUT") and _check_framing(headers, body_length)
            key = _single(headers, "idempotency-key")
            key = key.strip() or None if key is not None else None
            return Call(method, route, object_id, params, key, wants_body)
        except _Reply as reply:
            return error_answer(reply.error, reply.headers)
        except APIError as exc:
            return error_answer(exc)

    def finish(self, call: Call, body: bytes) -> Answer:
        """Parse the body and run the operation on the backend (blocking: it may write)."""
        try:
            resource: AnyResource = getattr(self.backend, call.route.name)
            if call.object_id is None and call.method == "GET":
                return _ok(_list(resource, call.route, call.query))
            payload = _json_body(body) if call.wants_body else {}
            if call.object_id is None:
                (created,) = resource.create_many([(payload, call.idempotency_key)])
                if not isinstance(created, Created):
                    raise created
                return _created(created)
            if call.method == "GET":
                return _ok(_dump(resource.retrieve(call.object_id)))
            if call.method == "PUT":
                return _ok(_dump(resource.update(call.object_id, payload)))
            return _ok(_dump(resource.delete(call.object_id)))
        except _Reply as reply:
            return error_answer(reply.error, reply.headers)
        except APIError as exc:
            return error_answer(exc)
        except WouldWait:
            raise  # the caller runs it again where waiting is harmless (see database.never_wait)
        except Exception:
            return error_answer(ServiceError(SERVER_FAILED), internal=traceback.format_exc())

    def finish_creates(self, calls: Sequence[tuple[Call, bytes]]) -> list[Answer]:
        """Finish several creates of one resource (calls `is_create` accepts) together, in one
        `create_many` (one transaction locally); the answers in order, each what `finish` would
        give for that call alone.

        A body that does not parse is its own answer; anything create_many raises (a database
        failure rolls its batch back whole) sends the calls through `finish` one by one, so a
        failure is each request's own, as without batching. WouldWait goes through, with
        nothing written; so does that failure under `never_wait()`, so that the one-by-one
        run happens where waiting is allowed and cannot stop half way.
        """
        if not calls:
            return []
        route = calls[0][0].route
        if any(call.route != route or not is_create(call) for call, _ in calls):
            raise ValueError("finish_creates takes creates of one resource")
        answers: list[Answer | None] = [None] * len(calls)
        items: list[tuple[int, Any, str | None]] = []
        for index, (call, body) in enumerate(calls):
            try:
                payload = _json_body(body) if call.wants_body else {}
            except _Reply as reply:
                answers[index] = error_answer(reply.error, reply.headers)
                continue
            items.append((index, payload, call.idempotency_key))
        if items:
            resource: AnyResource = getattr(self.backend, route.name)
            try:
                results = resource.create_many([(payload, key) for _, payload, key in items])
            except WouldWait:
                raise
            except Exception as exc:
                if not waiting_allowed():
                    raise WouldWait(f"create_many failed: {exc}") from exc
                results = None
            for position, (index, _, _) in enumerate(items):
                result = results[position] if results is not None else None
                if isinstance(result, APIError):
                    answers[index] = error_answer(result)
                elif isinstance(result, Created):
                    answers[index] = _created(result)
                else:
                    answers[index] = self.finish(*calls[index])
        done = [answer for answer in answers if answer is not None]
        assert len(done) == len(calls)
        return done

    def refuse_token(self, headers: Headers) -> Answer | None:
        """The 401 answer when the bearer token is missing or wrong; None when it is right."""
        try:
            self._authenticate(headers)
        except _Reply as reply:
            return error_answer(reply.error, reply.headers)
        return None

    # -- rules ----------------------------------------------------------------------------------

    def _authenticate(self, headers: Headers) -> None:
        if self._token is None:
            return
        header = _single(headers, "authorization")
        if header is None:
            _fail(
                AuthenticationError("Missing bearer token (Authorization: Bearer <token>)."),
                ("www-authenticate", 'Bearer realm="convrisk"'),
            )
        scheme, _, given = header.strip().partition(" ")
        try:
            sent = given.strip().encode("latin-1")
        except UnicodeEncodeError:
            sent = b""
        # Compared in constant time whatever the scheme, so timing tells nothing either way.
        matches = hmac.compare_digest(sent, self._token)
        if scheme.lower() != "bearer" or not matches:
            _fail(
                AuthenticationError("Invalid bearer token."),
                ("www-authenticate", 'Bearer realm="convrisk", error="invalid_token"'),
            )

    def _openapi_answer(self, method: str) -> Answer:
        if method != "GET":
            _fail(
                InvalidRequestError(
                    f"Method {printable(method)} is not allowed here; allowed: GET.", status=405
                ),
                ("allow", "GET"),
            )
        if self._openapi is None:
            from convrisk.local_backend.sandbox.openapi import document

            self._openapi = json.dumps(document(), separators=(",", ":")).encode("ascii")
        return Answer(200, self._openapi)


def _dump(answer: Any) -> str:
    """An answer (a record, a page, a deletion: plain dicts) as compact JSON, non-ASCII kept."""
    return json.dumps(answer, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _ok(text: str) -> Answer:
    return Answer(200, text.encode("utf-8"))


def _created(result: Created[Any]) -> Answer:
    """The answer to a create; a replayed one says so in the Idempotent-Replayed header."""
    if result.replayed:
        return Answer(200, _dump(result.record).encode("utf-8"), _REPLAYED)
    # A new local object comes with its text (records.json_text: the bytes _dump would give,
    # its values checked finite on the way in), encoded once for its key and the journal.
    text = _dump(result.record) if result.text is None else result.text
    return Answer(200, text.encode("utf-8"))


_REPLAYED = ((REPLAYED_HEADER.lower(), "true"),)


def _single(headers: Headers, name: str) -> str | None:
    """The one value of header `name` (None when absent); 400 when it was sent more than once."""
    found: str | None = None
    for key, value in headers:
        if key == name:
            if found is not None:
                title = "-".join(part.capitalize() for part in name.split("-"))
                _fail(InvalidRequestError(f"Send the {title} header once, not several times."))
            found = value
    return found


def _route(method: str, path: str) -> tuple[Resource, str | None]:
    parts = path.split("/")
    # "/v1/conversations" -> ["", "v1", "conversations"]; one more part for an item.
    resource = ROUTES.get("/".join(parts[:3]))
    if resource is not None and len(parts) in (3, 4):
        if len(parts) == 3:
            return resource, None
        object_id = unquote(parts[3])
        if object_id:
            return resource, object_id
    _fail(NotFoundError(f"Unknown route: {printable(method)} {printable(path)}"))


def _parse_query(query: str) -> dict[str, str]:
    if not query:
        return {}
    pairs: list[tuple[str, str]]
    if "%" in query or "+" in query or query.count("&") >= MAX_QUERY_FIELDS:
        try:
            pairs = parse_qsl(query, keep_blank_values=True, max_num_fields=MAX_QUERY_FIELDS)
        except ValueError:
            _fail(InvalidRequestError("Too many query parameters."))
    else:
        # Nothing to decode: the pairs parse_qsl gives, without its work per character.
        parts = (part.partition("=") for part in query.split("&") if part)
        pairs = [(name, value) for name, _, value in parts]
    out: dict[str, str] = {}
    for name, value in pairs:
        if name in out:
            _fail(
                InvalidRequestError(
                    f"Query parameter {printable(name)} given more than once.", param=name
                )
            )
        out[name] = value
    return out


def _reject_query(query: dict[str, str], allowed: tuple[str, ...]) -> None:
    if not query:
        return
    unknown = [name for name in query if name not in allowed]
    if unknown:
        names = ", ".join(printable(name) for name in unknown)
        hint = f" Allowed: {', '.join(allowed)}." if allowed else ""
        _fail(InvalidRequestError(f"Unknown query parameter: {names}.{hint}", param=unknown[0]))


def _check_framing(headers: Headers, body_length: int | None) -> bool:
    """Checks of a POST or PUT before its body is read; whether there is a body to parse."""
    if _single(headers, "transfer-encoding") is not None:
        _fail(
            InvalidRequestError(
                "Send the body with a Content-Length (chunked bodies are not accepted).",
                status=411,
                code="length_required",
            )
        )
    length = body_length
    if length is None:
        text = (_single(headers, "content-length") or "0").strip()
        if not text.isascii() or not text.isdigit() or len(text) > 18:
            _fail(InvalidRequestError("Content-Length is not a valid byte count."))
        length = int(text)
    content_type = _single(headers, "content-type")
    if content_type is None and length == 0:
        # No body and no type: an empty object (a bare PUT changes nothing; a bare POST is
        # refused by the input rules, naming the missing parameter).
        return False
    media_type, _, params = (content_type or "").partition(";")
    charset = params.strip().lower().removeprefix("charset=").strip('"') if params else ""
    if media_type.strip().lower() != "application/json" or charset not in ("", "utf-8"):
        _fail(
            InvalidRequestError(
                "Send the body as JSON (Content-Type: application/json).", status=415
            )
        )
    if length > MAX_BODY_BYTES:
        _fail(too_large())
    return True


def too_large() -> InvalidRequestError:
    """The 413 error of a body over the limit."""
    return InvalidRequestError(
        f"The request body is too large: over the limit of {MAX_BODY_BYTES} bytes.",
        status=413,
    )


def _json_body(data: bytes) -> Any:
    if len(data) > MAX_BODY_BYTES:
        _fail(too_large())
    try:
        body = _BODY_DECODER.decode(data.decode("utf-8"))
    except (ValueError, RecursionError):
        _fail(InvalidRequestError("The request body is not valid JSON."))
    if not isinstance(body, dict):
        _fail(InvalidRequestError("The request body must be a JSON object."))
    return body


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a JSON number")


def _list(resource: AnyResource, route: Resource, query: dict[str, str]) -> str:
    """The page a list request asks for, as the JSON text of the answer."""
    allowed, interface_filters = _LISTS[route.name]
    _reject_query(query, allowed)
    filters: dict[str, Any] = {}
    for name, kind in interface_filters:
        if name not in query:
            continue
        if kind == "boolean":
            value = QUERY_BOOLEANS.get(query[name].lower())
            if value is None:
                _fail(InvalidRequestError(f"{name} must be true or false (or 1 or 0).", param=name))
            filters[name] = value
        else:
            filters[name] = query[name]
    limit = _parse_limit(query.get("limit"))
    after, before = query.get("starting_after"), query.get("ending_before")
    given = filters or None
    if isinstance(resource, TableResource):
        return resource.list_text(given, limit=limit, starting_after=after, ending_before=before)
    page = resource.list(given, limit=limit, starting_after=after, ending_before=before)
    return _dump(page.as_dict())


def _parse_limit(raw: str | None) -> int:
    if raw is None:
        return DEFAULT_LIMIT
    if not raw.isascii() or not raw.isdigit() or len(raw) > _MAX_LIMIT_DIGITS:
        _fail(
            InvalidRequestError(f"limit must be an integer from 1 to {MAX_LIMIT}.", param="limit")
        )
    return int(raw)


# The decoder of request bodies (`_json_body`), built once: json.loads with an option builds a
# decoder at every call.
_BODY_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
