"""The in-process twin of tests/e2e's `Cli`: convrisk's main() on either backend (the `either`
fixture: the local database, or a serve in this process over HTTP), with the same few names the
e2e tests use (`run` with extra environment variables, `env`, `store`, `count`, `url`), so that
the variants of an e2e behaviour run here with the same assertions. Import `twin` into a test
module to use it."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pytest

from convrisk.local_backend.backend import LocalBackend

from .conftest import REMOTE_TOKEN, Backends, Result


class Pipe(io.RawIOBase):
    """Bytes read once, front to back, as from a pipe: not seekable, so convrisk reads them as
    it reads a pipe on stdin (the e2e tests' `input=` is one)."""

    def __init__(self, data: bytes) -> None:
        self._data = memoryview(data)
        self._at = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        size = min(len(buffer), len(self._data) - self._at)
        buffer[:size] = self._data[self._at : self._at + size]
        self._at += size
        return size


@dataclass
class Twin:
    """convrisk in-process on one backend, and the database behind it (to seed and inspect).

    `env` holds variables every run of this twin sees (as an e2e test sets `cli.env[...]`);
    a run's own keyword arguments are added to them for that run only."""

    either: Backends
    home: Path
    env: dict[str, str] = field(default_factory=dict)
    _store: LocalBackend | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        """ "local" or "remote"."""
        return self.either.name

    @property
    def remote(self) -> bool:
        """Whether convrisk talks to the in-process serve over HTTP."""
        return self.either.remote

    @property
    def url(self) -> str | None:
        """The serve's base URL (remote), or None."""
        return self.either.url

    @property
    def token(self) -> str | None:
        """The serve's token (remote), or None."""
        return REMOTE_TOKEN if self.remote else None

    @property
    def db_path(self) -> Path:
        """The database file: the local one, or the one behind serve."""
        return self.either.db_path

    @property
    def log(self) -> list[str]:
        """What serve logged (remote): a line per request."""
        return self.either.log

    @property
    def where(self) -> str:
        """How convrisk names its target in a protected profile's banner."""
        return self.url if self.url is not None else f"database {self.db_path}"

    def run(
        self, *args: str, input: str | bytes | IO[bytes] | None = None, **extra_env: str | None
    ) -> Result:
        """Run convrisk's main() to its end with `env` and `extra_env` set in os.environ (None:
        unset; each restored after). stdin is empty unless `input` is given: text or bytes are
        read as from a pipe (see Pipe); a binary stream is stdin itself (io.BytesIO: as a file
        redirected to stdin, which can be read again)."""
        changed = {**self.env, **extra_env}
        saved = {name: os.environ.get(name) for name in changed}
        for name, value in changed.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        try:
            if input is None:
                return self.either.invoke(*args)
            if isinstance(input, str | bytes):
                data = input.encode("utf-8") if isinstance(input, str) else input
                input = io.BufferedReader(Pipe(data))
            return self.either.invoke(*args, input=input)
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value

    @property
    def store(self) -> LocalBackend:
        """The database behind the backend, opened in this test (SQLite's WAL lets serve too)."""
        if self._store is None:
            self._store = LocalBackend(self.db_path)
        return self._store

    def count(self, resource: str) -> int:
        """How many objects of a resource the database holds."""
        return len(every(getattr(self.store, resource)))

    def close(self) -> None:
        """Close the store."""
        if self._store is not None:
            self._store.close()
            self._store = None


def every(resource: Any) -> list[Any]:
    """Every record of a resource of the local store, page by page (at most 100,000)."""
    found: list[Any] = []
    cursor = None
    for _ in range(1000):
        page = resource.list(limit=100, starting_after=cursor)
        found += page["data"]
        if not page["has_more"]:
            return found
        cursor = page["data"][-1]["id"]
    raise AssertionError("more than 100,000 records")


@pytest.fixture
def twin(either: Backends, home: Path) -> Iterator[Twin]:
    """convrisk in-process on the local database and on an in-process serve, in turn; its
    journal under HOME/state and NO_COLOR set, as the e2e tests' environment has them."""
    made = Twin(either, home, {"XDG_STATE_HOME": str(home / "state"), "NO_COLOR": "1"})
    try:
        yield made
    finally:
        made.close()
