"""The installed convrisk on either backend: the local database, or a `convrisk serve` subprocess
on loopback over its own database. Import `cli` into a test module to run each test on both, or
`serve` for one server a module's tests share; `serving()` starts one for a single test."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import pytest

from convrisk.local_backend.backend import LocalBackend

from .console import CONVRISK, SAFETY_TIMEOUT, run

TOKEN = "e2e-serve-token-9d41c7"
READY_SECONDS = 60  # how long serve may take to print its banner on a loaded machine
_LISTENING = re.compile(r"^convrisk serve: listening on (http://\S+)$")


def isolated_env(home: Path, **extra: str) -> dict[str, str]:
    """An environment with no convrisk settings from the outside and a private HOME/XDG."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONVRISK_")}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_DATA_HOME=str(home / "data"),
        XDG_STATE_HOME=str(home / "state"),
        NO_COLOR="1",
    )
    env.update(extra)
    return env


@dataclass
class Serve:
    """A running `convrisk serve` subprocess: its URL, token and database file, the banner it
    printed and the log it has written since (stderr is read all along, so it never blocks)."""

    proc: subprocess.Popen[str]
    url: str
    token: str
    db_path: Path
    banner: list[str]
    log: list[str]
    reader: threading.Thread

    def stop(self, sig: int = signal.SIGTERM) -> tuple[int, str]:
        """Send a signal (unless it has stopped already); the exit code and the log after the
        banner. A serve that does not stop in time is killed, and that is an assertion error."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout=SAFETY_TIMEOUT)
        except subprocess.TimeoutExpired:
            # SIGABRT: the stacks of its threads on stderr (PYTHONFAULTHANDLER), then the end.
            self.proc.send_signal(signal.SIGABRT)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=SAFETY_TIMEOUT)
            self.reader.join(timeout=10)
            stacks = "".join(self.log)[-6000:]
            raise AssertionError(
                f"convrisk serve did not stop on signal {sig}; its log and stacks:\n{stacks}"
            ) from None
        self.reader.join(timeout=SAFETY_TIMEOUT)
        return code, "".join(self.log)


def _read_stderr(stream: TextIO, banner: list[str], log: list[str], ready: threading.Event) -> None:
    """Sort serve's stderr into the banner (up to its `export` line) and the log after it."""
    for line in stream:
        if ready.is_set():
            log.append(line)
            continue
        banner.append(line.rstrip("\n"))
        if banner[-1].startswith("export "):
            ready.set()
    ready.set()  # stderr closed: serve has stopped, whoever waits for the banner need not


def start_serve(
    home: Path,
    *extra: str,
    token: str | None = TOKEN,
    before: tuple[str, ...] = (),
    db_path: Path | None = None,
    env: dict[str, str] | None = None,
) -> Serve:
    """Start the installed `convrisk serve` on 127.0.0.1, a free port (0: the system picks),
    over a database under `home`; wait, at most READY_SECONDS, for its banner.

    `before`: global options before `serve` (`--profile P`); `db_path`: the database the
    settings choose (no --db is given then); `env`: more environment variables."""
    args = [str(CONVRISK), *before, "serve", "--host", "127.0.0.1", "--port", "0"]
    if db_path is None:
        db_path = home / "serve.db"
        args += ["--db", str(db_path)]
    if token is not None:
        args += ["--token", token]
    proc = subprocess.Popen(
        [*args, *extra],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=isolated_env(home, PYTHONFAULTHANDLER="1", **(env or {})),
    )
    assert proc.stderr is not None
    banner: list[str] = []
    log: list[str] = []
    ready = threading.Event()
    reader = threading.Thread(
        target=_read_stderr, args=(proc.stderr, banner, log, ready), name="serve-log", daemon=True
    )
    reader.start()
    ready.wait(READY_SECONDS)
    urls = [m.group(1) for m in map(_LISTENING.match, banner) if m]
    if not urls or not banner[-1].startswith("export "):
        try:
            why = f"exited with {proc.wait(timeout=1)}"
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=SAFETY_TIMEOUT)
            why = f"not ready in {READY_SECONDS} s"
        raise AssertionError(f"convrisk serve did not start ({why}): {banner}")
    if token is None:
        exported = dict(word.split("=", 1) for word in shlex.split(banner[-1])[1:])
        token = exported["CONVRISK_TOKEN"]
    return Serve(proc, urls[0], token, db_path, banner, log, reader)


@contextmanager
def serving(
    home: Path,
    *extra: str,
    token: str | None = TOKEN,
    before: tuple[str, ...] = (),
    db_path: Path | None = None,
    env: dict[str, str] | None = None,
) -> Iterator[Serve]:
    """`start_serve()` for the length of a `with`: it is stopped at the end, and a serve still
    running then must stop cleanly (exit 0) on SIGTERM."""
    served = start_serve(home, *extra, token=token, before=before, db_path=db_path, env=env)
    try:
        yield served
    finally:
        running = served.proc.poll() is None
        code, log = served.stop()
    if running:
        assert code == 0, log


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serve]:
    """One `convrisk serve` shared by a module's tests; stopped, cleanly, after the last."""
    with serving(tmp_path_factory.mktemp("serve")) as running:
        yield running


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
        return run({**self.env, **extra_env}, *args, input=input)

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


# The two below are the names tests/e2e/test_import.py knows: every serve's log is drained now.
def start_drained_serve(home: Path) -> Serve:
    """`convrisk serve` over a database under `home`."""
    return start_serve(home)


def stop_drained_serve(served: Serve, sig: int = signal.SIGTERM) -> int:
    """Stop a serve; its exit code."""
    return served.stop(sig)[0]


@dataclass
class Remote:
    """Runs the CLI against a serve URL with a token."""

    home: Path
    url: str
    token: str

    def run(
        self, *args: str, stdin: str | None = None, **env: str
    ) -> subprocess.CompletedProcess[str]:
        """Run `convrisk ARGS` in remote mode; never raises on a non-zero exit."""
        remote = {"CONVRISK_BASE_URL": self.url, "CONVRISK_TOKEN": self.token, **env}
        return run(isolated_env(self.home, **remote), *args, input=stdin)

    def json(self, *args: str, stdin: str | None = None) -> Any:
        """Run a command with `-o json`, which must succeed; its parsed stdout."""
        result = self.run(*args, "-o", "json", stdin=stdin)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)


def local_cli(home: Path) -> Cli:
    """convrisk on a local database under `home`."""
    db_path = home / "local.db"
    return Cli("local", home, db_path, isolated_env(home, CONVRISK_DB=str(db_path)))


def remote_cli(home: Path) -> Cli:
    """convrisk against its own `convrisk serve` of a database under `home` (stop it after)."""
    served = start_serve(home)
    env = isolated_env(home, CONVRISK_BASE_URL=served.url, CONVRISK_TOKEN=served.token)
    return Cli("remote", home, served.db_path, env, serve=served)


@pytest.fixture(params=["local", "remote"])
def cli(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Cli]:
    """Each test runs once on the local database and once against its own `convrisk serve`."""
    made = local_cli(tmp_path) if request.param == "local" else remote_cli(tmp_path)
    try:
        yield made
    finally:
        made.close()
        if made.serve is not None and made.serve.proc.poll() is None:
            code, log = made.serve.stop()
            assert code == 0, log[-2000:]


@pytest.fixture
def over_serve(tmp_path: Path) -> Iterator[Cli]:
    """convrisk against its own `convrisk serve`: the one e2e run of a behaviour whose local
    variant is tested in-process (tests/cli, the `either` fixture)."""
    made = remote_cli(tmp_path)
    try:
        yield made
    finally:
        made.close()
        if made.serve is not None and made.serve.proc.poll() is None:
            code, log = made.serve.stop()
            assert code == 0, log[-2000:]


@pytest.fixture
def on_local(tmp_path: Path) -> Iterator[Cli]:
    """convrisk on a local database: the one e2e run of a local-only behaviour."""
    made = local_cli(tmp_path)
    try:
        yield made
    finally:
        made.close()
