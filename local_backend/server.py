"""`convrisk serve`: the wire rules (local_backend.wire) over HTTP, on uvicorn and Starlette.

uvicorn owns the sockets: parsing, keep-alive, bounded connections, graceful shutdown. The
ASGI app here reads the request, asks `Wire` for the answer (the backend runs in a worker
thread: SQLite blocks) and writes it with Starlette's Response; it adds what only a socket has:
injected latency and faults (`Chaos`), a body-read timeout, and one access-log line per request.
A small uvicorn protocol subclass adds what uvicorn lacks: a deadline for the request head (so
silent or half-sent connections cannot hold every descriptor) and a JSON body on a 400 for
unparseable HTTP.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import resource
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, ClassVar, cast

import uvicorn
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from convrisk.api_client import __version__
from convrisk.api_client.errors import ConvriskError, InvalidRequestError, ServiceError
from convrisk.api_client.protocol import Backend
from convrisk.api_client.text import printable

from .database import WouldWait, never_wait
from .wire import (
    OPENAPI_PATH,
    Answer,
    Call,
    Wire,
    error_answer,
    is_create,
    json_answer,
    too_large,
)

# The head of a request (request line and headers) must arrive within this many seconds of the
# connection opening or of its first byte; a body may pause this long between reads.
HEAD_SECONDS = 10.0
BODY_SECONDS = 10.0
# Idle keep-alive connections are closed after this; above httpx's 5 s pool expiry, so that
# the client, not the server, ends an idle connection (no race on reuse).
KEEP_ALIVE_SECONDS = 15
# How long a stop waits for requests in flight before it cancels them.
DRAIN_SECONDS = 10
BACKLOG = 2048
# Descriptors kept back for the database, the log and the process itself.
_RESERVED_FDS = 32
_MAX_CONNECTIONS = 10_000
RETRY_AFTER_SECONDS = 1
FAULTS = ("500", "503", "429", "drop", "drop-after")
MAX_LATENCY_MS = 60_000

Log = Callable[[str], None]


@dataclass(frozen=True)
class Chaos:
    """Injected trouble: a delay in [low, high] ms before each API answer, and a fault rate."""

    latency_ms: tuple[int, int] = (0, 0)
    fault_rate: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        low, high = self.latency_ms
        if not 0 <= low <= high <= MAX_LATENCY_MS:
            raise ValueError(f"latency must lie within 0..{MAX_LATENCY_MS} ms, low <= high")
        if not 0.0 <= self.fault_rate <= 1.0:
            raise ValueError("the fault rate must lie within 0..1")

    @property
    def active(self) -> bool:
        """Whether anything is injected at all."""
        return self.latency_ms[1] > 0 or self.fault_rate > 0


class _Dice:
    """The seeded draws of one server, in request order: a delay, and a fault or None."""

    def __init__(self, chaos: Chaos) -> None:
        self._chaos = chaos
        # Separate streams: the faults of a seed stay the same with or without --latency.
        self._faults = random.Random(f"faults:{chaos.seed}")
        self._latency = random.Random(f"latency:{chaos.seed}")

    def roll(self) -> tuple[float, str | None]:
        """Seconds to wait, and the fault to inject (None: answer normally)."""
        low, high = self._chaos.latency_ms
        delay = self._latency.uniform(low, high) / 1000 if high else 0.0
        fault = None
        if self._chaos.fault_rate and self._faults.random() < self._chaos.fault_rate:
            fault = self._faults.choice(FAULTS)
        return delay, fault


class AccessLog:
    """One line per request (text or JSON), never a token or a body; data is escaped."""

    def __init__(self, sink: Log | None, fmt: str, token: str) -> None:
        if fmt not in ("text", "json"):
            raise ValueError(f"unknown log format {fmt!r}")
        self._sink = sink
        self._json = fmt == "json"
        self._token = token

    def request(
        self,
        client: str,
        method: str,
        path: str,
        query: str,
        status: int | None,
        seconds: float,
        fault: str | None = None,
    ) -> None:
        """The line of one request; status None when no answer was sent."""
        if self._sink is None:
            return
        if self._json:
            record: dict[str, Any] = {
                "time": _now(),
                "client": client,
                "method": method,
                "path": path,
                "query": query,
                "status": status,
                "duration_ms": round(seconds * 1000, 2),
            }
            if fault is not None:
                record["fault"] = fault
            line = json.dumps(record)
        else:
            target = path + ("?" + query if query else "")
            shown = "-" if status is None else str(status)
            line = (
                f"{_now()} {client} {_shown(method)} {_shown(target)} {shown} "
                f"{seconds * 1000:.1f}ms" + (f" fault={fault}" if fault else "")
            )
        self._emit(line)

    def error(self, method: str, path: str, detail: str) -> None:
        """What went wrong inside a request that was answered 5xx."""
        if self._sink is None:
            return
        if self._json:
            line = json.dumps(
                {"time": _now(), "level": "error", "method": method, "path": path, "error": detail}
            )
        else:
            body = "\n".join("    " + printable(part) for part in detail.rstrip().splitlines())
            line = f"{_now()} convrisk serve: error in {_shown(method)} {_shown(path)}:\n"
            line += body
        self._emit(line)

    def notice(self, level: str, message: str) -> None:
        """A message of the server itself (uvicorn's warnings and errors)."""
        if self._sink is None:
            return
        if self._json:
            line = json.dumps({"time": _now(), "level": level, "message": message})
        else:
            line = f"{_now()} convrisk serve: {level}: {printable(message)}"
        self._emit(line)

    def _emit(self, line: str) -> None:
        if self._token and self._token in line:
            line = line.replace(self._token, "***")
        assert self._sink is not None
        self._sink(line)


def _shown(text: str) -> str:
    """Request data for a text log line: control characters escaped, and a backslash doubled
    so that a literal `\\x1b` sent by a client never reads like an escaped ESC."""
    return printable(text, escape_backslash=True)


def _now() -> str:
    """UTC time with milliseconds, ISO 8601."""
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now * 1000) % 1000:03d}Z"


class _LogHandler(logging.Handler):
    """uvicorn's own warnings and errors, into our log."""

    def __init__(self, log: AccessLog) -> None:
        super().__init__(logging.WARNING)
        self._log = log

    def emit(self, record: logging.LogRecord) -> None:
        """One record as one notice (a traceback, if any, follows the message)."""
        message = record.getMessage()
        if record.exc_info:
            message += "\n" + logging.Formatter().formatException(record.exc_info)
        self._log.notice(record.levelname.lower(), message)


class _Connections:
    """The server's open connections by client address, so a fault can drop one."""

    def __init__(self) -> None:
        self.open: dict[tuple[str, int], asyncio.Transport] = {}
        self.accepted = 0

    def abort(self, client: Any) -> None:
        """Close the connection of this client at once, sending nothing more."""
        transport = self.open.get(tuple(client)) if client else None
        if transport is not None:
            transport.abort()


# The methods of the interface; a request with any other method is parsed by h11 (below).
_FAST_METHODS = (b"GET", b"POST", b"PUT", b"DELETE")


class _OneWrite:
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

    registry: ClassVar[_Connections]
    _deadline: asyncio.TimerHandle | None = None
    _handed_over = False
    # Provided by the uvicorn protocol this is mixed into.
    transport: asyncio.Transport
    client: tuple[str, int] | None
    loop: asyncio.AbstractEventLoop
    cycle: Any

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Register the connection and give it HEAD_SECONDS to send a request."""
        if not isinstance(transport, _OneWrite):  # (a connection handed over has one)
            one = _OneWrite(cast(asyncio.Transport, transport), asyncio.get_running_loop())
            transport = cast(asyncio.BaseTransport, one)
        super().connection_made(transport)  # type: ignore[misc]
        if not self._handed_over:
            self.registry.accepted += 1
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
        slow._handed_over = True
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


class _Uvicorn(uvicorn.Server):
    """uvicorn's server without its own signal handling: run_server stops it."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """Leave signals alone (uvicorn would re-raise SIGTERM after stopping: exit 143)."""
        yield


class _Unanswered(Exception):
    """The client went away before its request was whole: nothing to answer."""


class ServeApp:
    """The ASGI app of `convrisk serve`: Wire behind a socket, with chaos and the access log."""

    def __init__(
        self, wire: Wire, log: AccessLog, chaos: Chaos | None, connections: _Connections
    ) -> None:
        self.wire = wire
        self.log = log
        self.connections = connections
        self._dice = _Dice(chaos) if chaos is not None and chaos.active else None
        self.in_flight = 0
        self.writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="convrisk-writer")
        # Creates waiting for the next group commit (see _create), and whether one is due.
        self._creates: list[tuple[Call, bytes, asyncio.Future[Answer]]] = []
        self._commit_task: asyncio.Task[None] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """One request (lifespan and other scope types are not used)."""
        if scope["type"] != "http":
            return
        self.in_flight += 1
        try:
            await self._serve(scope, receive, send)
        finally:
            self.in_flight -= 1

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        method: str = scope["method"]
        path = bytes(scope.get("raw_path") or scope["path"].encode()).decode("latin-1")
        query = bytes(scope["query_string"]).decode("latin-1")
        client = scope.get("client")
        who = f"{client[0]}:{client[1]}" if client else "-"
        headers = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in scope["headers"]]

        def done(status: int | None, fault: str | None = None) -> None:
            self.log.request(who, method, path, query, status, time.perf_counter() - started, fault)

        fault = None
        if self._dice is not None and path != OPENAPI_PATH:
            delay, fault = self._dice.roll()
            if delay:
                await asyncio.sleep(delay)
            # Each line is logged before the answer goes out (or the connection is dropped),
            # so a client that has its answer finds the line.
            if fault == "drop":
                done(None, fault)
                return await self._drop(client)
            if fault in ("500", "503", "429"):
                answer = _injected(int(fault))
                done(answer.status, fault)
                return await self._send(scope, receive, send, answer, close=_body_pending(headers))

        call = self.wire.start(method, path, query, headers)
        close = False
        if isinstance(call, Answer):
            answer = call
            # An unread body that is large or waits for `100 Continue`: end the connection
            # rather than read it (a small one uvicorn reads and drops by itself).
            close = _body_pending(headers)
        else:
            body: bytes | Answer = b""
            if call.wants_body:
                try:
                    body = await _read_body(receive)
                except _Unanswered:
                    return done(None)
            if isinstance(body, Answer):
                answer, close = body, True
            else:
                answer = await self._run(call, body)
        if fault == "drop-after":
            done(answer.status, fault)
            return await self._drop(client)
        done(answer.status)
        if answer.internal is not None:
            self.log.error(method, path, answer.internal)
        await self._send(scope, receive, send, answer, close=close)

    async def _run(self, call: Call, body: bytes) -> Answer:
        """Run the operation right here, or on the writer thread when it would have to wait.

        An operation takes a fraction of a millisecond, less than the hop to a thread and back,
        so it runs on the event loop, told never to wait for a lock. When another process holds
        the file's write lock, it stops before changing anything and runs again on the one
        writer thread, where waiting (the busy timeout) stalls nobody else. Creates are
        committed in groups (see _create).
        """
        if is_create(call):
            return await self._create(call, body)
        try:
            with never_wait():
                return self.wire.finish(call, body)
        except WouldWait:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self.writer, self.wire.finish, call, body)

    async def _create(self, call: Call, body: bytes) -> Answer:
        """A create, committed with the others that reach this point in the same turn of the
        event loop (group commit): the requests read in one turn all get here before the
        commit task runs, so concurrent clients share a transaction, and a lone request waits
        only one turn. Each answer is the one that create alone would get (Wire.finish_creates).
        """
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[Answer] = loop.create_future()
        self._creates.append((call, body, answer))
        if self._commit_task is None:
            self._commit_task = loop.create_task(self._commit())
        return await answer

    async def _commit(self) -> None:
        """Run the creates gathered so far, a batch per resource, and hand each its answer; a
        request given up meanwhile (its task cancelled) is left out."""
        gathered, self._creates, self._commit_task = self._creates, [], None
        by_route: dict[str, list[tuple[Call, bytes, asyncio.Future[Answer]]]] = {}
        for call, body, future in gathered:
            if not future.done():
                by_route.setdefault(call.route.name, []).append((call, body, future))
        for batch in by_route.values():
            calls = [(call, body) for call, body, _ in batch]
            try:
                try:
                    with never_wait():
                        answers = self.wire.finish_creates(calls)
                except WouldWait:
                    loop = asyncio.get_running_loop()
                    answers = await loop.run_in_executor(
                        self.writer, self.wire.finish_creates, calls
                    )
            except Exception as exc:
                for _, _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                continue
            except BaseException:
                for _, _, future in batch:
                    future.cancel()
                raise
            for (_, _, future), result in zip(batch, answers, strict=True):
                if not future.done():
                    future.set_result(result)

    async def _drop(self, client: Any) -> None:
        self.connections.abort(client)
        # Let the transport report the loss, so that uvicorn knows no answer is coming.
        for _ in range(3):
            await asyncio.sleep(0)

    @staticmethod
    async def _send(
        scope: Scope, receive: Receive, send: Send, answer: Answer, *, close: bool
    ) -> None:
        headers = {"cache-control": "no-store", **dict(answer.headers)}
        if close:
            headers["connection"] = "close"
        response = Response(
            answer.body, answer.status, headers=headers, media_type="application/json"
        )
        await response(scope, receive, send)


async def _read_body(receive: Receive) -> bytes | Answer:
    """The whole body, or the answer refusing it (over the limit, or too slow)."""
    from .wire import MAX_BODY_BYTES

    chunks: list[bytes] = []
    size = 0
    while True:
        try:
            message: Message = await asyncio.wait_for(receive(), BODY_SECONDS)
        except TimeoutError:
            error = ServiceError(
                f"The request body stalled for more than {BODY_SECONDS:g} seconds.", status=408
            )
            return json_answer(408, error.to_body())
        if message["type"] == "http.disconnect":
            raise _Unanswered
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return error_answer(too_large())
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _body_pending(headers: list[tuple[str, str]]) -> bool:
    """Whether the request announced a body that is large, chunked, or waits for 100 Continue."""
    from .wire import MAX_BODY_BYTES

    values = dict(headers)
    if "transfer-encoding" in values or values.get("expect", "").lower() == "100-continue":
        return True
    length = values.get("content-length", "0").strip()
    return not length.isdigit() or int(length) > MAX_BODY_BYTES


def _injected(status: int) -> Answer:
    """The answer of an injected fault (marked as injected, so nobody hunts a real bug)."""
    phrase = {500: "server error", 503: "service unavailable", 429: "rate limit"}[status]
    error = ServiceError(f"Injected fault (convrisk serve --faults): {phrase}.", status=status)
    headers: tuple[tuple[str, str], ...] = ()
    if status in (503, 429):
        headers = (("retry-after", str(RETRY_AFTER_SECONDS)),)
    return json_answer(status, error.to_body(), headers)


def _connection_limit() -> int:
    """Connections uvicorn serves before it answers 503: what the descriptor limit allows."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return _MAX_CONNECTIONS
    return max(8, min(_MAX_CONNECTIONS, soft - _RESERVED_FDS))


def _listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket (IPv6 when the host is an IPv6 address)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say they are TCP.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(BACKLOG)
    except BaseException:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def is_loopback(host: str) -> bool:
    """Whether `host` is a loopback address (or `localhost`): nothing beyond this machine."""
    import ipaddress

    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class ConvriskServer:
    """`convrisk serve` over one Backend, bound at construction; `url` is where it listens."""

    def __init__(
        self,
        backend: Backend,
        *,
        token: str,
        host: str = "127.0.0.1",
        port: int = 0,
        log: Log | None = None,
        log_format: str = "text",
        chaos: Chaos | None = None,
    ) -> None:
        self.backend = backend
        self.wire = Wire(backend, token)
        # Open (and migrate) the database now: a bad file fails here, not on the first request,
        # and no request on the event loop ever waits for a migration.
        backend.conversations.list(limit=1)
        self.log = AccessLog(log, log_format, token)
        self.connections = _Connections()
        self.app = ServeApp(self.wire, self.log, chaos, self.connections)
        slow = type("ConvriskH11", (_SlowProtocol,), {"registry": self.connections})
        protocol = type(
            "ConvriskHttpTools", (_FastProtocol,), {"registry": self.connections, "slow": slow}
        )
        config = uvicorn.Config(
            self.app,
            http=protocol,
            ws="none",
            lifespan="off",
            loop="auto",
            log_config=None,
            access_log=False,
            # X-Forwarded-For from loopback would otherwise replace the client in the log.
            proxy_headers=False,
            server_header=False,
            headers=[("server", f"convrisk/{__version__}")],
            limit_concurrency=_connection_limit(),
            backlog=BACKLOG,
            timeout_keep_alive=KEEP_ALIVE_SECONDS,
            timeout_graceful_shutdown=DRAIN_SECONDS,
        )
        self._uvicorn = _Uvicorn(config)
        self._socket = _listen(host, port)
        self._thread: threading.Thread | None = None
        bound = self._socket.getsockname()
        self.server_address: tuple[str, int] = (str(bound[0]), int(bound[1]))

    @property
    def server_port(self) -> int:
        """The port it listens on."""
        return self.server_address[1]

    @property
    def url(self) -> str:
        """The base URL clients use, e.g. `http://127.0.0.1:54321`."""
        host = self.server_address[0]
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.server_port}"

    @property
    def in_flight(self) -> int:
        """How many requests are being handled right now."""
        return self.app.in_flight

    def serve_forever(self) -> None:
        """Serve in this thread until shutdown() (its own event loop)."""
        handler = _LogHandler(self.log)
        logger = logging.getLogger("uvicorn.error")
        logger.addHandler(handler)
        try:
            self._uvicorn.run(sockets=[self._socket])
        finally:
            self.app.writer.shutdown(wait=True)
            logger.removeHandler(handler)

    @contextlib.contextmanager
    def running(self) -> Iterator[ConvriskServer]:
        """Serve from a background thread for the block, then stop and close the server."""
        self._thread = threading.Thread(
            target=self.serve_forever, name="convrisk-serve", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._uvicorn.started and self._thread.is_alive():
            if time.monotonic() > deadline:
                raise ConvriskError("convrisk serve did not start within 30 seconds.")
            time.sleep(0.005)
        try:
            yield self
        finally:
            self.shutdown()
            self.server_close()

    def shutdown(self) -> None:
        """Stop accepting; requests in flight go on (server_close waits for them)."""
        self._uvicorn.should_exit = True

    def server_close(self) -> None:
        """Wait for the requests in flight (DRAIN_SECONDS at most), then close everything."""
        self.shutdown()
        if self._thread is not None:
            self._thread.join(DRAIN_SECONDS + 5)
        self._socket.close()


def make_server(
    backend: Backend,
    *,
    token: str,
    host: str = "127.0.0.1",
    port: int = 0,
    log: Log | None = None,
    log_format: str = "text",
    chaos: Chaos | None = None,
) -> ConvriskServer:
    """A bound server over `backend` (port 0: a free one); start it with running()."""
    return ConvriskServer(
        backend, token=token, host=host, port=port, log=log, log_format=log_format, chaos=chaos
    )


def run_server(
    *,
    host: str,
    port: int,
    db_path: Path,
    token: str,
    on_ready: Callable[[str], None],
    log: Log,
    log_format: str = "text",
    chaos: Chaos | None = None,
) -> None:
    """Serve the SQLite file at `db_path` until SIGINT or SIGTERM, then close everything."""
    from .store import LocalBackend

    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    backend = LocalBackend(db_path)
    previous: dict[signal.Signals, Any] = {}
    try:
        try:
            server = make_server(
                backend,
                token=token,
                host=host,
                port=port,
                log=log,
                log_format=log_format,
                chaos=chaos,
            )
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
