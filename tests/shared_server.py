"""One in-process `serve` shared by a module's tests, each test with a database and a log of its
own: starting and stopping uvicorn costs about 0.2 s, a fresh SQLite file a few milliseconds."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from convrisk.api_client.protocol import ConversationsBackend, RiskProfilesBackend
from convrisk.api_client.raw import RawAnswer
from convrisk.local_backend.backend import LocalBackend
from convrisk.local_backend.serve.server import ConvriskServer, make_server

SETTLE_SECONDS = 10  # at most, for the requests in flight when a test ends


class CurrentBackend:
    """The Backend a shared server answers from: whichever LocalBackend the running test gave
    it (the server looks its resources up on every request)."""

    def __init__(self, backend: LocalBackend) -> None:
        self.current = backend

    @property
    def conversations(self) -> ConversationsBackend:
        """The current backend's conversations."""
        return self.current.conversations

    @property
    def risk_profiles(self) -> RiskProfilesBackend:
        """The current backend's risk profiles."""
        return self.current.risk_profiles

    def send(self, method: str, target: str, body: bytes | None) -> RawAnswer:
        """One request through the current backend's wire rules."""
        return self.current.send(method, target, body)

    def close(self) -> None:
        """Nothing: whoever made a LocalBackend closes it."""


class SharedServer:
    """A server whose database and access log are swapped for each test that uses it."""

    def __init__(self, idle: LocalBackend, token: str) -> None:
        self._backend = CurrentBackend(idle)
        self._logs: list[str] = []
        self.server = make_server(self._backend, token=token, log=self._log)

    def _log(self, line: str) -> None:
        self._logs.append(line)

    @contextmanager
    def serving(self, backend: LocalBackend, logs: list[str]) -> Iterator[ConvriskServer]:
        """The server answering from `backend` and logging into `logs` for a `with` block."""
        backend.conversations.list(limit=1)  # opened and migrated first, as make_server does
        before, logs_before = self._backend.current, self._logs
        self._backend.current, self._logs = backend, logs
        # Each test starts with no aimed fault rule and an empty journal, whatever the one
        # before it did.
        self.server.app.sandbox.faults.reset()
        self.server.app.journal.clear()
        try:
            yield self.server
        finally:
            # A request the test left behind (a client that hung up mid-body) ends first, so
            # its log line and its writes stay this test's.
            deadline = time.monotonic() + SETTLE_SECONDS
            while self.server.in_flight and time.monotonic() < deadline:
                time.sleep(0.005)
            self._backend.current, self._logs = before, logs_before


@contextmanager
def shared_server(folder: Path, token: str) -> Iterator[SharedServer]:
    """A running SharedServer over an idle database in `folder`; stopped, and that closed, at
    the end."""
    with LocalBackend(folder / "idle.db") as idle:
        shared = SharedServer(idle, token)
        with shared.server.running():
            yield shared
