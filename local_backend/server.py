"""`convrisk serve`: the service over HTTP (DESIGN section 1), over one thread-safe Backend.

Standard library only (`http.server.ThreadingHTTPServer`). The wire rules live here; the input
rules stay in the backend (`api_client.params`), and errors become statuses through the one table
in `api_client.errors` (`APIError.status` and `to_body()`).
"""

from __future__ import annotations

import contextlib
import hmac
import json
import signal
import socket
import socketserver
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn
from urllib.parse import parse_qsl, unquote, urlsplit

from api_client import __version__
from api_client.errors import (
    APIError,
    AuthenticationError,
    ConvriskError,
    InvalidRequestError,
    NotFoundError,
    ServiceError,
    error_class_for_status,
)
from api_client.params import DEFAULT_LIMIT
from api_client.protocol import Backend, ResourceBackend
from api_client.text import printable

MAX_BODY_BYTES = 1024 * 1024
# An idle keep-alive connection (or a client that stalls mid-request) is dropped after this.
IDLE_TIMEOUT_SECONDS = 60.0
# How long server_close() waits for requests in flight before closing their connections anyway.
DRAIN_SECONDS = 5.0
# After refusing a body without reading it, read and drop at most this much while the client
# finishes sending, so that it gets our answer rather than a connection reset.
_LINGER_BYTES = 16 * MAX_BODY_BYTES
_LINGER_SECONDS = 2.0
# How often serve_forever looks for a shutdown request (the stdlib default, 0.5 s, slows stops).
_POLL_SECONDS = 0.05
_MAX_QUERY_FIELDS = 50
_MAX_LIMIT_DIGITS = 6
_BOOLEANS = {"true": True, "1": True, "false": False, "0": False}

Log = Callable[[str], None]
AnyResource = ResourceBackend[Any, Any, Any, Any]


@dataclass(frozen=True)
class _Route:
    """One resource on the wire: its path segment, Backend attribute and list filters."""

    attribute: str
    booleans: tuple[str, ...]
    strings: tuple[str, ...]


_ROUTES: dict[str, _Route] = {
    "conversations": _Route("conversations", ("muted", "archived", "pinned"), ("group_id",)),
    "risk-profiles": _Route("risk_profiles", (), ("customer_id", "profile_type")),
}
_COLLECTION_METHODS = ("GET", "POST")
_ITEM_METHODS = ("GET", "PUT", "DELETE")
_PAGING = ("limit", "starting_after", "ending_before")


class _Reply(Exception):
    """Internal: stop handling and answer with this error (raised by the wire checks)."""

    def __init__(self, error: APIError, headers: dict[str, str] | None = None) -> None:
        super().__init__(error.message)
        self.error = error
        self.headers = headers or {}


def _fail(error: APIError, headers: dict[str, str] | None = None) -> NoReturn:
    raise _Reply(error, headers)


class ConvriskHTTPServer(ThreadingHTTPServer):
    """A threaded HTTP server for one Backend; `url` is where it listens."""

    daemon_threads = True
    request_queue_size = 128

    def __init__(
        self,
        address: tuple[str, int],
        backend: Backend,
        *,
        token: str,
        log: Log | None = None,
    ) -> None:
        if not token:
            raise ValueError("serve needs a non-empty token")
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self.backend = backend
        self.token = token.encode("utf-8")
        self._log = log
        self._log_lock = threading.Lock()
        self._state = threading.Condition()
        self._in_flight = 0
        self._closing = False
        self._connections: set[socket.socket] = set()
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        """Bind without HTTPServer's reverse DNS lookup of the host."""
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)

    @property
    def url(self) -> str:
        """The base URL clients use, e.g. `http://127.0.0.1:54321`."""
        host = self.server_name
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.server_port}"

    def log(self, line: str) -> None:
        """Hand one line to the log callback, one line at a time across threads."""
        if self._log is None:
            return
        # The path and messages carry what a client sent: no control character reaches the log.
        line = printable(line, keep_newlines=True)
        with self._log_lock:
            self._log(line)

    @property
    def closing(self) -> bool:
        """True once server_close() has begun; new requests are then refused."""
        return self._closing

    @property
    def in_flight(self) -> int:
        """How many requests are being handled right now."""
        with self._state:
            return self._in_flight

    def request_started(self) -> bool:
        """Count a request in flight; False if the server is closing."""
        with self._state:
            if self._closing:
                return False
            self._in_flight += 1
            return True

    def request_finished(self) -> None:
        """A request in flight is done."""
        with self._state:
            self._in_flight -= 1
            self._state.notify_all()

    def process_request(self, request: Any, client_address: Any) -> None:
        """Track each connection so that server_close() can end idle keep-alive ones."""
        with self._state:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        """Forget a connection once its thread is done with it."""
        with self._state:
            self._connections.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Log an error that escaped a connection's thread (a vanished client is not one)."""
        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            return
        self.log(f"convrisk serve: connection error: {traceback.format_exc().rstrip()}")

    @contextlib.contextmanager
    def running(self) -> Iterator[ConvriskHTTPServer]:
        """Serve from a background thread for the block, then stop and close the server."""
        thread = threading.Thread(
            target=self.serve_forever, args=(_POLL_SECONDS,), name="convrisk-serve", daemon=True
        )
        thread.start()
        try:
            yield self
        finally:
            self.shutdown()
            thread.join()
            self.server_close()

    def server_close(self) -> None:
        """Refuse new requests, let the ones in flight finish, end keep-alive connections."""
        with self._state:
            self._closing = True
            deadline = time.monotonic() + DRAIN_SECONDS
            while self._in_flight and (left := deadline - time.monotonic()) > 0:
                self._state.wait(left)
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        super().server_close()


class _Handler(BaseHTTPRequestHandler):
    """One connection: parses each request by the wire rules and calls the backend."""

    protocol_version = "HTTP/1.1"
    server_version = f"convrisk/{__version__}"
    timeout = IDLE_TIMEOUT_SECONDS
    server: ConvriskHTTPServer

    # Per request state, reset in _handle.
    _started = 0.0
    _body_consumed = True
    _expects_continue = False

    # -- dispatch -------------------------------------------------------------------------------

    def do_GET(self) -> None:
        """Dispatch GET."""
        self._handle()

    def do_POST(self) -> None:
        """Dispatch POST."""
        self._handle()

    def do_PUT(self) -> None:
        """Dispatch PUT."""
        self._handle()

    def do_DELETE(self) -> None:
        """Dispatch DELETE."""
        self._handle()

    def do_PATCH(self) -> None:
        """Dispatch PATCH (405 on every route)."""
        self._handle()

    def do_HEAD(self) -> None:
        """Dispatch HEAD (405 on every route)."""
        self._handle()

    def do_OPTIONS(self) -> None:
        """Dispatch OPTIONS (405 on every route)."""
        self._handle()

    def parse_request(self) -> bool:
        """Start the clock and the per-request state, then parse as usual."""
        self._started = time.perf_counter()
        self._body_consumed = False
        self._expects_continue = False
        return super().parse_request()

    def handle_expect_100(self) -> bool:
        """Send `100 Continue` only when the body is about to be read, not before the checks."""
        self._expects_continue = True
        return True

    def _handle(self) -> None:
        if not self.server.request_started():
            self.close_connection = True
            self._send_error(ServiceError("The server is shutting down.", status=503))
            return
        try:
            try:
                status, payload = self._dispatch()
                headers: dict[str, str] = {}
            except _Reply as reply:
                status, payload, headers = reply.error.status, reply.error.to_body(), reply.headers
            except APIError as exc:
                status, payload, headers = exc.status, exc.to_body(), {}
            except Exception:
                self.server.log(
                    f"convrisk serve: unexpected error in {self.command} {self._log_path()}:\n"
                    + traceback.format_exc().rstrip()
                )
                error = ServiceError("The server hit an unexpected error; it has been logged.")
                status, payload, headers = error.status, error.to_body(), {}
            self._send_json(status, payload, headers)
        finally:
            self.server.request_finished()

    def _dispatch(self) -> tuple[int, Any]:
        self._authenticate()
        url = urlsplit(self.path)
        route, object_id = self._route(url.path)
        allowed = _COLLECTION_METHODS if object_id is None else _ITEM_METHODS
        if self.command not in allowed:
            _fail(
                InvalidRequestError(
                    f"Method {self.command} is not allowed here; allowed: {', '.join(allowed)}.",
                    status=405,
                ),
                {"Allow": ", ".join(allowed)},
            )
        query = self._query(url.query)
        resource: AnyResource = getattr(self.server.backend, route.attribute)
        if object_id is None and self.command == "GET":
            return 200, self._list(resource, route, query)
        _reject_query(query, ())
        if object_id is None:
            key = (self.headers.get("Idempotency-Key") or "").strip() or None
            body = self._json_body()
            return 200, resource.create(body, idempotency_key=key)
        if self.command == "GET":
            return 200, resource.retrieve(object_id)
        if self.command == "PUT":
            return 200, resource.update(object_id, self._json_body())
        return 200, resource.delete(object_id)

    # -- wire rules -----------------------------------------------------------------------------

    def _authenticate(self) -> None:
        header = self.headers.get("Authorization")
        if header is None:
            _fail(
                AuthenticationError("Missing bearer token (Authorization: Bearer <token>)."),
                {"WWW-Authenticate": 'Bearer realm="convrisk"'},
            )
        scheme, _, given = header.strip().partition(" ")
        # Header values arrive decoded as latin-1; encoding back gives the bytes that were sent.
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            given.strip().encode("latin-1"), self.server.token
        ):
            _fail(
                AuthenticationError("Invalid bearer token."),
                {"WWW-Authenticate": 'Bearer realm="convrisk", error="invalid_token"'},
            )

    def _route(self, path: str) -> tuple[_Route, str | None]:
        parts = path.split("/")
        # "/v1/conversations" -> ["", "v1", "conversations"]; one more part for an item.
        if len(parts) in (3, 4) and parts[0] == "" and parts[1] == "v1" and parts[2] in _ROUTES:
            if len(parts) == 3:
                return _ROUTES[parts[2]], None
            object_id = unquote(parts[3])
            if object_id:
                return _ROUTES[parts[2]], object_id
        _fail(NotFoundError(f"Unknown route: {self.command} {path}"))

    def _query(self, query: str) -> dict[str, str]:
        try:
            pairs = parse_qsl(
                query,
                keep_blank_values=True,
                strict_parsing=False,
                max_num_fields=_MAX_QUERY_FIELDS,
            )
        except ValueError:
            _fail(InvalidRequestError("Too many query parameters."))
        out: dict[str, str] = {}
        for name, value in pairs:
            if name in out:
                _fail(
                    InvalidRequestError(f"Query parameter {name} given more than once.", param=name)
                )
            out[name] = value
        return out

    def _list(self, resource: AnyResource, route: _Route, query: dict[str, str]) -> Any:
        _reject_query(query, _PAGING + route.booleans + route.strings)
        filters: dict[str, Any] = {}
        for name in route.booleans:
            if name in query:
                value = _BOOLEANS.get(query[name].lower())
                if value is None:
                    _fail(
                        InvalidRequestError(
                            f"{name} must be true or false (or 1 or 0).", param=name
                        )
                    )
                filters[name] = value
        for name in route.strings:
            if name in query:
                filters[name] = query[name]
        return resource.list(
            filters,
            limit=_parse_limit(query.get("limit")),
            starting_after=query.get("starting_after"),
            ending_before=query.get("ending_before"),
        )

    def _content_length(self) -> int:
        if self.headers.get("Transfer-Encoding") is not None:
            _fail(
                InvalidRequestError(
                    "Send the body with a Content-Length (chunked bodies are not accepted).",
                    status=411,
                    code="length_required",
                )
            )
        raw = self.headers.get_all("Content-Length") or []
        if not raw:
            return 0
        values = {value.strip() for value in raw}
        text = values.pop()
        if values or not text.isascii() or not text.isdigit() or len(text) > 18:
            _fail(InvalidRequestError("Content-Length is not a valid byte count."))
        return int(text)

    def _json_body(self) -> Any:
        length = self._content_length()
        content_type = self.headers.get("Content-Type")
        if content_type is None and length == 0:
            # No body and no type: an empty object (a bare PUT changes nothing; a bare POST is
            # refused by the input rules, naming the missing parameter).
            self._body_consumed = True
            return {}
        media_type, _, params = (content_type or "").partition(";")
        charset = params.strip().lower().removeprefix("charset=").strip('"') if params else ""
        if media_type.strip().lower() != "application/json" or charset not in ("", "utf-8"):
            _fail(
                InvalidRequestError(
                    "Send the body as JSON (Content-Type: application/json).", status=415
                )
            )
        if length > MAX_BODY_BYTES:
            _fail(
                InvalidRequestError(
                    f"The request body is over the limit of {MAX_BODY_BYTES} bytes.", status=413
                )
            )
        if self._expects_continue:
            self.send_response_only(HTTPStatus.CONTINUE)
            self.end_headers()
            self.wfile.flush()
            self._expects_continue = False
        data = self.rfile.read(length)
        self._body_consumed = True
        if len(data) != length:
            self.close_connection = True
            _fail(InvalidRequestError("The request body is shorter than its Content-Length."))
        try:
            body = json.loads(data.decode("utf-8"), parse_constant=_reject_constant)
        except (ValueError, RecursionError):
            _fail(InvalidRequestError("The request body is not valid JSON."))
        if not isinstance(body, dict):
            _fail(InvalidRequestError("The request body must be a JSON object."))
        return body

    # -- responses ------------------------------------------------------------------------------

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """Answer a request that could not be parsed with a JSON error (never an HTML page)."""
        self.close_connection = True
        self._body_consumed = True  # unknown framing: close without reading anything more
        cls = error_class_for_status(code)
        self._send_error(cls(message or HTTPStatus(code).phrase, status=code))

    def _send_error(self, error: APIError) -> None:
        self._send_json(error.status, error.to_body(), {})

    def _send_json(self, status: int, payload: Any, headers: dict[str, str]) -> None:
        if not self._body_consumed:
            self._settle_unread_body()
        data = json.dumps(payload, separators=(",", ":"), allow_nan=False).encode("utf-8")
        lines = [
            f"HTTP/1.1 {status} {_phrase(status)}",
            f"Server: {self.server_version}",
            f"Date: {self.date_time_string()}",
            "Content-Type: application/json",
            f"Content-Length: {len(data)}",
            "Cache-Control: no-store",
            *(f"{name}: {value}" for name, value in headers.items()),
        ]
        if self.close_connection:
            lines.append("Connection: close")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        # One write per answer: headers and body in one segment, no wait on delayed ACKs.
        # Logged before the answer goes out, so a client that has its answer finds the line.
        elapsed = (time.perf_counter() - self._started) * 1000
        self.server.log(f"{self.command or '-'} {self._log_path()} {status} {elapsed:.1f}ms")
        self.wfile.write(head if self.command == "HEAD" else head + data)
        self.wfile.flush()
        if self.close_connection and not self._body_consumed:
            self._linger()

    def _settle_unread_body(self) -> None:
        """Before answering without reading the body: drop a small one, else close after."""
        try:
            length = self._content_length()
        except _Reply:
            length = -1
        if length == 0:
            self._body_consumed = True
        elif 0 < length <= MAX_BODY_BYTES and not self._expects_continue:
            self.rfile.read(length)
            self._body_consumed = True
        else:
            self.close_connection = True

    def _linger(self) -> None:
        """Half-close and drain what the client is still sending, so it reads our answer."""
        try:
            self.connection.shutdown(socket.SHUT_WR)
            self.connection.settimeout(_LINGER_SECONDS)
            deadline = time.monotonic() + _LINGER_SECONDS
            drained = 0
            while drained < _LINGER_BYTES and time.monotonic() < deadline:
                chunk = self.connection.recv(65536)
                if not chunk:
                    break
                drained += len(chunk)
        except OSError:
            pass

    def _log_path(self) -> str:
        # The path only: no query string, never a header or a body.
        return urlsplit(self.path).path if getattr(self, "path", None) else "-"

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """Access lines are written by _send_json, once the answer is out."""

    def log_message(self, format: str, *args: Any) -> None:
        """Route the base class's own messages (timeouts) to the log callback."""
        self.server.log("convrisk serve: " + (format % args))


def _reject_query(query: dict[str, str], allowed: tuple[str, ...]) -> None:
    unknown = [name for name in query if name not in allowed]
    if unknown:
        names = ", ".join(unknown)
        hint = f" Allowed: {', '.join(allowed)}." if allowed else ""
        _fail(InvalidRequestError(f"Unknown query parameter: {names}.{hint}", param=unknown[0]))


def _parse_limit(raw: str | None) -> int:
    if raw is None:
        return DEFAULT_LIMIT
    if not raw.isascii() or not raw.isdigit() or len(raw) > _MAX_LIMIT_DIGITS:
        _fail(InvalidRequestError("limit must be an integer from 1 to 100.", param="limit"))
    return int(raw)


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a JSON number")


def make_server(
    backend: Backend,
    *,
    token: str,
    host: str = "127.0.0.1",
    port: int = 0,
    log: Log | None = None,
) -> ConvriskHTTPServer:
    """A bound, listening server over `backend` (port 0: a free one); call serve_forever()."""
    return ConvriskHTTPServer((host, port), backend, token=token, log=log)


def run_server(
    *,
    host: str,
    port: int,
    db_path: Path,
    token: str,
    on_ready: Callable[[str], None],
    log: Callable[[str], None],
) -> None:
    """Serve the SQLite file at `db_path` until SIGINT or SIGTERM, then close everything."""
    from .store import LocalBackend

    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    backend = LocalBackend(db_path)
    previous: dict[signal.Signals, Any] = {}
    try:
        # Open (and migrate) the file now: a bad --db fails at start, not on the first request.
        backend.conversations.list(limit=1)
        try:
            server = make_server(backend, token=token, host=host, port=port, log=log)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise ConvriskError(f"Cannot listen on {host} port {port}: {reason}.") from None
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                previous[signum] = signal.signal(signum, on_signal)
        with server.running():
            on_ready(server.url)
            # A timed wait keeps the main thread responsive to signals on every platform.
            while not stop.wait(0.5):
                pass
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        backend.close()
