"""The module's in-process serve (tests/cli/conftest.py's `cli_server`) over a database of the
test's choosing, with a log of its own: for remote-only variants of e2e tests, which the
two-backend `either` fixture would also run locally."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from convrisk.local_backend.backend import LocalBackend
from tests.cli.conftest import REMOTE_TOKEN
from tests.shared_server import SharedServer


@dataclass
class Served:
    """The serve's URL and token, and the lines it has logged since the test began."""

    url: str
    token: str
    log: list[str] = field(default_factory=list)


@contextmanager
def served(
    server: SharedServer, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Served]:
    """`server` answering from `db_path` (made if missing) for a `with` block, and convrisk
    pointed at it (CONVRISK_BASE_URL and CONVRISK_TOKEN) meanwhile."""
    db_path.parent.mkdir(parents=True, exist_ok=True)
    log: list[str] = []
    with (
        LocalBackend(db_path) as backend,
        server.serving(backend, log) as running,
        monkeypatch.context() as patch,
    ):
        patch.setenv("CONVRISK_BASE_URL", running.url)
        patch.setenv("CONVRISK_TOKEN", REMOTE_TOKEN)
        yield Served(running.url, REMOTE_TOKEN, log)
