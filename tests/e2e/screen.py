"""The installed `convrisk` on a real pseudo-terminal, its bytes played on a pyte screen.

The child gets a session of its own whose controlling terminal is the pty (so `/dev/tty` is the
pty, as in a terminal emulator), a window size set with TIOCSWINSZ, and stdin, stdout and stderr
on the pty unless a test gives other streams. Every read is bounded by SAFETY_TIMEOUT.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import termios
import time
from collections.abc import Sequence
from typing import IO, Any

import pyte

from .console import CONVRISK, SAFETY_TIMEOUT

# Tall enough that no test output scrolls off: the whole output stays on the screen.
SCREEN_LINES = 1000


class Terminal:
    """One child process on a pseudo-terminal of given width; what it wrote, and a screen of it."""

    def __init__(
        self,
        env: dict[str, str],
        args: Sequence[str],
        *,
        columns: int,
        lines: int = SCREEN_LINES,
        stdin: int | IO[Any] | None = None,
        stdout: int | IO[Any] | None = None,
        script: bool = False,
    ) -> None:
        self.columns, self.lines = columns, lines
        self.main_fd, child_fd = pty.openpty()
        fcntl.ioctl(child_fd, termios.TIOCSWINSZ, struct.pack("HHHH", lines, columns, 0, 0))
        command = ["sh", "-c", *args] if script else [str(CONVRISK), *args]

        def controlling_terminal() -> None:
            # After setsid (start_new_session), the pty becomes this session's terminal.
            fcntl.ioctl(child_fd, termios.TIOCSCTTY, 0)

        child_env = {k: v for k, v in env.items() if k != "COLUMNS"}
        child_env.setdefault("TERM", "xterm-256color")
        self.child = subprocess.Popen(
            command,
            env={**child_env, "CONVRISK": str(CONVRISK)},
            stdin=child_fd if stdin is None else stdin,
            stdout=child_fd if stdout is None else stdout,
            stderr=child_fd,
            start_new_session=True,
            preexec_fn=controlling_terminal,
        )
        os.close(child_fd)
        self.output = b""
        self._closed = False

    def read_until(self, marker: bytes) -> bytes:
        """Read until `marker` has been written (or the terminal closed); all output so far."""
        deadline = time.monotonic() + SAFETY_TIMEOUT
        while marker not in self.output and not self._closed:
            left = deadline - time.monotonic()
            assert left > 0, f"no {marker!r} in {self.output!r}"
            ready, _, _ = select.select([self.main_fd], [], [], left)
            if not ready:
                continue
            try:
                chunk = os.read(self.main_fd, 65536)
            except OSError:  # every writer has closed the terminal
                chunk = b""
            if not chunk:
                self._closed = True
            self.output += chunk
        return self.output

    def send(self, data: bytes) -> None:
        """Type these bytes (b"\\x03" is Ctrl-C: the terminal sends SIGINT)."""
        os.write(self.main_fd, data)

    def finish(self) -> int:
        """Read to the end and return the exit code."""
        self.read_until(b"\x00never")
        os.close(self.main_fd)
        try:
            return self.child.wait(timeout=SAFETY_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(self.child.pid, signal.SIGKILL)
            raise

    def screen(self) -> pyte.Screen:
        """A terminal of the same width that was shown everything written so far."""
        screen = pyte.Screen(self.columns, self.lines)
        pyte.ByteStream(screen).feed(self.output)
        return screen

    def text(self) -> list[str]:
        """The screen's lines, trailing spaces and trailing empty lines removed."""
        shown = [line.rstrip() for line in self.screen().display]
        while shown and not shown[-1]:
            shown.pop()
        return shown


def on_screen(
    env: dict[str, str], *args: str, columns: int, expect: int = 0, script: bool = False
) -> list[str]:
    """Run convrisk (or `sh -c` a script) on a terminal `columns` wide: the lines shown."""
    term = Terminal(env, args, columns=columns, script=script)
    code = term.finish()
    assert code == expect, b"\n".join([f"exit {code}".encode(), term.output]).decode()
    return term.text()
