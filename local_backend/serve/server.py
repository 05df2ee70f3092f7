"""`convrisk serve`: the wire rules (local_backend.sandbox.wire) over HTTP, on uvicorn and
Starlette.

uvicorn owns the sockets: parsing, keep-alive, bounded connections, graceful shutdown. This module
makes the listening socket, configures uvicorn with the ASGI app (local_backend.serve.asgi_app) and
the
protocols that add what uvicorn lacks (local_backend.serve.uvicorn_protocols), and starts and stops
it.
"""

from __future__ import annotations

import contextlib
import faulthandler
import logging
import os
import resource
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import uvicorn

from convrisk.api_client import __version__
from convrisk.api_client.errors import ConvriskError
from convrisk.api_client.params import MAX_HEAD_BYTES
from convrisk.api_client.protocol import Backend
from convrisk.local_backend.sandbox.request_journal import Journal
from convrisk.local_backend.sandbox.wire import Wire
from convrisk.local_backend.serve.access_log import AccessLog, Log, UvicornNotices
from convrisk.local_backend.serve.asgi_app import ServeApp
from convrisk.local_backend.serve.faults import Chaos, Connections
from convrisk.local_backend.serve.memory import BODY_BUDGET, Memory
from convrisk.local_backend.serve.uvicorn_protocols import http_protocol
from convrisk.local_backend.store.clock import SandboxClock
from convrisk.local_backend.store.ids import IdSource
from convrisk.local_backend.store.resource import Columns

if TYPE_CHECKING:
    from convrisk.local_backend.serve.proxy import Proxy
    from convrisk.local_backend.serve.recording import Recorder

# Idle keep-alive connections are closed after this; above httpx's 5 s pool expiry, so that
# the client, not the server, ends an idle connection (no race on reuse).
KEEP_ALIVE_SECONDS = 15
# How long a stop waits for requests in flight before it cancels them.
DRAIN_SECONDS = 10
# How long a stop may take in all, drain included, before the process ends itself.
STOP_SECONDS = DRAIN_SECONDS + 20
BACKLOG = 2048
# Descriptors kept back for the database, the log and the process itself.
_RESERVED_FDS = 32
_MAX_CONNECTIONS = 10_000


def _connection_limit() -> int:
    """Connections served before a request is answered 503: what the descriptor limit allows."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return _MAX_CONNECTIONS
    return max(8, min(_MAX_CONNECTIONS, soft - _RESERVED_FDS))


def _listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket (IPv6 when the host is an IPv6 address)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say they are TCP.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(BACKLOG)
    except BaseException:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def is_loopback(host: str) -> bool:
    """Whether `host` is a loopback address (or `localhost`): nothing beyond this machine."""
    import ipaddress

    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class ConvriskServer:
    """`convrisk serve` over one Backend, bound at construction; `url` is where it listens."""

    def __init__(
        self,
        backend: Backend,
        *,
        token: str,
        host: str = "127.0.0.1",
        port: int = 0,
        log: Log | None = None,
        log_format: str = "text",
        chaos: Chaos | None = None,
        proxy: Proxy | None = None,
        read_only: bool = False,
    ) -> None:
        self.backend = backend
        self.wire = Wire(backend, token)
        # Open (and migrate) the database now: a bad file fails here, not on the first request,
        # and no request on the event loop ever waits for a migration.
        backend.conversations.list(limit=1)
        self.log = AccessLog(log, log_format, token)
        self.connections = Connections()
        # One budget for serve as a whole: incomplete heads, bodies (local_backend.serve.memory).
        self.memory = Memory(BODY_BUDGET if proxy is None else proxy.max_bytes)
        # The app answers 503 over the limit itself (uvicorn's own 503 is plain text).
        self.app = ServeApp(
            self.wire,
            self.log,
            chaos,
            self.connections,
            _connection_limit(),
            Journal(token),
            proxy,
            self.memory,
            read_only=read_only,
        )
        config = uvicorn.Config(
            self.app,
            http=http_protocol(self.connections, self.memory),
            ws="none",
            lifespan="off",
            loop="auto",
            log_config=None,
            access_log=False,
            # X-Forwarded-For from loopback would otherwise replace the client in the log.
            proxy_headers=False,
            server_header=False,
            headers=[("server", f"convrisk/{__version__}")],
            limit_concurrency=None,
            # h11's buffer (requests with a method llhttp does not know) holds a head at most.
            h11_max_incomplete_event_size=MAX_HEAD_BYTES,
            backlog=BACKLOG,
            timeout_keep_alive=KEEP_ALIVE_SECONDS,
            timeout_graceful_shutdown=DRAIN_SECONDS,
        )
        self._uvicorn = uvicorn.Server(config)
        self._socket = _listen(host, port)
        self._thread: threading.Thread | None = None
        bound = self._socket.getsockname()
        self.server_address: tuple[str, int] = (str(bound[0]), int(bound[1]))

    @property
    def server_port(self) -> int:
        """The port it listens on."""
        return self.server_address[1]

    @property
    def url(self) -> str:
        """The base URL clients use, e.g. `http://127.0.0.1:54321`."""
        host = self.server_address[0]
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.server_port}"

    @property
    def in_flight(self) -> int:
        """How many requests are being handled right now."""
        return self.app.in_flight

    def _serve(self) -> None:
        """Serve in this thread until shutdown() (its own event loop)."""
        handler = UvicornNotices(self.log)
        logger = logging.getLogger("uvicorn.error")
        logger.addHandler(handler)
        try:
            self._uvicorn.run(sockets=[self._socket])
        finally:
            self.app.writer.shutdown(wait=True)
            logger.removeHandler(handler)

    @contextlib.contextmanager
    def running(self) -> Iterator[ConvriskServer]:
        """Serve from a background thread for the block, then stop and close the server.

        Off the main thread, uvicorn installs no signal handlers (which would re-raise SIGTERM
        after stopping: exit 143): run_server's handlers stop it.
        """
        self._thread = threading.Thread(target=self._serve, name="convrisk-serve", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._uvicorn.started and self._thread.is_alive():
            if time.monotonic() > deadline:
                raise ConvriskError("convrisk serve did not start within 30 seconds.")
            time.sleep(0.005)
        try:
            yield self
        finally:
            self.shutdown()
            self.server_close()

    def shutdown(self) -> None:
        """Stop accepting; requests in flight go on (server_close waits for them)."""
        self._uvicorn.should_exit = True

    @property
    def stopped(self) -> bool:
        """Whether the serving thread has ended (or never started)."""
        return self._thread is None or not self._thread.is_alive()

    def force_exit(self) -> None:
        """Stop without waiting for requests in flight (a second Ctrl-C)."""
        self._uvicorn.should_exit = True
        self._uvicorn.force_exit = True

    def server_close(self) -> None:
        """Wait for the requests in flight (DRAIN_SECONDS at most), then close everything."""
        self.shutdown()
        if self._thread is not None:
            self._thread.join(DRAIN_SECONDS + 5)
        self._socket.close()


def make_server(
    backend: Backend,
    *,
    token: str,
    host: str = "127.0.0.1",
    port: int = 0,
    log: Log | None = None,
    log_format: str = "text",
    chaos: Chaos | None = None,
    proxy: Proxy | None = None,
    read_only: bool = False,
) -> ConvriskServer:
    """A bound server over `backend` (port 0: a free one); start it with running().
    `read_only` answers every request but a read (GET, HEAD, OPTIONS) with a 403."""
    return ConvriskServer(
        backend,
        token=token,
        host=host,
        port=port,
        log=log,
        log_format=log_format,
        chaos=chaos,
        proxy=proxy,
        read_only=read_only,
    )


def run_server(
    *,
    host: str,
    port: int,
    db_path: Path,
    token: str,
    on_ready: Callable[[str], None],
    log: Log,
    log_format: str = "text",
    chaos: Chaos | None = None,
    clock: SandboxClock | None = None,
    id_sources: Mapping[str, IdSource] | None = None,
    load: dict[str, list[Columns]] | None = None,
    proxy: Proxy | None = None,
    read_only: bool = False,
    parent_pid: int | None = None,
) -> None:
    """Serve the SQLite file at `db_path` until SIGINT or SIGTERM, then close everything.

    `clock` stamps the records (`serve --clock`; the system's by default), `id_sources` mint
    their ids (`serve --seed`). `load` (snapshot.parse) replaces the file's records before
    anything is served. `proxy` (`serve --proxy-to`) answers the /v1 requests in its place.
    `read_only` (`serve --read-only`) answers every request but a read with a 403. The proxy's
    recorder (`serve --record`), if any, writes its snapshot once the requests are done.
    `parent_pid` (CONVRISK_SERVE_PARENT_PID, set by convrisk.testing) stops it as a signal
    would once that process has ended, so a test run killed outright leaves no server behind.

    A second signal stops at once, without waiting for requests in flight; a stop that has not
    ended STOP_SECONDS after the first signal ends the process (exit 1) with a line in the log.
    """
    from convrisk.local_backend.backend import LocalBackend

    # Signal handlers only append here: one that took a lock (threading.Event.set) could run
    # while the main thread holds that same lock inside Event.wait, and wait for ever.
    signals: list[int] = []

    def on_signal(signum: int, frame: FrameType | None) -> None:
        signals.append(signum)
        if len(signals) > 1:
            server.force_exit()

    backend = LocalBackend(
        db_path,
        clock=time.time if clock is None else clock.now,
        stamps=clock,
        id_sources=id_sources,
    )
    previous: dict[signal.Signals, Any] = {}
    watchdog: threading.Timer | None = None
    try:
        try:
            server = make_server(
                backend,
                token=token,
                host=host,
                port=port,
                log=log,
                log_format=log_format,
                chaos=chaos,
                proxy=proxy,
                read_only=read_only,
            )
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise ConvriskError(f"Cannot listen on {host} port {port}: {reason}.") from None
        if load is not None:
            # Only once the port is bound (nothing is served yet): a start that fails leaves
            # the file's records as they were.
            try:
                backend.restore(load)
            except BaseException:
                server.server_close()
                raise
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                previous[signum] = signal.signal(signum, on_signal)
        with server.running():
            on_ready(server.url)
            # A sleep, not a lock: see `signals`. PEP 475 resumes it after each handler.
            while not signals:
                time.sleep(0.1)
                if orphaned(parent_pid):
                    log(
                        f"convrisk serve: the process that started it ({parent_pid}) has "
                        "ended; stopping."
                    )
                    break
            watchdog = _end_within(STOP_SECONDS, log)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        backend.close()
    if watchdog is not None and server.stopped:
        watchdog.cancel()
    if proxy is not None and proxy.recorder is not None:
        _save(proxy.recorder, server.log)


def orphaned(parent_pid: int | None) -> bool:
    """Whether the process serve was told to live with has ended (serve was handed on to
    another parent: init or a subreaper)."""
    return parent_pid is not None and os.getppid() != parent_pid


def _save(recorder: Recorder, log: AccessLog) -> None:
    """Write the recording, and say so in the log; one that cannot be written (the folder gone
    since the start, a full disk) is an error naming the file, and is kept in the temporary
    folder instead when it can be."""
    from convrisk.api_client.text import printable

    try:
        recorder.write()
    except OSError as exc:
        kept = recorder.rescue()
        where = f"kept in {printable(str(kept))} instead" if kept else "it could not be kept"
        raise ConvriskError(
            f"Cannot write the recording to {printable(str(recorder.path))}: "
            f"{exc.strerror or exc}; {where}."
        ) from None
    log.notice("notice", recorder.summary())


def _end_within(seconds: float, log: Log) -> threading.Timer:
    """End the process `seconds` from now unless cancelled (a stop that hangs): the stacks of
    its threads on stderr, for the bug report, then exit 1."""

    def end() -> None:
        log(f"convrisk serve: did not stop within {seconds:g} seconds of the signal; exiting.")
        faulthandler.dump_traceback(all_threads=True)
        os._exit(1)

    timer = threading.Timer(seconds, end)
    timer.daemon = True
    timer.start()
    return timer
