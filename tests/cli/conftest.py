"""Run convrisk's main() in-process with Typer's CliRunner, in an isolated HOME and XDG folders."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.core import Command
from typer.testing import CliRunner

from convrisk.cli.app import main
from convrisk.cli.output import iostreams


@dataclass
class Result:
    """What one run of convrisk did: its exit code, stdout and stderr."""

    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        """stdout parsed as one JSON document."""
        return json.loads(self.stdout)

    def jsonl(self) -> list[Any]:
        """stdout parsed as JSON lines."""
        return [json.loads(line) for line in self.stdout.splitlines()]

    def lines(self) -> list[str]:
        """stdout's lines."""
        return self.stdout.splitlines()

    def ok(self) -> Result:
        """Self, after checking the run succeeded (the failure shows stderr)."""
        assert self.code == 0, f"exit {self.code}\nstdout: {self.stdout}\nstderr: {self.stderr}"
        return self


Invoke = Callable[..., Result]


@pytest.fixture(autouse=True)
def no_controlling_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Questions never reach the terminal that runs pytest: as in CI, there is none."""
    monkeypatch.setattr(iostreams, "controlling_terminal", lambda: None)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty HOME with XDG folders inside it, and no CONVRISK_* or NO_COLOR variables."""
    for name in list(os.environ):
        if name.startswith("CONVRISK_") or name in (
            "NO_COLOR",
            "XDG_CONFIG_HOME",
            "XDG_DATA_HOME",
            "XDG_STATE_HOME",
        ):
            monkeypatch.delenv(name)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    return home


@pytest.fixture
def db_path(home: Path) -> Path:
    """Where the local database lives by default in this HOME."""
    return home / "data" / "convrisk" / "convrisk.db"


@pytest.fixture
def config_file(home: Path) -> Path:
    """Where the config file lives by default in this HOME."""
    return home / "config" / "convrisk" / "config.toml"


@pytest.fixture
def invoke(home: Path) -> Invoke:
    """`invoke("conv", "list", input=...)`: run main() and capture its streams."""

    def run(*args: str, input: str | None = None) -> Result:
        runner = CliRunner()
        with runner.isolation(input=input) as (out, err, _):
            code = main(list(args))
            import sys

            sys.stdout.flush()
            sys.stderr.flush()
            return Result(code, out.getvalue().decode(), err.getvalue().decode())

    return run


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """Make convrisk see a terminal on the named streams: terminal("stdin", "stdout")."""

    def use(*names: str) -> None:
        import sys

        def is_terminal(stream: object) -> bool:
            return any(stream is getattr(sys, name) for name in names)

        monkeypatch.setattr(iostreams, "is_terminal", is_terminal)

    return use


@pytest.fixture
def conversations(invoke: Invoke) -> Callable[[int], list[str]]:
    """Create n conversations through the CLI; their ids, newest first."""

    def make(n: int) -> list[str]:
        ids = []
        for i in range(n):
            result = invoke("conv", "create", "--contact-id", f"c_{i}", "-o", "id").ok()
            ids.append(result.stdout.strip())
        return ids[::-1]

    return make


@pytest.fixture
def backend(db_path: Path) -> Iterator[Any]:
    """The local backend on the default database file, to seed many rows fast."""
    from convrisk.local_backend.backend import LocalBackend

    db_path.parent.mkdir(parents=True, exist_ok=True)
    store = LocalBackend(db_path)
    try:
        yield store
    finally:
        store.close()


def walk(cmd: Command, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Command]]:
    """Every command under `cmd`, itself first, each with its path of names."""
    yield path, cmd
    for name, sub in sorted(getattr(cmd, "commands", {}).items()):
        yield from walk(sub, (*path, name))


REMOTE_TOKEN = "cli-remote-token-7c41"


@dataclass
class Backends:
    """convrisk run in-process on one backend: `local` (the default database of the test's
    HOME) or `remote` (a `serve` in this process over that same database, reached over HTTP)."""

    name: str
    invoke: Invoke
    db_path: Path
    url: str | None
    log: list[str]

    @property
    def remote(self) -> bool:
        """Whether convrisk talks HTTP to the in-process serve."""
        return self.url is not None


@pytest.fixture(scope="module")
def cli_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One in-process serve for a module's remote runs, each test over its own database."""
    from tests.shared_server import shared_server

    with shared_server(tmp_path_factory.mktemp("cli-serve"), REMOTE_TOKEN) as running:
        yield running


@pytest.fixture(params=["local", "remote"])
def either(
    request: pytest.FixtureRequest,
    invoke: Invoke,
    db_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Backends]:
    """Each test runs once on the local database and once against an in-process serve of it:
    the in-process twin of tests/e2e's `cli` fixture, for the variants of a behaviour."""
    from convrisk.local_backend.backend import LocalBackend

    db_path.parent.mkdir(parents=True, exist_ok=True)
    if request.param == "local":
        yield Backends("local", invoke, db_path, None, [])
        return
    server = request.getfixturevalue("cli_server")
    log: list[str] = []
    with LocalBackend(db_path) as backend, server.serving(backend, log) as running:
        monkeypatch.setenv("CONVRISK_BASE_URL", running.url)
        monkeypatch.setenv("CONVRISK_TOKEN", REMOTE_TOKEN)
        yield Backends("remote", invoke, db_path, running.url, log)
