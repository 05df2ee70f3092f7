"""Fixtures of the e2e tests: an isolated HOME for the console script, its database opened in
this process to seed rows fast, and a remote that answers odd records."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.loopback import on_loopback, running, url_of

from .console import db_of
from .odd_service import OddRecords

_HERE = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test of this folder is an e2e test (the quick loop, `-m "not e2e"`, leaves it out),
    whether or not its file says so."""
    for item in items:
        if item.path.is_relative_to(_HERE):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """An environment with its own HOME and XDG folders, and nothing of convrisk's."""
    home = tmp_path / "home"
    home.mkdir()
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
    }


@pytest.fixture
def store(env: dict[str, str]) -> Iterator[Any]:
    """The local backend on the default database of `env`, to seed rows fast."""
    from convrisk.local_backend.store import LocalBackend

    db_of(env).parent.mkdir(parents=True, exist_ok=True)
    backend = LocalBackend(db_of(env))
    try:
        yield backend
    finally:
        backend.close()


@pytest.fixture(scope="module")
def service() -> Iterator[str]:
    """A service on 127.0.0.1 whose records lack fields, carry extra ones or odd types: its URL."""
    with running(on_loopback(OddRecords)) as server:
        yield url_of(server)
