"""What the benchmark sections share: a workspace, filled databases, and timed child processes."""

from __future__ import annotations

import os
import pty
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "bench" / "out"
CONVRISK = str(Path(sys.executable).parent / "convrisk")
GNU_TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else ""


def have(program: str) -> bool:
    """Whether a program is on PATH."""
    return shutil.which(program) is not None


@dataclass
class Run:
    """One finished child process: wall seconds, peak resident memory (KiB), exit code."""

    seconds: float
    max_rss_kib: int
    returncode: int
    stdout: bytes


def run(
    argv: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    stdout: int | None = subprocess.DEVNULL,
    tty: bool = False,
) -> Run:
    """Run a command to its end, measuring its wall time and its own peak memory.

    Peak memory comes from GNU time where it is installed: a child forked straight from this
    (large) process would report this process's peak instead of its own, since Linux carries
    `ru_maxrss` across exec. Without GNU time the figure is 0 (unknown).
    """
    master = slave = -1
    out_target: int | None = stdout
    if tty:
        master, slave = pty.openpty()
        out_target = slave
    with tempfile.NamedTemporaryFile(prefix="bench-rss-", mode="r") as rss_file:
        prefix = [GNU_TIME, "-f", "%M", "-o", rss_file.name] if GNU_TIME else []
        started = time.perf_counter()
        proc = subprocess.Popen(
            [*prefix, *argv],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out_target,
            stderr=subprocess.DEVNULL if tty else subprocess.PIPE,
        )
        captured = b""
        if tty:
            os.close(slave)
            captured = _drain(master)
        elif stdout == subprocess.PIPE and proc.stdout is not None:
            captured = proc.stdout.read()
        err = proc.stderr.read() if proc.stderr is not None else b""
        returncode = proc.wait()
        seconds = time.perf_counter() - started
        rss_text = rss_file.read().strip().splitlines()
    if returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {returncode}: {err.decode()[-500:]}")
    max_rss = int(rss_text[-1]) if rss_text and rss_text[-1].isdigit() else 0
    return Run(seconds, max_rss, returncode, captured)


def _drain(master: int) -> bytes:
    chunks: list[bytes] = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO once the child has closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    return b"".join(chunks)


def median_seconds(runs: Sequence[Run]) -> float:
    """The median wall time of several runs."""
    return statistics.median(r.seconds for r in runs)


class Workspace:
    """A temporary HOME with XDG folders, so the CLI runs isolated, plus the sizes to use."""

    def __init__(self, *, tiny: bool) -> None:
        self.tiny = tiny
        self._tmp = tempfile.TemporaryDirectory(prefix="convrisk-bench-")
        self.dir = Path(self._tmp.name)
        self.cache = self.dir / "cache" if tiny else CACHE

    def __enter__(self) -> Workspace:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._tmp.cleanup()

    def env(self, **extra: str) -> dict[str, str]:
        """An environment for the CLI with HOME and XDG folders inside the workspace."""
        env = {
            k: v
            for k, v in os.environ.items()
            # PYTHONDONTWRITEBYTECODE would make every start compile our modules from source.
            if not k.startswith("CONVRISK_") and k not in ("NO_COLOR", "PYTHONDONTWRITEBYTECODE")
        }
        env.update(
            HOME=str(self.dir / "home"),
            XDG_CONFIG_HOME=str(self.dir / "config"),
            XDG_DATA_HOME=str(self.dir / "data"),
            XDG_CACHE_HOME=str(self.dir / "cache-home"),
            COLUMNS="120",
            TERM="xterm-256color",
        )
        env.update(extra)
        return env

    def db(self, n: int) -> Path:
        """A filled conversations database of `n` rows (cached between runs)."""
        from bench.page_cost import fill

        return fill(n, self.cache)
