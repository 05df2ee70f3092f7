"""The two legs of the contract suite: LocalBackend in-process, and HTTPBackend over `serve`."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from convrisk.api_client import Backend, Client
from convrisk.api_client.remote.http import HTTPBackend
from convrisk.local_backend.backend import LocalBackend
from tests.shared_server import SharedServer, shared_server
from tests.through_httpx import ThroughHttpx

TOKEN = "contract-token-3b9e"
START = 1_700_000_000
# One TLS context for every remote leg: otherwise httpx loads the CA bundle per client (slow),
# though over plain http on loopback it is never used.
_TLS = ssl.create_default_context()


class Clock:
    """The service's clock, moved by the test (the remote leg's server reads the same one)."""

    def __init__(self) -> None:
        self.now = float(START)

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        """Move time forward."""
        self.now += seconds


@dataclass
class Leg:
    """One way of reaching the service: its name, Backend, Client facade and clock."""

    name: str
    backend: Backend
    client: Client
    clock: Clock


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedServer]:
    """One server for the module's remote legs (each over the database of its own test)."""
    with shared_server(tmp_path_factory.mktemp("contract"), TOKEN) as running:
        yield running


def open_leg(name: str, db_path: Path, stack: ExitStack, shared: SharedServer) -> Leg:
    """Start a leg over a fresh database; everything opened is closed by `stack`."""
    clock = Clock()
    local = LocalBackend(db_path, clock=clock)
    stack.callback(local.close)
    backend: Backend = local
    if name == "remote":
        server = stack.enter_context(shared.serving(local, []))
        remote = HTTPBackend(
            server.url,
            TOKEN,
            timeout=10.0,
            transport=ThroughHttpx(httpx.HTTPTransport(verify=_TLS)),
        )
        stack.callback(remote.close)
        backend = remote
    return Leg(name, backend, Client(backend), clock)


@pytest.fixture(params=["local", "remote"])
def leg(request: pytest.FixtureRequest, tmp_path: Path, shared: SharedServer) -> Iterator[Leg]:
    """Each contract test runs once per leg."""
    with ExitStack() as stack:
        yield open_leg(str(request.param), tmp_path / "contract.db", stack, shared)


@pytest.fixture
def both(tmp_path: Path, shared: SharedServer) -> Iterator[tuple[Leg, Leg]]:
    """Both legs at once, each on its own database, for side-by-side comparisons."""
    with ExitStack() as stack:
        yield (
            open_leg("local", tmp_path / "local.db", stack, shared),
            open_leg("remote", tmp_path / "remote.db", stack, shared),
        )
