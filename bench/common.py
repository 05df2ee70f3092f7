"""What the benchmark sections share: a workspace, filled databases, timed child processes, and
a `convrisk serve` on loopback."""

from __future__ import annotations

import contextlib
import os
import platform
import pty
import queue
import shutil
import signal
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "bench" / "out"
GNU_TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else ""
# The running venv's own convrisk (editable in a checkout), for throughput figures of seconds
# that compare convrisk with itself (jq, import): its ~15 ms import finder is noise there. Cold
# starts use `Workspace.installed()`, a regular install, since there that constant would not be.
CONVRISK = str(Path(sys.executable).parent / "convrisk")
SERVE_TOKEN = "bench-token-0123456789"
SERVE_READY_SECONDS = 30.0
_LOOPBACK = ("127.0.0.1", "::1", "localhost")


def machine() -> str:
    """Cores, CPU model, Python and kernel."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{os.cpu_count()} cores ({cpu}), Python {platform.python_version()}, "
        f"{platform.system()} {platform.release()}"
    )


def have(program: str) -> bool:
    """Whether a program is on PATH."""
    return shutil.which(program) is not None


@dataclass
class Run:
    """One finished child process: wall and CPU seconds, exit code, captured stdout."""

    seconds: float
    cpu_seconds: float
    returncode: int
    stdout: bytes


def run(
    argv: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    stdout: int | None = subprocess.DEVNULL,
    tty: bool = False,
    check: bool = True,
) -> Run:
    """Start a command directly (nothing wrapped around it) and time it to its end.

    Wall time is from just before the start to the reap; CPU time (user + system) is the
    child's own, from wait4, which the machine's other load changes less than wall time. Peak
    memory is not taken here (see `peak_rss_kib`). stderr is discarded unless the command
    fails, when it is run again to say why.
    """
    master = slave = -1
    out_target: int | None = stdout
    if tty:
        master, slave = pty.openpty()
        out_target = slave
    captured = b""
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv, env=env, stdin=subprocess.DEVNULL, stdout=out_target, stderr=subprocess.DEVNULL
    )
    if tty:
        os.close(slave)
        captured = _drain(master)
    elif stdout == subprocess.PIPE and proc.stdout is not None:
        captured = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    proc.returncode = returncode = os.waitstatus_to_exitcode(status)
    if proc.stdout is not None:
        proc.stdout.close()
    if check and returncode != 0:
        again = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True)
        raise RuntimeError(f"{' '.join(argv)} exited {returncode}: {again.stderr.decode()[-500:]}")
    return Run(seconds, usage.ru_utime + usage.ru_stime, returncode, captured)


def peak_rss_kib(
    argv: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    stdout: int | None = subprocess.DEVNULL,
    runs: int = 1,
) -> int:
    """The largest peak resident memory (KiB) of the command over `runs` runs; 0 if unknown.

    A separate pass from the timed runs, under GNU time (`%M`): Linux carries `ru_maxrss`
    across exec, so a child started straight from this (large) process would report this
    process's peak, not its own. Without GNU time the figure is 0 (unknown).
    """
    if not GNU_TIME:
        return 0
    peak = 0
    for _ in range(runs):
        with tempfile.NamedTemporaryFile(prefix="bench-rss-", mode="r") as rss_file:
            subprocess.run(
                [GNU_TIME, "-f", "%M", "-o", rss_file.name, *argv],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=subprocess.DEVNULL,
                check=True,
            )
            text = rss_file.read().strip().splitlines()
        if text and text[-1].isdigit():
            peak = max(peak, int(text[-1]))
    return peak


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


def median_cpu(runs: Sequence[Run]) -> float:
    """The median CPU time (user + system) of several runs."""
    return statistics.median(r.cpu_seconds for r in runs)


@dataclass
class Target:
    """One figure with a target: what, the target, the measured value, and whether it is met."""

    figure: str
    target: str
    measured: str
    met: bool


class Workspace:
    """A temporary HOME with XDG folders, so the CLI runs isolated, plus the sizes to use.

    Sections record each figure that has a target with `target()`; the report lists them.
    """

    def __init__(self, *, tiny: bool, baseline: str | None = None) -> None:
        self.tiny = tiny
        # A git revision whose build the sections that compare builds measure in the same rounds.
        self.baseline_ref = baseline
        self.targets: list[Target] = []
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

    def target(self, figure: str, target: str, measured: str, met: bool) -> None:
        """Record a figure that has a target, for the report's summary."""
        self.targets.append(Target(figure, target, measured, met))

    def installed(self) -> Path:
        """The bin folder of a regular (non-editable) install of this checkout, made once.

        An editable install runs setuptools' import finder at every start of the interpreter
        (about 15 ms, the bare `python -I -c pass` too), a constant on both sides that shrinks
        every ratio, and users do not have it. So the figures are taken from a fresh venv with
        this checkout built and installed as users install it. Its dependencies are the ones of
        the running interpreter (a path line in a .pth file: the same versions, no download).
        """
        venv = self.dir / "venv"
        if not (venv / "bin" / "convrisk").exists():
            src = self.dir / "src"
            for name in ("cli", "api_client", "local_backend", "convrisk"):
                shutil.copytree(
                    ROOT / name,
                    src / name,
                    symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__"),
                )
            for name in ("pyproject.toml", "README.md"):
                shutil.copy(ROOT / name, src / name)
            _install(src, venv)
        return venv / "bin"

    def baseline(self) -> Path | None:
        """The bin folder of a regular install of the `--baseline` revision (made once, as
        `installed()` is, from `git archive` of it), or None without one."""
        if self.baseline_ref is None:
            return None
        venv = self.dir / "baseline-venv"
        if not (venv / "bin" / "convrisk").exists():
            src = self.dir / "baseline-src"
            src.mkdir()
            archive = subprocess.run(
                ["git", "-C", str(ROOT), "archive", self.baseline_ref],
                capture_output=True,
                check=True,
            ).stdout
            subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
            _install(src, venv)
        return venv / "bin"

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


def _install(src: Path, venv: Path) -> None:
    """A venv at `venv` with the project tree `src` installed as users install it, its
    dependencies the running interpreter's (a path line in a .pth file: no download)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(purelib, "_convrisk_bench_deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--no-deps",
            str(src),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )


@contextlib.contextmanager
def serving(
    command: Sequence[str],
    db: Path,
    *,
    token: str = SERVE_TOKEN,
    env: Mapping[str, str] | None = None,
    clean_stop: bool = False,
) -> Iterator[str]:
    """`COMMAND serve --port 0` (loopback, a free port) over `db` in a child process; yields its
    base URL once it listens, and stops it with SIGTERM at the end.

    Its stderr is read away all along: an access log nobody reads fills the pipe and blocks the
    server. `env` None: this environment less any CONVRISK_ setting, HOME and XDG folders beside
    `db`. SystemExit when it does not listen on loopback within SERVE_READY_SECONDS, or, with
    `clean_stop`, when it exits with other than 0.
    """
    if env is None:
        home = db.parent
        env = {k: v for k, v in os.environ.items() if not k.startswith("CONVRISK_")}
        env |= {
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / "config"),
            "XDG_DATA_HOME": str(home / "data"),
        }
    proc = subprocess.Popen(
        [*command, "serve", "--port", "0", "--token", token, "--db", str(db)],
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    banner: list[str] = []
    urls: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            if len(banner) < 20:
                banner.append(line)
            if "listening on " in line:
                urls.put(line.split("listening on ", 1)[1].strip())
        urls.put("")  # stderr closed: the server has stopped

    reader = threading.Thread(target=read, name="serve-log", daemon=True)
    reader.start()
    try:
        try:
            url = urls.get(timeout=SERVE_READY_SECONDS)
        except queue.Empty:
            url = ""
        if urllib.parse.urlsplit(url).hostname not in _LOOPBACK:
            try:
                why = f"it exited with {proc.wait(timeout=1)}"
            except subprocess.TimeoutExpired:
                why = f"it said {url!r}" if url else f"not in {SERVE_READY_SECONDS:g} s"
            raise SystemExit(
                f"convrisk serve did not listen on loopback ({why}):\n" + "".join(banner)
            )
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait(timeout=30)
        reader.join(timeout=5)
    if clean_stop and code != 0:
        raise SystemExit(f"convrisk serve exited with {code} on SIGTERM")
