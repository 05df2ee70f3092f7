"""Fixtures of the raw-HTTP tests: the server on a free loopback port over a tmp database."""

from __future__ import annotations

import itertools
import socket
import ssl
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from convrisk.local_backend.backend import LocalBackend
from convrisk.local_backend.serve.server import ConvriskServer, make_server
from tests.shared_server import SharedServer, shared_server

TOKEN = "wire-test-token-5f2c"
# Built once: httpx would load the CA bundle again for every client (slow), though over plain
# http on loopback it is never used.
TLS = ssl.create_default_context()


@dataclass
class Served:
    """A running server, its database file and the access-log lines it wrote."""

    server: ConvriskServer
    db_path: Path
    logs: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        """Base URL of the server."""
        return self.server.url


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedServer]:
    """One server for the module's tests (`served` gives each its own database and log)."""
    with shared_server(tmp_path_factory.mktemp("wire"), TOKEN) as running:
        yield running


@pytest.fixture
def served(shared: SharedServer, tmp_path: Path) -> Iterator[Served]:
    """The module's server over a fresh LocalBackend, with a log of this test's requests only.
    A test that stops the server, or needs other options, starts its own with `serve_with`."""
    db_path = tmp_path / "wire.db"
    logs: list[str] = []
    with LocalBackend(db_path) as backend, shared.serving(backend, logs) as server:
        yield Served(server, db_path, logs)


ServeWith = Callable[..., Served]


@pytest.fixture
def serve_with(tmp_path: Path) -> Iterator[ServeWith]:
    """Start servers with other options (chaos, log format); each over its own fresh database."""
    numbers = itertools.count()
    with ExitStack() as stack:

        def start(**options: Any) -> Served:
            db_path = tmp_path / f"wire-{next(numbers)}.db"
            backend = LocalBackend(db_path)
            stack.callback(backend.close)
            logs: list[str] = []
            server = make_server(backend, token=TOKEN, log=logs.append, **options)
            stack.enter_context(server.running())
            return Served(server, db_path, logs)

        yield start


@pytest.fixture
def http(served: Served) -> Iterator[httpx.Client]:
    """An httpx client with the right token (raw HTTP: no convrisk client code)."""
    with httpx.Client(
        base_url=served.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10.0, verify=TLS
    ) as client:
        yield client


@pytest.fixture
def anon(served: Served) -> Iterator[httpx.Client]:
    """An httpx client that sends no token (or whatever each request sets)."""
    with httpx.Client(base_url=served.url, timeout=10.0, verify=TLS) as client:
        yield client


def read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes (the socket's timeout bounds each wait)."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def connect(served: Served) -> socket.socket:
    """A new TCP connection to the server, with a 10 s timeout on every read."""
    return socket.create_connection(("127.0.0.1", served.server.server_port), timeout=10)
