"""The admin routes of `convrisk serve` under `/__sandbox/`: list and clear the request journal
(local_backend.sandbox.request_journal), add, list and clear the aimed fault rules
(local_backend.sandbox.fault_rules), reset the store, take a snapshot of it and restore one
(local_backend.sandbox.snapshot). The same bearer token as `/v1`."""

from __future__ import annotations

import asyncio
import fnmatch
import re
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from typing import Protocol, runtime_checkable
from urllib.parse import parse_qsl

from convrisk.api_client import sandbox as sandbox_api
from convrisk.api_client.errors import InvalidRequestError, NotFoundError
from convrisk.api_client.text import printable
from convrisk.local_backend.sandbox import snapshot
from convrisk.local_backend.sandbox.fault_rules import MAX_RULE_BYTES, FaultRules
from convrisk.local_backend.sandbox.request_journal import (
    FAULTS_PATH,
    REQUESTS_PATH,
    RESET_PATH,
    RESTORE_PATH,
    SNAPSHOT_PATH,
    Headers,
    Journal,
)
from convrisk.local_backend.sandbox.wire import (
    MAX_QUERY_FIELDS,
    Answer,
    Wire,
    error_answer,
    json_answer,
)
from convrisk.local_backend.store.resource import Columns

# The methods of each admin route.
ROUTES: dict[str, tuple[str, ...]] = {
    REQUESTS_PATH: ("GET", "DELETE"),
    RESET_PATH: ("POST",),
    SNAPSHOT_PATH: ("GET",),
    RESTORE_PATH: ("POST",),
    FAULTS_PATH: ("GET", "POST", "DELETE"),
}
# The routes proxy mode has: the journal and the fault rules are the sandbox's own.
PROXY_ROUTES = (REQUESTS_PATH, FAULTS_PATH)
NDJSON = "application/x-ndjson"
# Reads the request's body, at most this many bytes: the body, or the answer refusing it.
BodyReader = Callable[[int, Callable[[], InvalidRequestError]], Awaitable["bytes | Answer"]]
_FILTERS = ("method", "path", "status")
_MAX_STATUS_DIGITS = 3


@runtime_checkable
class SandboxStore(Protocol):
    """A backend the sandbox can empty, copy and replace (LocalBackend)."""

    def reset(self) -> None:
        """Remove every record and idempotency key; rewind the clock and seeded ids."""

    def snapshot(self) -> list[str]:
        """The whole store as snapshot lines."""

    def restore(self, rows: dict[str, list[Columns]]) -> dict[str, int]:
        """Replace the whole store by these rows, all or nothing."""


class Sandbox:
    """The admin routes over a Wire (for the token) and the journal of its server."""

    def __init__(
        self,
        wire: Wire,
        journal: Journal,
        writer: Executor,
        *,
        proxy_mode: bool = False,
        on_reset: Callable[[], None] = lambda: None,
    ) -> None:
        self.wire = wire
        # The aimed fault rules the server offers every API request (local_backend.serve).
        self.faults = FaultRules()
        # What else a reset rewinds: the server's seeded random faults and latency.
        self._on_reset = on_reset
        # `serve --proxy-to`: the records are the upstream's; only the journal is the sandbox's.
        self.proxy_mode = proxy_mode
        self.journal = journal
        # Where a reset runs: it may wait for another process's write lock.
        self._writer = writer

    async def handle(
        self, method: str, path: str, query: str, headers: Headers, read_body: BodyReader
    ) -> Answer:
        """Answer one admin request (a path under PREFIX); only a restore and a new fault rule
        read the body."""
        refused = self.wire.refuse_token(headers)
        if refused is not None:
            return refused
        allowed = ROUTES.get(path)
        if allowed is None:
            return error_answer(
                NotFoundError(f"Unknown route: {printable(method)} {printable(path)}")
            )
        if method not in allowed:
            error = InvalidRequestError(
                f"Method {printable(method)} is not allowed here; allowed: {', '.join(allowed)}.",
                status=405,
            )
            return error_answer(error, (("allow", ", ".join(allowed)),))
        if self.proxy_mode and path not in PROXY_ROUTES:
            error = InvalidRequestError(
                f"{printable(path)} does not apply in proxy mode (serve --proxy-to): the records "
                "are the upstream's; only the request journal (/__sandbox/requests) and the "
                "fault rules (/__sandbox/faults) are here.",
                status=409,
            )
            return error_answer(error)
        try:
            filters = _FILTERS if method == "GET" and path == REQUESTS_PATH else ()
            params = _query(query, filters)
            if path == FAULTS_PATH:
                return await self._faults(method, headers, read_body)
            if path == RESET_PATH:
                return await self._reset()
            if path == SNAPSHOT_PATH:
                return await self._snapshot()
            if path == RESTORE_PATH:
                body = await read_body(sandbox_api.MAX_SNAPSHOT_BYTES, snapshot.too_large)
                if isinstance(body, Answer):
                    return body
                return await self._restore(body, as_json=_declares_json(headers))
            if method == "DELETE":
                return json_answer(200, {"cleared": self.journal.clear()})
            return self._list(params)
        except InvalidRequestError as exc:
            return error_answer(exc)

    async def _faults(self, method: str, headers: Headers, read_body: BodyReader) -> Answer:
        if method == "GET":
            return json_answer(200, {"data": self.faults.listed()})
        if method == "DELETE":
            return json_answer(200, {"cleared": self.faults.clear()})
        body = await read_body(MAX_RULE_BYTES, _rule_too_large)
        if isinstance(body, Answer):
            return body
        key = next((value.strip() for name, value in headers if name == "idempotency-key"), None)
        rule, new = self.faults.add(body, key or None)
        return json_answer(201 if new else 200, rule)

    def _list(self, params: dict[str, str]) -> Answer:
        method = params.get("method")
        glob = params.get("path")
        status = _status(params["status"]) if "status" in params else None
        if method is not None and not method:
            raise InvalidRequestError("method must not be empty.", param="method")
        if glob is not None and not glob:
            raise InvalidRequestError("path must be a non-empty glob, e.g. /v1/*.", param="path")
        problem = None if glob is None else sandbox_api.fault_glob_problem(glob)
        if problem is not None:
            raise InvalidRequestError(
                f"path '{printable(glob or '')}' is not a valid glob: {problem}.", param="path"
            )
        match = re.compile(fnmatch.translate(glob)).match if glob is not None else None
        wanted = method.upper() if method is not None else None
        data = [
            self.journal.entry_json(entry)
            for entry in self.journal.entries()
            if (wanted is None or entry.method.upper() == wanted)
            and (match is None or match(entry.path))
            and (status is None or entry.status == status)
        ]
        total = len(data)
        return json_answer(200, {"data": data, "dropped": self.journal.dropped, "total": total})

    def _store(self) -> SandboxStore:
        backend = self.wire.backend
        if not isinstance(backend, SandboxStore):
            raise InvalidRequestError("This server's store has no sandbox routes.", status=501)
        return backend

    async def _reset(self) -> Answer:
        await asyncio.get_running_loop().run_in_executor(self._writer, self._store().reset)
        self.journal.clear()
        self.faults.reset()
        self._on_reset()
        return json_answer(200, {"reset": True})

    async def _snapshot(self) -> Answer:
        lines = await asyncio.get_running_loop().run_in_executor(
            self._writer, self._store().snapshot
        )
        body = "".join(f"{line}\n" for line in lines).encode("utf-8")
        return Answer(200, body, (("content-type", NDJSON),))

    async def _restore(self, body: bytes, *, as_json: bool) -> Answer:
        store = self._store()

        def restore() -> dict[str, int]:
            return store.restore(snapshot.parse(body, as_json=as_json))

        counts = await asyncio.get_running_loop().run_in_executor(self._writer, restore)
        return json_answer(200, {"restored": counts})


def _rule_too_large() -> InvalidRequestError:
    return InvalidRequestError(f"A fault rule's body is over {MAX_RULE_BYTES} bytes.", status=413)


def _declares_json(headers: Headers) -> bool:
    """Whether the request says its body is JSON (Content-Type: application/json)."""
    return any(
        name == "content-type" and value.partition(";")[0].strip().lower() == "application/json"
        for name, value in headers
    )


def _query(query: str, allowed: tuple[str, ...]) -> dict[str, str]:
    try:
        pairs = parse_qsl(query, keep_blank_values=True, max_num_fields=MAX_QUERY_FIELDS)
    except ValueError:
        raise InvalidRequestError("Too many query parameters.") from None
    out: dict[str, str] = {}
    for name, value in pairs:
        if name not in allowed:
            hint = f" Allowed: {', '.join(allowed)}." if allowed else ""
            raise InvalidRequestError(
                f"Unknown query parameter: {printable(name)}.{hint}", param=name
            )
        if name in out:
            raise InvalidRequestError(
                f"Query parameter {printable(name)} given more than once.", param=name
            )
        out[name] = value
    return out


def _status(text: str) -> int:
    if not text.isascii() or not text.isdigit() or len(text) != _MAX_STATUS_DIGITS:
        raise InvalidRequestError("status must be an HTTP status, 100 to 599.", param="status")
    value = int(text)
    if not 100 <= value <= 599:
        raise InvalidRequestError("status must be an HTTP status, 100 to 599.", param="status")
    return value
