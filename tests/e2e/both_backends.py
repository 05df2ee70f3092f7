"""The installed convrisk on either backend: the local database, or a `convrisk serve` subprocess
on loopback over its own database. Import `cli` into a test module to run each test on both."""

from __future__ import annotations

import signal
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from local_backend.store import LocalBackend

from .test_cli import CONVRISK, SAFETY_TIMEOUT
from .test_remote_cli import TOKEN, Serve, isolated_env, start_serve


@dataclass
class Cli:
    """convrisk pointed at one backend, and the database behind it (to seed and to inspect)."""

    name: str
    home: Path
    db_path: Path
    env: dict[str, str]
    serve: Serve | None = None
    _store: LocalBackend | None = field(default=None, repr=False)

    @property
    def remote(self) -> bool:
        """Whether convrisk talks to `serve` over HTTP."""
        return self.serve is not None

    def run(
        self, *args: str, input: str | None = None, **extra_env: str
    ) -> subprocess.CompletedProcess[str]:
        """Run convrisk to its end; stdin is /dev/null unless `input` is given."""
        return subprocess.run(
            [CONVRISK, *args],
            env={**self.env, **extra_env},
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=SAFETY_TIMEOUT,
        )

    def popen(self, *args: str, **extra_env: str) -> subprocess.Popen[str]:
        """Start convrisk without waiting (stdout and stderr piped, stdin /dev/null)."""
        return subprocess.Popen(
            [CONVRISK, *args],
            env={**self.env, **extra_env},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    @property
    def store(self) -> LocalBackend:
        """The database behind the backend, opened in this process (SQLite's WAL lets both)."""
        if self._store is None:
            self._store = LocalBackend(self.db_path)
        return self._store

    def count(self, resource: str) -> int:
        """How many objects of a resource the database holds."""
        backend: Any = getattr(self.store, resource)
        return sum(1 for _ in _iterate(backend))

    def close(self) -> None:
        """Close the store."""
        if self._store is not None:
            self._store.close()


def _iterate(backend: Any) -> Iterator[Any]:
    cursor = None
    while True:
        page = backend.list(limit=100, starting_after=cursor)
        yield from page["data"]
        if not page["has_more"]:
            return
        cursor = page["data"][-1]["id"]


def drain_log(served: Serve) -> None:
    """Read serve's access log in a thread, kept in `served.banner`: a log nobody reads fills
    the pipe after about 1,500 requests, and serve then blocks writing it."""
    stream = served.proc.stderr
    assert stream is not None

    def read() -> None:
        for line in stream:
            served.banner.append(line.rstrip("\n"))

    threading.Thread(target=read, name="serve-log", daemon=True).start()


def start_drained_serve(home: Path) -> Serve:
    """`convrisk serve` over a database under `home`, its log drained."""
    served = start_serve(home)
    drain_log(served)
    return served


def stop_drained_serve(served: Serve, sig: int = signal.SIGTERM) -> int:
    """Stop a drained serve; its exit code."""
    served.proc.send_signal(sig)
    return served.proc.wait(timeout=SAFETY_TIMEOUT)


def local_cli(home: Path) -> Cli:
    """convrisk on a local database under `home`."""
    db_path = home / "local.db"
    return Cli("local", home, db_path, isolated_env(home, CONVRISK_DB=str(db_path)))


@pytest.fixture(params=["local", "remote"])
def cli(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Cli]:
    """Each test runs once on the local database and once against its own `convrisk serve`."""
    if request.param == "local":
        made = local_cli(tmp_path)
    else:
        served = start_drained_serve(tmp_path)
        env = isolated_env(tmp_path, CONVRISK_BASE_URL=served.url, CONVRISK_TOKEN=TOKEN)
        made = Cli("remote", tmp_path, served.db_path, env, serve=served)
    try:
        yield made
    finally:
        made.close()
        if made.serve is not None and made.serve.proc.poll() is None:
            assert stop_drained_serve(made.serve) == 0, made.serve.banner[-20:]
