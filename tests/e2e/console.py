"""The installed `convrisk` console script as the e2e tests start it: in a subprocess, with no
stdin unless given, on pipes or on a pseudo-terminal, every wait bounded by SAFETY_TIMEOUT."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from pathlib import Path

CONVRISK = Path(sys.executable).parent / "convrisk"
SAFETY_TIMEOUT = 120  # seconds; only so that a hung child cannot hang the suite


def run(
    env: dict[str, str], *args: str, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run convrisk to the end; stdin is /dev/null unless input is given.

    In a session of its own: no controlling terminal to ask on, as in CI (and never the
    terminal that runs pytest).
    """
    return subprocess.run(
        [str(CONVRISK), *args],
        env=env,
        input=input,
        stdin=None if input is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=SAFETY_TIMEOUT,
        start_new_session=True,
    )


def db_of(env: dict[str, str]) -> Path:
    """The default database of convrisk run with `env`."""
    return Path(env["XDG_DATA_HOME"]) / "convrisk" / "convrisk.db"


def piped(env: dict[str, str], *args: str) -> subprocess.Popen[bytes]:
    """convrisk started with stdout and stderr on pipes (bytes) and stdin /dev/null."""
    return subprocess.Popen(
        [str(CONVRISK), *args],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def read_until(fd: int, marker: bytes) -> bytes:
    """Read a pty until `marker` shows up (or the child closes it)."""
    seen = b""
    while marker not in seen:
        ready, _, _ = select.select([fd], [], [], SAFETY_TIMEOUT)
        assert ready, f"no {marker!r} in {seen!r}"
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    return seen


def on_a_terminal(env: dict[str, str], *args: str) -> tuple[subprocess.Popen[bytes], int]:
    """convrisk with stdin, stdout and stderr on a real pseudo-terminal."""
    main_fd, child_fd = pty.openpty()
    child = subprocess.Popen(
        [str(CONVRISK), *args],
        env={**env, "COLUMNS": "120"},
        stdin=child_fd,
        stdout=child_fd,
        stderr=child_fd,
    )
    os.close(child_fd)
    return child, main_fd


def assert_loads_none_of(env: dict[str, str], call: str, absent: set[str]) -> None:
    """Run the Python `call` (it sets `code`, the exit code) in a child with `env`: it must exit
    0 having imported none of `absent` (modules, or packages with any module of theirs)."""
    probe = (
        "import sys\n"
        f"{call}"
        "loaded = {*sys.modules, *(m.split('.')[0] for m in sys.modules)}\n"
        f"print(sorted(loaded & set({sorted(absent)!r})), file=sys.stderr)\n"
        "sys.exit(code)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=SAFETY_TIMEOUT,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip().splitlines()[-1] == "[]"
