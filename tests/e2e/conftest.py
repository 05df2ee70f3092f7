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


# The e2e modules .ci/lowest runs beside the quick loop (`-m "not e2e or lowest"`): each is where
# the installed script meets a library in a way no in-process test does.
LOWEST = {
    "test_version_and_help.py": "the console script's entry point, click and typer's --help",
    "test_terminal.py": "rich on a real pseudo-terminal: widths, colour, escapes",
    "test_ui.py": "Textual on a real pseudo-terminal, keys and quitting",
    "test_serve_cli.py": "uvicorn and Starlette in serve's own process: start, signals, stop",
    "test_remote_cli.py": "httpx from the installed script against a service on loopback",
    "test_shape.py": "jq (--jq) and the output sinks in the installed script",
    "test_import.py": "import's files, pipes and batches through the installed script",
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test of this folder is an e2e test (the quick loop, `-m "not e2e"`, leaves it out),
    whether or not its file says so; the modules of LOWEST are marked `lowest` too."""
    for item in items:
        if item.path.is_relative_to(_HERE):
            item.add_marker(pytest.mark.e2e)
            if item.path.name in LOWEST:
                item.add_marker(pytest.mark.lowest)


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
    from convrisk.local_backend.backend import LocalBackend

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
