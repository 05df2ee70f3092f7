"""A `convrisk serve` sandbox for your own test suite: the pytest fixture `convrisk_sandbox`
(load it with `-p convrisk.testing` or `pytest_plugins = ["convrisk.testing"]`) and `Sandbox`,
the same object without pytest (docs/guide/testing.md).

pytest is the suite's, not a dependency of convrisk: it is imported only by the plugin's hooks,
so `Sandbox` works where pytest is not installed. Nothing in cli/, api_client/ or local_backend/
imports this module (pyproject.toml's import contracts).
"""

from __future__ import annotations

import os
import queue
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType, TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pytest

    from convrisk.api_client.remote.http import HTTPBackend
    from convrisk.library import Client

__all__ = ["Sandbox", "SandboxError"]

# The most serve may take to say it listens (a cold start on a busy CI runner takes 1-3 s).
START_SECONDS = 30.0
# The most a stop waits after SIGTERM before SIGKILL, and after SIGKILL.
STOP_SECONDS = 10.0
# The lines of serve's stderr kept for an error message (the rest is read and dropped).
KEPT_LINES = 20
LISTENING = "convrisk serve: listening on "
# The name the fixtures' plugin object is registered under (once, whichever way it was loaded).
FIXTURES_PLUGIN = "convrisk.testing.fixtures"


class SandboxError(RuntimeError):
    """The sandbox's `convrisk serve` did not start, or is not running: its own line says why."""


class Sandbox:
    """One `convrisk serve` on a free loopback port, over a database of its own, for a test
    session: `with Sandbox() as sb:` starts it, the end of the block stops it and removes the
    database. `seed` repeats the ids (and the random faults), `clock` the times (serve's --seed
    and --clock)."""

    def __init__(
        self,
        seed: int | None = None,
        clock: str | None = None,
        *,
        start_timeout: float = START_SECONDS,
    ) -> None:
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise TypeError(f"seed must be a whole number or None, not {seed!r}")
        if clock is not None and not isinstance(clock, str):
            raise TypeError(f"clock must be a string (serve's --clock) or None, not {clock!r}")
        self.seed = seed
        self.clock = clock
        self._start_timeout = start_timeout
        self._process: subprocess.Popen[bytes] | None = None
        self._folder: Path | None = None
        self._admin: HTTPBackend | None = None
        self._base_url: str | None = None
        self._token = secrets.token_urlsafe(24)
        self._lines: deque[str] = deque(maxlen=KEPT_LINES)
        self._reader: threading.Thread | None = None

    def __repr__(self) -> str:
        # Never the token: a repr lands in test reports.
        where = self._base_url if self._base_url is not None else "not started"
        return f"<convrisk.testing.Sandbox {where}>"

    def __enter__(self) -> Sandbox:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        """The sandbox's URL, `http://127.0.0.1:PORT`: the base_url your application takes."""
        if self._base_url is None:
            raise SandboxError("The sandbox is not running: start it first (`with Sandbox():`).")
        return self._base_url

    @property
    def token(self) -> str:
        """The bearer token the sandbox takes (made for this sandbox alone)."""
        return self._token

    def start(self) -> None:
        """Start serve and wait until it listens: a SandboxError quoting serve's own error line
        when it exits first, or says nothing within `start_timeout` seconds."""
        if self._process is not None:
            raise SandboxError("The sandbox is already running.")
        self._lines.clear()
        self._folder = Path(tempfile.mkdtemp(prefix="convrisk-sandbox-"))
        command = [sys.executable, *_safe_path(), "-m", "convrisk.cli", "serve"]
        command += ["--host", "127.0.0.1"]
        command += ["--port", "0", "--db", str(self._folder / "sandbox.db")]
        if self.seed is not None:
            command += ["--seed", str(self.seed)]
        if self.clock is not None:
            command += ["--clock", self.clock]
        try:
            self._process = subprocess.Popen(
                command,
                env=self._environment(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            self._base_url = self._wait_until_listening(self._process)
        except BaseException:
            self.stop()
            raise

    def _environment(self) -> dict[str, str]:
        """The user's environment without convrisk's settings: the token by environment (not
        on a command line others can read), and no config file, so no profile of the user's
        (read-only, another db) changes what this sandbox serves."""
        assert self._folder is not None
        env = {
            name: value for name, value in os.environ.items() if not name.startswith("CONVRISK_")
        }
        env["CONVRISK_SERVE_TOKEN"] = self._token
        # serve stops once this process has ended, even killed outright (cli/commands/serve.py).
        env["CONVRISK_SERVE_PARENT_PID"] = str(os.getpid())
        env["CONVRISK_CONFIG"] = str(self._folder / "no-config.toml")
        env["NO_COLOR"] = "1"
        return env

    def _wait_until_listening(self, process: subprocess.Popen[bytes]) -> str:
        """The URL of serve's `listening on` line, read within the deadline."""
        said: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(
            target=self._read_stderr, args=(process, said), name="convrisk-sandbox-stderr"
        )
        self._reader.daemon = True
        self._reader.start()
        deadline = time.monotonic() + self._start_timeout
        while True:
            try:
                url = said.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise SandboxError(
                    f"convrisk serve did not say it was listening within "
                    f"{self._start_timeout:g} s; {self._last_words()}"
                ) from None
            if url is not None:
                return url
            try:
                code: int | str = process.wait(timeout=STOP_SECONDS)
            except subprocess.TimeoutExpired:
                code = "unknown"
            raise SandboxError(f"convrisk serve did not start (exit {code}): {self._last_words()}")

    def _read_stderr(self, process: subprocess.Popen[bytes], said: queue.Queue[str | None]) -> None:
        """Read serve's stderr to its end, so that its log never fills the pipe: the URL once it
        listens, None at the end; the last lines kept for an error message."""
        assert process.stderr is not None
        listening = False
        for raw in process.stderr:
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            self._lines.append(line)
            if not listening and line.startswith(LISTENING):
                listening = True
                said.put(line.removeprefix(LISTENING).strip())
        said.put(None)

    def _last_words(self) -> str:
        """Serve's error line (its last `Error:` line, else its last line), made safe."""
        from convrisk.api_client.text import safe_line

        lines = [line for line in list(self._lines) if line.strip()]
        errors = [line for line in lines if line.startswith("Error:")]
        last = errors[-1] if errors else lines[-1] if lines else "it printed nothing"
        return safe_line(last)

    def stop(self) -> None:
        """Stop serve (SIGTERM, then SIGKILL if it does not end in time) and remove its
        database; stopping a stopped sandbox does nothing."""
        process, self._process = self._process, None
        if self._admin is not None:
            self._admin.close()
            self._admin = None
        if process is not None:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=STOP_SECONDS)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=STOP_SECONDS)
            if self._reader is not None:
                self._reader.join(timeout=STOP_SECONDS)
            if process.stderr is not None:
                process.stderr.close()
        self._reader = None
        self._base_url = None
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None

    def client(self) -> Client:
        """A `convrisk.Client` on the sandbox (close it, or use it in a `with` block)."""
        from convrisk.library import Client

        return Client.remote(self.base_url, self.token)

    def _send(self, method: str, target: str, body: bytes | None) -> Any:
        """One request to the sandbox's admin routes, on a connection kept for them."""
        if self._admin is None:
            from convrisk.api_client.remote.http import HTTPBackend

            self._admin = HTTPBackend(self.base_url, self.token)
        return self._admin.send(method, target, body)

    def requests(self, method: str | None = None, path: str | None = None) -> list[dict[str, Any]]:
        """The requests the sandbox received since its last reset, oldest first, as dicts
        (`seq`, `method`, `path`, `query`, `status`, `body`, `fault`...): those of `method`
        on a path matching the glob `path` (`*`, `?`, `[...]`), when given."""
        from convrisk.api_client import sandbox

        verb = None if method is None else _method(method)
        return sandbox.requests(self._send, method=verb, path=path).requests

    def verify(
        self, method: str, path: str, count: int | None = None, at_least: int | None = None
    ) -> list[dict[str, Any]]:
        """Assert that the sandbox received exactly `count`, or at least `at_least` (default:
        at least 1), requests of `method` on a path matching the glob `path`: the matching
        requests when it did, else an AssertionError that lists the near misses."""
        from convrisk.api_client import sandbox
        from convrisk.api_client.text import safe_line

        if count is not None and at_least is not None:
            raise TypeError("verify() takes count or at_least, not both")
        if not isinstance(path, str):
            raise TypeError(f"verify() takes a path glob such as /v1/*, not {path!r}")
        exact = None if count is None else _whole(count, "count")
        least = 1 if at_least is None else _whole(at_least, "at_least")
        verdict = sandbox.verify(self._send, _method(method), path, count=exact, at_least=least)
        if not verdict.held:
            raise AssertionError(
                "\n".join(safe_line(line) for line in [verdict.failure, *verdict.explanation])
            )
        return verdict.matched

    def fault(self, method: str, path: str, **rule: Any) -> dict[str, Any]:
        """Aim a fault at the requests of `method` ("*" for any) on paths matching the glob
        `path`: `status=503, retry_after=1`, `drop=True`, `times=2`, `after=1`... (the fields
        of POST /__sandbox/faults). The rule as the sandbox keeps it, with its `id`."""
        from convrisk.api_client import sandbox

        verb = "*" if method == "*" else _method(method)
        return sandbox.add_fault(self._send, {"method": verb, "path": path, **rule})

    def load(self, path: str | os.PathLike[str]) -> dict[str, int]:
        """Replace every record with those of a snapshot file (`convrisk sandbox snapshot`,
        `serve --record`): how many of each resource were restored."""
        from convrisk.api_client import sandbox

        with open(path, "rb") as source:
            data = source.read(sandbox.MAX_SNAPSHOT_BYTES + 1)
        if len(data) > sandbox.MAX_SNAPSHOT_BYTES:
            raise ValueError(
                f"{os.fspath(path)} is over {sandbox.MAX_SNAPSHOT_BYTES // (1024 * 1024)} MiB, "
                "the most a snapshot may hold"
            )
        return sandbox.restore(self._send, data)

    def snapshot(self, path: str | os.PathLike[str]) -> int:
        """Write every record to a snapshot file (JSON lines, whole or not at all, mode 0600, as
        `convrisk sandbox snapshot` writes it) for `load` to put back: how many records it
        holds."""
        from convrisk.api_client import sandbox

        data = sandbox.snapshot(self._send)
        sandbox.write_whole(Path(path), data)
        return sum(1 for line in data.splitlines() if line.strip())

    def reset(self) -> None:
        """Empty the sandbox: every record, the idempotency keys, the request journal and the
        aimed faults; the seeded ids, times and random faults start over."""
        from convrisk.api_client import sandbox

        sandbox.reset(self._send)


def _safe_path() -> list[str]:
    """`-P` (the working folder is not put first on serve's import path, so a file of the
    user's named like a library, a jq.py, cannot stand in for it), unless this process found
    convrisk itself in the working folder (a checkout used without installing), where serve
    must look too."""
    import convrisk

    root = Path(convrisk.__file__).resolve().parent.parent
    return [] if root == Path.cwd().resolve() else ["-P"]


def _method(text: str) -> str:
    """An HTTP method in capitals; a ValueError for what is none."""
    if not isinstance(text, str) or not text.isascii() or not text.isalpha():
        raise ValueError(f"method must be an HTTP method such as GET or POST, not {text!r}")
    return text.upper()


def _whole(value: object, name: str) -> int:
    """`count` or `at_least`: a whole number, 0 or more."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a whole number, 0 or more, not {value!r}")
    return value


def pytest_addoption(parser: pytest.Parser) -> None:
    """The fixture's serve options, in the suite's ini file or with `-o NAME=VALUE`."""
    parser.addini("convrisk_seed", "convrisk_sandbox: serve's --seed (ids, faults)")
    parser.addini("convrisk_clock", "convrisk_sandbox: serve's --clock (times)")


def pytest_configure(config: pytest.Config) -> None:
    """Register the fixtures, once, however the plugin was loaded."""
    if not config.pluginmanager.has_plugin(FIXTURES_PLUGIN):
        config.pluginmanager.register(_fixtures(), FIXTURES_PLUGIN)


def _fixtures() -> ModuleType:
    """The plugin that holds the fixtures, made when pytest loads this one (pytest is imported
    here, not when `Sandbox` is)."""
    import pytest

    @pytest.fixture(scope="session")
    def convrisk_session_sandbox(pytestconfig: pytest.Config) -> Iterator[Sandbox]:
        """The session's Sandbox (one per xdist worker: each worker is a session of its own),
        started at its first use, stopped at the end."""
        seed_text = str(pytestconfig.getini("convrisk_seed") or "").strip()
        clock_text = str(pytestconfig.getini("convrisk_clock") or "").strip()
        if seed_text and not seed_text.isdigit():
            raise pytest.UsageError(f"convrisk_seed must be a whole number, not {seed_text!r}")
        seed = int(seed_text) if seed_text else None
        with Sandbox(seed=seed, clock=clock_text or None) as sandbox:
            yield sandbox

    @pytest.fixture
    def convrisk_sandbox(convrisk_session_sandbox: Sandbox) -> Sandbox:
        """The session's Sandbox, reset before the test: no record, no request, no fault."""
        convrisk_session_sandbox.reset()
        return convrisk_session_sandbox

    plugin = ModuleType(FIXTURES_PLUGIN, "The fixtures of convrisk.testing.")
    vars(plugin).update(
        convrisk_session_sandbox=convrisk_session_sandbox, convrisk_sandbox=convrisk_sandbox
    )
    return plugin
