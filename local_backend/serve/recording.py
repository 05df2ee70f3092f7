"""`serve --proxy-to URL --record FILE`: the last state of each record the upstream answered
with, written as a snapshot (local_backend.sandbox.snapshot) when serve stops.

A 2xx answer to a create, retrieve or update records its record, a list page each of its records;
a 2xx delete drops the id. Error answers, replayed creates (their record may be stale) and
anything else record nothing; an answer holding what is not a record of its resource is not
recorded, and noted once per method and path. Each record kept is one `serve --load` restores.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from convrisk.api_client.records import REPLAYED_HEADER
from convrisk.api_client.resources import RESOURCES, Resource, ResourceName
from convrisk.api_client.sandbox import (
    MAX_SNAPSHOT_BYTES,
    snapshot_target,
    temporary_beside,
    write_whole,
)
from convrisk.api_client.text import printable
from convrisk.local_backend.sandbox import snapshot
from convrisk.local_backend.sandbox.contract import Contract

# Distinct method-and-path pairs noted; beyond, one line says further ones go unnoted.
MAX_NOTED = 100
ITEM_METHODS = ("GET", "PUT", "PATCH")


class Recorder:
    """Per resource, id -> the record's snapshot line, kept from the upstream's answers; written
    to `path` whole by `write`. `max_bytes` bounds the snapshot (`serve --load` reads no more)."""

    def __init__(
        self, path: Path, contract: Contract | None = None, *, max_bytes: int = MAX_SNAPSHOT_BYTES
    ) -> None:
        problem = unwritable(path)
        if problem is not None:
            raise ValueError(problem)
        self.path = path
        self.max_bytes = max_bytes
        self._contract = Contract.load() if contract is None else contract
        self._lines: dict[ResourceName, dict[str, str]] = {name: {} for name in snapshot.ORDER}
        self._size = 0
        self._noted: set[tuple[str, str]] = set()
        self._muted = False
        # Answers (or records of a page) seen but not recorded, for the line at stop.
        self.refused = 0
        # The upstream answers on serve's event loop; `write` runs on the main thread.
        self._lock = threading.Lock()

    def observe(
        self, method: str, path: str, status: int, headers: Sequence[tuple[str, str]], body: bytes
    ) -> str | None:
        """Take in one answer of the upstream; a line for the log when something in it was not
        recorded (once per method and path), else None."""
        target = _target(path)
        if target is None or not 200 <= status < 300:
            return None
        resource, object_id = target
        method = method.upper()
        if object_id is not None and method == "DELETE":
            with self._lock:
                self._drop(resource.name, object_id)
            return None
        if object_id is None and method == "POST":
            if any(n.lower() == REPLAYED_HEADER.lower() for n, _ in headers):
                return None  # the answer of an earlier create: its record may have changed since
        elif not (object_id is None and method == "GET") and method not in ITEM_METHODS:
            return None
        parsed = _json(body)
        if isinstance(parsed, _Problem):
            return self._refuse(method, path, parsed.text)
        if object_id is None and method == "GET":
            data = parsed.get("data") if isinstance(parsed, dict) else None
            if not isinstance(data, list):
                return self._refuse(method, path, 'not a page (no "data" array)')
            return self._take_page(method, path, resource, data)
        problem = self._take(resource, parsed, object_id)
        return None if problem is None else self._refuse(method, path, problem)

    def _take_page(self, method: str, path: str, resource: Resource, data: list[Any]) -> str | None:
        problems = [(n, p) for n, item in enumerate(data) if (p := self._take(resource, item))]
        if not problems:
            return None
        first, problem = problems[0]
        return self._refuse(
            method,
            path,
            f"{len(problems)} of its {len(data)} records are not recorded "
            f"(/data/{first}: {problem})",
            count=len(problems),
        )

    def _take(self, resource: Resource, item: Any, object_id: str | None = None) -> str | None:
        """Record `item` as the last state of its id; why not, or None."""
        if not isinstance(item, dict):
            return f"not a {resource.noun} (not a JSON object)"
        problem = self._contract.record_problem(resource.model, item)
        if problem is not None:
            return f"not a {resource.noun}: {problem}"
        if object_id is not None and item["id"] != object_id:
            return f"the {resource.noun} of another id ({printable(str(item['id']))})"
        kept = {name: item[name] for name in resource.names()}
        problem = snapshot.problem(resource.name, kept)
        if problem is not None:
            return f"a {resource.noun} the sandbox cannot load: {problem.rstrip('.')}"
        line = snapshot.line(resource.name, kept)
        with self._lock:
            lines = self._lines[resource.name]
            old = lines.get(kept["id"])
            size = self._size + _size(line) - (0 if old is None else _size(old))
            if size > self.max_bytes:
                return (
                    f"the recording would pass {self.max_bytes} bytes, the most a snapshot may hold"
                )
            lines[kept["id"]] = line
            self._size = size
        return None

    def _drop(self, resource: ResourceName, object_id: str) -> None:
        old = self._lines[resource].pop(object_id, None)
        if old is not None:
            self._size -= _size(old)

    def _refuse(self, method: str, path: str, why: str, count: int = 1) -> str | None:
        """Count an answer not recorded; the log's line for it, the first time for its method
        and path (MAX_NOTED of them, then one line that says no more are noted)."""
        with self._lock:
            self.refused += count
            key = (method, path)
            if key in self._noted or self._muted:
                return None
            if len(self._noted) == MAX_NOTED:
                self._muted = True
                return (
                    f"--record: more than {MAX_NOTED} paths answered what is not recorded; "
                    "no more are noted"
                )
            self._noted.add(key)
        return f"--record: {method} {printable(path)}: {why}; not recorded"

    def counts(self) -> dict[ResourceName, int]:
        """How many records of each resource are kept."""
        with self._lock:
            return {name: len(lines) for name, lines in self._lines.items()}

    def data(self) -> bytes:
        """The snapshot: conversations, then risk profiles, each by id (oldest first), as the
        store's own snapshot orders them."""
        with self._lock:
            lines = [
                line for name in snapshot.ORDER for _, line in sorted(self._lines[name].items())
            ]
        return "".join(f"{line}\n" for line in lines).encode("utf-8")

    def write(self) -> None:
        """Write the snapshot to `path` whole (a temporary file beside it, then renamed), mode
        0600; OSError when it cannot, `path` as it was."""
        write_whole(self.path, self.data())

    def rescue(self) -> Path | None:
        """Write the snapshot to a new file of the temporary folder (when `path` cannot be
        written at stop); that file, or None when it cannot be written either."""
        try:
            fd, name = tempfile.mkstemp(prefix="convrisk-record-", suffix=".jsonl")
            with os.fdopen(fd, "wb") as out:
                out.write(self.data())
        except OSError:
            return None
        return Path(name)

    def summary(self) -> str:
        """The line at stop: what was written, where."""
        counts = self.counts()
        parts = [
            f"{count} {RESOURCES[name].noun if count == 1 else RESOURCES[name].plural}"
            for name, count in counts.items()
        ]
        refused = f" ({self.refused} not recorded: not records)" if self.refused else ""
        return f"--record: {' and '.join(parts)} written to {printable(str(self.path))}{refused}"


def unwritable(path: Path) -> str | None:
    """Why a snapshot could not be written to `path` (probed with the temporary file `write`
    makes, created and removed; `path` itself untouched), or None."""
    if path.is_dir():
        return "is a directory"
    try:
        target = snapshot_target(path)
    except OSError as exc:
        return f"cannot be written: {exc.strerror or exc}"
    try:
        fd, name = temporary_beside(target)
    except OSError as exc:
        return f"cannot write in {printable(str(target.parent))}: {exc.strerror or exc}"
    os.close(fd)
    os.unlink(name)
    return None


def _target(path: str) -> tuple[Resource, str | None] | None:
    """The resource a /v1 path names, and the id when it names one record."""
    for resource in RESOURCES.values():
        if path == resource.path:
            return resource, None
        rest = path.removeprefix(resource.path + "/")
        if rest != path and rest and "/" not in rest:
            return resource, unquote(rest)
    return None


class _Problem:
    def __init__(self, text: str) -> None:
        self.text = text


def _json(body: bytes) -> Any:
    """The body as JSON, or a _Problem saying why it is not."""
    try:
        return json.loads(body.decode("utf-8"), parse_constant=_no_constant)
    except UnicodeDecodeError:
        return _Problem("the body is not UTF-8")
    except (ValueError, RecursionError):
        return _Problem("the body is not JSON")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _size(line: str) -> int:
    return len(line.encode("utf-8")) + 1
