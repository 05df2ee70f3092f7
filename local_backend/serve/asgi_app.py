"""The ASGI app of `convrisk serve`: `Wire` behind a socket, with injected trouble and the log.

It reads the request, asks `Wire` for the answer and writes it (two ASGI messages); it adds
what only a socket has: injected latency and faults (seeded random ones, and the aimed fault
rules of `/__sandbox/faults`, offered every API request first), body deadlines, the connection
limit (503), the budget of bodies held at once across all requests (local_backend.serve.memory:
503 past it), one log line per request, and a JSON 500 should anything here fail (uvicorn's own
is text).
The backend runs on the event loop (told never to wait for a lock) or, when it would have to wait,
on one writer thread; creates that arrive in one turn of the loop are committed together.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from starlette.types import Message, Receive, Scope, Send

from convrisk.api_client.errors import InvalidRequestError, PermissionDeniedError, ServiceError
from convrisk.api_client.params import MAX_BODY_BYTES
from convrisk.local_backend.sandbox.request_journal import PREFIX, Journal
from convrisk.local_backend.sandbox.routes import Sandbox
from convrisk.local_backend.sandbox.wire import (
    OPENAPI_PATH,
    SERVER_FAILED,
    Answer,
    Call,
    Wire,
    error_answer,
    is_create,
    json_answer,
    too_large,
)
from convrisk.local_backend.serve.access_log import AccessLog
from convrisk.local_backend.serve.faults import (
    Chaos,
    Connections,
    Dice,
    injected,
    rule_error,
    shaped,
)
from convrisk.local_backend.serve.memory import RETRY_AFTER, Budget, Hold, Memory
from convrisk.local_backend.store.database import WouldWait, never_wait

if TYPE_CHECKING:
    from convrisk.local_backend.sandbox.fault_rules import Rule
    from convrisk.local_backend.serve.proxy import Proxy

# A body may pause this long between reads,
BODY_SECONDS = 10.0
# and must be whole this long after the head (1 MiB in 30 s: 35 KB/s at the least), so that a
# slow drip cannot hold a connection for ever.
BODY_TOTAL_SECONDS = 30.0
# What a client over the connection limit is told to wait, in seconds.
BUSY_RETRY_AFTER = 1
# The methods `serve --read-only` answers; any other is a write, refused with a 403.
READ_METHODS = frozenset(("GET", "HEAD", "OPTIONS"))
# A create waiting for the group commit: its call, its body, and where its answer goes.
Pending = tuple[Call, bytes, asyncio.Future[Answer]]


class _Unanswered(Exception):
    """The client went away before its request was whole: nothing to answer."""


class ServeApp:
    """The ASGI app of `convrisk serve`: Wire behind a socket, with chaos and the access log."""

    def __init__(
        self,
        wire: Wire,
        log: AccessLog,
        chaos: Chaos | None,
        connections: Connections,
        limit: int | None = None,
        journal: Journal | None = None,
        proxy: Proxy | None = None,
        memory: Memory | None = None,
        *,
        read_only: bool = False,
    ) -> None:
        self.wire = wire
        # The bodies every request holds, counted in one budget.
        self.memory = memory if memory is not None else Memory()
        # `serve --read-only`: every request but a read is a 403, whatever its path.
        self.read_only = read_only
        # `serve --proxy-to`: /v1 requests go to the upstream instead of the local store.
        self.proxy = proxy
        # Connections (and requests in flight) served; a request beyond is answered 503.
        self.limit = limit
        self.log = log
        self.connections = connections
        self._dice = Dice(chaos) if chaos is not None and chaos.active else None
        self.in_flight = 0
        self.writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="convrisk-writer")
        # Every request but the admin ones, for the admin routes (local_backend.sandbox.routes).
        self.journal = journal if journal is not None else Journal("")
        self.sandbox = Sandbox(
            wire, self.journal, self.writer, proxy_mode=proxy is not None, on_reset=self._rewind
        )
        # Creates waiting for the next group commit (see _create), and whether one is due.
        self._creates: list[Pending] = []
        self._commit_due = False
        # Batches on the writer thread (a reference to each task, so that it is not collected).
        self._waiting: set[asyncio.Task[None]] = set()

    def _rewind(self) -> None:
        """A reset: the seeded random faults and latency start over."""
        if self._dice is not None:
            self._dice.rewind()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """One request (lifespan and other scope types are not used)."""
        if scope["type"] != "http":
            return
        self.in_flight += 1
        started = False
        hold = Hold(self.memory.bodies)

        async def sending(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self._serve(scope, receive, sending, hold)
        except asyncio.CancelledError:
            # The stop did not wait for it (a second signal, or the drain ran out): one line,
            # not uvicorn's traceback of a cancellation.
            self.log.notice(
                "warning",
                f"{scope['method']} {scope['path']}: not answered, the server stopped first.",
            )
            if not started:
                # What uvicorn would answer as plain text: the error shape, a 503 to retry.
                error = ServiceError(
                    "The server stopped before it answered; retry.",
                    status=503,
                    code="service_unavailable",
                )
                answer = json_answer(503, error.to_body(), (("retry-after", "1"),))
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await self._send(scope, receive, send, answer, close=True)
        except Exception:
            if started:
                raise
            # What uvicorn would answer as plain text: the error shape, the reason in the log.
            answer = error_answer(ServiceError(SERVER_FAILED), internal=traceback.format_exc())
            self.log.error(scope["method"], scope["path"], answer.internal or "")
            await self._send(scope, receive, send, answer, close=True)
        finally:
            hold.release()
            self.in_flight -= 1

    async def _serve(self, scope: Scope, receive: Receive, send: Send, hold: Hold) -> None:
        started = time.perf_counter()
        method: str = scope["method"]
        path = bytes(scope.get("raw_path") or scope["path"].encode()).decode("latin-1")
        query = bytes(scope["query_string"]).decode("latin-1")
        client = scope.get("client")
        who = f"{client[0]}:{client[1]}" if client else "-"
        headers = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in scope["headers"]]

        def done(
            status: int | None,
            fault: str | None = None,
            body: bytes | None = None,
            violations: tuple[dict[str, str], ...] = (),
        ) -> None:
            took = time.perf_counter() - started
            self.log.request(who, method, path, query, status, took, fault)
            for found in violations:
                self.log.violation(method, path, found)
            if not admin:
                fired = None if rule is None else rule.id
                self.journal.record(
                    method, path, query, headers, body, status, fault, took, violations, fired
                )

        rule: Rule | None = None

        admin = path.startswith(PREFIX)

        if self.limit is not None and (
            len(self.connections.open) > self.limit or self.in_flight > self.limit
        ):
            error = ServiceError(
                "Too many connections; retry later.", status=503, code="service_unavailable"
            )
            busy = json_answer(503, error.to_body(), (("retry-after", str(BUSY_RETRY_AFTER)),))
            done(busy.status)
            return await self._send(scope, receive, send, busy, close=True)
        if self.read_only and method not in READ_METHODS:
            refused = self.wire.refuse_token(headers) or _read_only_answer(method, path)
            done(refused.status)
            return await self._send(scope, receive, send, refused, close=_body_pending(headers))
        if admin:
            read = False

            async def read_body(
                limit: int, refuse: Callable[[], InvalidRequestError]
            ) -> bytes | Answer:
                nonlocal read
                read = True
                got = await _read_body(receive, hold, limit, refuse)
                return got

            try:
                answer = await self.sandbox.handle(method, path, query, headers, read_body)
            except _Unanswered:
                return done(None)
            done(answer.status)
            if answer.internal is not None:
                self.log.error(method, path, answer.internal)
            # A body refused (too large, or no room for it) is left unread: close.
            close = answer.status in (413, 503) if read else _body_pending(headers)
            return await self._send(scope, receive, send, answer, close=close)
        fault = None
        if path != OPENAPI_PATH:
            # The draws are made for every request, a rule firing or not, so that a seed gives
            # the same faults to the same request numbers whatever rules there are.
            delay, fault = self._dice.roll() if self._dice is not None else (0.0, None)
            rule = self.sandbox.faults.offer(method, path)
            if rule is not None:
                # An aimed rule that fires stands in for the random fault.
                fault = rule.kind
                delay += rule.delay_ms / 1000
            if delay:
                await asyncio.sleep(delay)
            # Each line is logged before the answer goes out (or the connection is dropped),
            # so a client that has its answer finds the line.
            if fault == "drop":
                try:
                    sent, _ = await _faulted_body(receive, hold, headers)
                except _Unanswered:
                    return done(None, fault)
                done(None, fault, sent)
                return await self.connections.drop(client)
            faulted = None
            if rule is not None and rule.status is not None and rule.status >= 400:
                faulted = shaped(rule, rule_error(rule))
            elif rule is None and fault in ("500", "503", "429"):
                faulted = injected(int(fault))
            if faulted is not None:
                try:
                    sent, close = await _faulted_body(receive, hold, headers)
                except _Unanswered:
                    return done(None, fault)
                done(faulted.status, fault, sent)
                return await self._send(scope, receive, send, faulted, close=close)

        if self.proxy is not None and _forwarded(path):
            return await self._forward(scope, receive, send, headers, fault, rule, done, hold)

        call = self.wire.start(method, path, query, headers)
        close = False
        body: bytes | Answer | None = None
        if isinstance(call, Answer):
            answer = call
            # An unread body that is large or waits for `100 Continue`: end the connection
            # rather than read it (a small one uvicorn reads and drops by itself).
            close = _body_pending(headers)
        else:
            if call.wants_body:
                try:
                    body = await _read_body(receive, hold)
                except _Unanswered:
                    return done(None)
            if isinstance(body, Answer):
                answer, close, body = body, True, None
            else:
                answer = await self._run(call, body or b"")
        sent = body if isinstance(body, bytes) else None
        if fault == "drop-after":
            done(answer.status, fault, sent)
            return await self.connections.drop(client)
        if rule is not None:
            answer = shaped(rule, answer)
        done(answer.status, fault if rule is not None else None, sent)
        if answer.internal is not None:
            self.log.error(method, path, answer.internal)
        await self._send(scope, receive, send, answer, close=close)

    async def _forward(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        headers: list[tuple[str, str]],
        fault: str | None,
        rule: Rule | None,
        done: Callable[..., None],
        hold: Hold,
    ) -> None:
        """A /v1 request in proxy mode: its body read (within the same limits as the store's),
        forwarded, both checked; the answer passed through, or the proxy's own error. Both
        bodies are held within the shared budget of bodies."""
        assert self.proxy is not None
        method: str = scope["method"]
        path = bytes(scope.get("raw_path") or scope["path"].encode()).decode("latin-1")
        query = bytes(scope["query_string"]).decode("latin-1")
        try:
            body = await _read_body(receive, hold)
        except _Unanswered:
            return done(None)
        if isinstance(body, Answer):
            done(body.status)
            return await self._send(scope, receive, send, body, close=True)
        found = self.proxy.check_request(method, path, query, headers, body)
        forwarded = await self.proxy.forward(method, path, query, headers, body, hold)
        violations = tuple(v.as_json() for v in [*found, *forwarded.violations])
        if forwarded.note is not None:
            self.log.notice("notice", forwarded.note)
        answer = forwarded.answer
        if fault == "drop-after":
            done(answer.status, fault, body, violations)
            return await self.connections.drop(scope.get("client"))
        as_sent = not forwarded.own
        if rule is not None:
            answer = shaped(rule, answer)
            as_sent = as_sent and rule.program is None
        done(answer.status, fault if rule is not None else None, body, violations)
        await self._send(scope, receive, send, answer, close=False, as_sent=as_sent)

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
        commit runs, so concurrent clients share a transaction, and a lone request waits
        only one turn. Each answer is the one that create alone would get (Wire.finish_creates).

        Over a single open connection no other request can arrive in this turn (the next one
        on it is read after this answer): the create is its own batch, committed at once.
        """
        if not self._commit_due and len(self.connections.open) == 1:
            calls = [(call, body)]
            try:
                with never_wait():
                    (alone,) = self.wire.finish_creates(calls)
            except WouldWait:
                loop = asyncio.get_running_loop()
                (alone,) = await loop.run_in_executor(self.writer, self.wire.finish_creates, calls)
            return alone
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[Answer] = loop.create_future()
        self._creates.append((call, body, answer))
        if not self._commit_due:
            # A plain callback, not a task: the commit runs on the loop and rarely has to wait.
            self._commit_due = True
            loop.call_soon(self._commit)
        return await answer

    def _commit(self) -> None:
        """Run the creates gathered so far, a batch per resource, and hand each its answer; a
        request given up meanwhile (its task cancelled) is left out. A batch that would wait
        for another process's lock goes to the writer thread (_commit_waiting)."""
        gathered, self._creates, self._commit_due = self._creates, [], False
        by_route: dict[str, list[Pending]] = {}
        for call, body, future in gathered:
            if not future.done():
                by_route.setdefault(call.route.name, []).append((call, body, future))
        for batch in by_route.values():
            calls = [(call, body) for call, body, _ in batch]
            try:
                with never_wait():
                    answers = self.wire.finish_creates(calls)
            except WouldWait:
                task = asyncio.get_running_loop().create_task(self._commit_waiting(batch))
                self._waiting.add(task)
                task.add_done_callback(self._waiting.discard)
                continue
            except Exception as exc:
                _fail(batch, exc)
                continue
            except BaseException:
                _cancel(batch)
                raise
            _answer(batch, answers)

    async def _commit_waiting(self, batch: list[Pending]) -> None:
        """A batch run on the writer thread, where waiting for the lock stalls nobody."""
        calls = [(call, body) for call, body, _ in batch]
        loop = asyncio.get_running_loop()
        try:
            answers = await loop.run_in_executor(self.writer, self.wire.finish_creates, calls)
        except Exception as exc:
            _fail(batch, exc)
            return
        except BaseException:
            _cancel(batch)
            raise
        _answer(batch, answers)

    @staticmethod
    async def _send(
        scope: Scope,
        receive: Receive,
        send: Send,
        answer: Answer,
        *,
        close: bool,
        as_sent: bool = False,
    ) -> None:
        """Send the answer; JSON unless it says otherwise, or `as_sent` (an upstream's answer
        in proxy mode: its content type, or none, as the upstream sent it)."""
        body = answer.body
        if answer.status == 200 and not (answer.headers or close or as_sent):
            head = [_NO_STORE, (b"content-length", b"%d" % len(body)), _JSON]
        else:
            head = _head(answer, close=close, as_sent=as_sent)
        await send({"type": "http.response.start", "status": answer.status, "headers": head})
        await send({"type": "http.response.body", "body": body})


_NO_STORE = (b"cache-control", b"no-store")
_JSON = (b"content-type", b"application/json")


def _head(answer: Answer, *, close: bool, as_sent: bool) -> list[tuple[bytes, bytes]]:
    """An answer's headers in the order sent, as Starlette's `Response` made them: Cache-Control
    (an answer's own replaces it in place), the answer's, Connection when closing, names lower-
    cased; then Content-Length and Content-Type unless given (no length for 1xx, 204 and 304;
    no type `as_sent`)."""
    # Cache-Control first (the answer's own in its place), then the answer's headers as given:
    # a name twice (an upstream's two Allow lines, two WWW-Authenticate challenges) goes twice.
    cache = [(n, v) for n, v in answer.headers if n.lower() == "cache-control"]
    rest = [(n, v) for n, v in answer.headers if n.lower() != "cache-control"]
    if close:
        rest = [(n, v) for n, v in rest if n.lower() != "connection"] + [("connection", "close")]
    given = (cache or [("cache-control", "no-store")]) + rest
    head = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in given]
    names = {name for name, _ in head}
    status = answer.status
    if b"content-length" not in names and not (status < 200 or status in (204, 304)):
        head.append((b"content-length", b"%d" % len(answer.body)))
    if not as_sent and b"content-type" not in names:
        head.append(_JSON)
    return head


def _answer(batch: list[Pending], answers: list[Answer]) -> None:
    for (_, _, future), result in zip(batch, answers, strict=True):
        if not future.done():
            future.set_result(result)


def _fail(batch: list[Pending], exc: Exception) -> None:
    for _, _, future in batch:
        if not future.done():
            future.set_exception(exc)


def _cancel(batch: list[Pending]) -> None:
    for _, _, future in batch:
        future.cancel()


def no_room(budget: Budget, what: str) -> Answer:
    """The 503 for a body that the shared budget of bodies has no room for."""
    error = ServiceError(
        f"{what} does not fit in what the server holds of bodies at once ({budget.mib()} "
        "across all requests); retry later.",
        status=503,
        code="service_unavailable",
    )
    return json_answer(503, error.to_body(), (("retry-after", str(RETRY_AFTER)),))


async def _read_body(
    receive: Receive,
    hold: Hold,
    limit: int = MAX_BODY_BYTES,
    refuse: Callable[[], InvalidRequestError] = too_large,
) -> bytes | Answer:
    """The whole body, held in `hold`, or the answer refusing it (over `limit`: `refuse()`;
    no room left in the shared budget: 503; or too slow)."""
    chunks: list[bytes] = []
    size = 0
    deadline = time.monotonic() + BODY_TOTAL_SECONDS
    while True:
        left = deadline - time.monotonic()
        try:
            # asyncio.timeout, not wait_for: no task of its own around each receive().
            async with asyncio.timeout(min(BODY_SECONDS, left)):
                message: Message = await receive()
        except TimeoutError:
            if left <= BODY_SECONDS:
                why = f"did not arrive whole within {BODY_TOTAL_SECONDS:g} seconds"
            else:
                why = f"stalled for more than {BODY_SECONDS:g} seconds"
            error = ServiceError(f"The request body {why}.", status=408)
            return json_answer(408, error.to_body())
        if message["type"] == "http.disconnect":
            raise _Unanswered
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return error_answer(refuse())
        if not hold.take(len(chunk)):
            return no_room(hold.budget, "The request body")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _read_only_answer(method: str, path: str) -> Answer:
    """The 403 of `serve --read-only` to a write: nothing was read or written."""
    from convrisk.api_client.text import printable

    error = PermissionDeniedError(
        f"This server is read-only (serve --read-only): {printable(method)} "
        f"{printable(path)} is refused; nothing was written."
    )
    return error_answer(error)


def _forwarded(path: str) -> bool:
    """Whether proxy mode sends this path upstream: /v1 and below, without a dot segment (which
    a URL parser would resolve into another path of the upstream)."""
    if path != "/v1" and not path.startswith("/v1/"):
        return False
    return not any(part in (".", "..") for part in path.split("/"))


async def _faulted_body(
    receive: Receive, hold: Hold, headers: list[tuple[str, str]]
) -> tuple[bytes | None, bool]:
    """The body of a request a fault answers, kept for the journal (a test checks what the
    failed attempt sent), and whether to close: read when announced and small; one that is
    large, chunked or waits for 100 Continue is left unread and the connection closed."""
    if _body_pending(headers):
        return None, True
    if dict(headers).get("content-length", "0").strip() in ("", "0"):
        return None, False
    got = await _read_body(receive, hold)
    if isinstance(got, Answer):
        return None, True
    return got, False


def _body_pending(headers: list[tuple[str, str]]) -> bool:
    """Whether the request announced a body that is large, chunked, or waits for 100 Continue."""
    values = dict(headers)
    if "transfer-encoding" in values or values.get("expect", "").lower() == "100-continue":
        return True
    length = values.get("content-length", "0").strip()
    return not length.isdigit() or int(length) > MAX_BODY_BYTES
