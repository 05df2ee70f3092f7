"""The server's life: unexpected failures become a generic 500, and run_server stops cleanly."""

from __future__ import annotations

import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from convrisk.api_client import ConvriskError
from convrisk.api_client.protocol import ConversationsBackend, RiskProfilesBackend
from convrisk.api_client.raw import RawAnswer
from convrisk.local_backend.backend import LocalBackend
from convrisk.local_backend.serve.server import make_server, run_server

from .conftest import TLS, TOKEN


class _BrokenRiskProfiles:
    """Real risk profiles whose retrieve fails the way a bug would (not an api_client error)."""

    def __init__(self, inner: RiskProfilesBackend) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def retrieve(self, id: str) -> Any:
        raise RuntimeError(f"disk on fire near secret-detail-{id}")


class _FaultyBackend:
    """A real LocalBackend with one fault injected into risk_profiles.retrieve."""

    def __init__(self, inner: LocalBackend) -> None:
        self._inner = inner

    @property
    def conversations(self) -> ConversationsBackend:
        return self._inner.conversations

    @property
    def risk_profiles(self) -> RiskProfilesBackend:
        return _BrokenRiskProfiles(self._inner.risk_profiles)

    def send(self, method: str, target: str, body: bytes | None) -> RawAnswer:
        return self._inner.send(method, target, body)

    def close(self) -> None:
        self._inner.close()


@pytest.fixture
def faulty(tmp_path: Path) -> Iterator[tuple[str, list[str]]]:
    backend = _FaultyBackend(LocalBackend(tmp_path / "faulty.db"))
    logs: list[str] = []
    server = make_server(backend, token=TOKEN, log=logs.append)
    try:
        with server.running():
            yield server.url, logs
    finally:
        backend.close()


def test_unexpected_exception_is_a_generic_500_and_is_logged(
    faulty: tuple[str, list[str]],
) -> None:
    url, logs = faulty
    with httpx.Client(
        base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, verify=TLS
    ) as http:
        response = http.get("/v1/risk-profiles/rp_123")
        assert response.status_code == 500
        assert response.headers["content-type"] == "application/json"
        error = response.json()["error"]
        assert error["type"] == "api_error"
        assert "secret-detail" not in response.text
        assert "Traceback" not in response.text
        # The server is still up, on the same connection.
        assert http.get("/v1/conversations").status_code == 200
    log = "\n".join(logs)
    assert "RuntimeError: disk on fire near secret-detail-rp_123" in log
    assert "GET /v1/risk-profiles/rp_123 500" in log


def test_run_server_serves_until_sigterm_then_closes_the_database(tmp_path: Path) -> None:
    db_path = tmp_path / "serve.db"
    logs: list[str] = []
    seen: list[str] = []
    created: dict[str, Any] = {}

    def on_ready(url: str) -> None:
        seen.append(url)
        with httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, verify=TLS
        ) as http:
            response = http.post("/v1/conversations", json={"contact_id": "ct_sig"})
            created.update(response.json())
        os.kill(os.getpid(), signal.SIGTERM)

    before = signal.getsignal(signal.SIGTERM)
    run_server(
        host="127.0.0.1", port=0, db_path=db_path, token=TOKEN, on_ready=on_ready, log=logs.append
    )
    assert len(seen) == 1 and seen[0].startswith("http://127.0.0.1:")
    assert signal.getsignal(signal.SIGTERM) is before
    assert logs and re.fullmatch(r"\S+Z 127\.0\.0\.1:\d+ POST /v1/conversations 200 \S+ms", logs[0])
    # Stopped: nothing listens any more.
    with pytest.raises(httpx.ConnectError):
        httpx.get(seen[0] + "/v1/conversations", verify=TLS)
    # Closed cleanly: the file is whole and holds the row.
    with sqlite3.connect(db_path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    reopened = LocalBackend(db_path)
    try:
        assert reopened.conversations.retrieve(created["id"])["contact_id"] == "ct_sig"
    finally:
        reopened.close()


def test_run_server_stops_on_sigint_too(tmp_path: Path) -> None:
    ready: list[str] = []

    def on_ready(url: str) -> None:
        ready.append(url)
        os.kill(os.getpid(), signal.SIGINT)

    before = signal.getsignal(signal.SIGINT)
    run_server(
        host="127.0.0.1",
        port=0,
        db_path=tmp_path / "int.db",
        token=TOKEN,
        on_ready=on_ready,
        log=lambda line: None,
    )
    assert len(ready) == 1
    assert signal.getsignal(signal.SIGINT) is before


def test_an_empty_token_is_refused(tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path / "t.db")
    try:
        with pytest.raises(ValueError):
            make_server(backend, token="")
    finally:
        backend.close()


def test_run_server_on_a_busy_port_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConvriskError, match=f"Cannot listen on 127.0.0.1 port {port}"):
            run_server(
                host="127.0.0.1",
                port=port,
                db_path=tmp_path / "busy.db",
                token=TOKEN,
                on_ready=lambda url: None,
                log=lambda line: None,
            )


def test_a_stop_that_hangs_ends_the_process_with_its_stacks_in_the_log() -> None:
    script = (
        "import time\n"
        "from convrisk.local_backend.serve.server import _end_within\n"
        "_end_within(0.3, lambda line: print(line, flush=True))\n"
        "time.sleep(30)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert "did not stop within 0.3 seconds of the signal; exiting." in done.stdout
    assert 'File "<string>", line 4 in <module>' in done.stderr  # the main thread, asleep
