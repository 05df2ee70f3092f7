"""Terminal facts: the streams, which of them are terminals, the screen's width, colour switches.

One `IOStreams` is handed to the printer, as gh's iostreams and rich's Console take them: in a
run its streams are the process's own (looked up when used), and a test gives its own streams
and says which of them are terminals, so terminal behaviour is tested without a pty. Nothing
here prints; rich is not imported here.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Mapping
from typing import Protocol, TextIO

# The width assumed when neither COLUMNS nor the terminal says (a new pty reports 0).
DEFAULT_WIDTH = 80


def is_terminal(stream: object) -> bool:
    """Whether a stream is an interactive terminal."""
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except (ValueError, OSError):
        return False


def same_file(a: TextIO, b: TextIO) -> bool:
    """Whether two streams write to the same file (the same terminal); True when unknown."""
    try:
        return os.path.samestat(os.fstat(a.fileno()), os.fstat(b.fileno()))
    except (AttributeError, ValueError, OSError, io.UnsupportedOperation):
        return True


class Tty:
    """The controlling terminal, read a line at a time and written unbuffered."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def write(self, text: str) -> None:
        """Write text to the terminal."""
        os.write(self.fd, text.encode("utf-8", "replace"))

    def flush(self) -> None:
        """Nothing to flush: every write goes straight to the terminal."""

    def readline(self) -> str:
        """One line as typed (the terminal hands it over on Enter); empty at end of input."""
        return os.read(self.fd, 4096).decode("utf-8", "replace")

    def close(self) -> None:
        """Close the terminal."""
        os.close(self.fd)


def controlling_terminal() -> Tty | None:
    """The controlling terminal (/dev/tty), or None when the process has none (CI, cron)."""
    try:
        return Tty(os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY))
    except OSError:
        return None


class Reader(Protocol):
    """What a question is read from."""

    def readline(self) -> str: ...


class Writer(Protocol):
    """What a question is written to."""

    def write(self, text: str, /) -> object: ...

    def flush(self) -> None: ...


def ask(prompt: str, reader: Reader, writer: Writer, *, eof_is_answer: bool = False) -> str:
    """Write `prompt`, read the answer line; Ctrl-C or end of input ends the line and raises
    KeyboardInterrupt (so that `Interrupted.` gets a line of its own). With `eof_is_answer`,
    end of input is the answer "" instead (a line typed, even empty, ends with a line break)."""
    interrupted = False
    try:
        writer.write(prompt)
        writer.flush()
        line = reader.readline()
    except KeyboardInterrupt:
        line, interrupted = "", True
    if not line:
        writer.write("\n")
        writer.flush()
        if interrupted or not eof_is_answer:
            raise KeyboardInterrupt
    return line


class IOStreams:
    """stdin, stdout and stderr with what is known of them: terminal or not, width, colour.

    A stream left as None is the process's own (`sys.stdout`...), looked up each time it is
    used. `terminals` names the streams that are terminals ("stdin", "stdout", "stderr"); when
    None each stream is asked (isatty). `width` fixes the screen width; when None it is COLUMNS,
    else the terminal's, else 80. Colour follows rich's switches, read from `env`: NO_COLOR
    (not empty) turns it off; FORCE_COLOR (not empty) turns it on where a stream is not a
    terminal; TERM=dumb (or unknown) turns it off.
    """

    def __init__(
        self,
        env: Mapping[str, str],
        *,
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
        terminals: frozenset[str] | set[str] | None = None,
        width: int | None = None,
    ) -> None:
        self.env = env
        self._streams = {"stdin": stdin, "stdout": stdout, "stderr": stderr}
        self._terminals = None if terminals is None else frozenset(terminals)
        self._width = width

    @property
    def stdin(self) -> TextIO:
        """The input stream."""
        stream = self._streams["stdin"]
        return sys.stdin if stream is None else stream

    @property
    def stdout(self) -> TextIO:
        """The output stream (None when the process has no stdout: closed with `>&-`)."""
        stream = self._streams["stdout"]
        return sys.stdout if stream is None else stream

    @property
    def stderr(self) -> TextIO:
        """The stream of messages."""
        stream = self._streams["stderr"]
        return sys.stderr if stream is None else stream

    def is_terminal(self, name: str) -> bool:
        """Whether the stream `name` ("stdin", "stdout" or "stderr") is a terminal."""
        if self._terminals is not None:
            return name in self._terminals
        return is_terminal(getattr(self, name))

    def same_terminal(self) -> bool:
        """Whether stdout and stderr are one and the same terminal."""
        if not (self.is_terminal("stdout") and self.is_terminal("stderr")):
            return False
        if self._terminals is not None:
            return True
        return same_file(self.stdout, self.stderr)

    def width(self, name: str = "stdout") -> int:
        """The screen's width in cells: fixed, else COLUMNS, else the terminal's (stderr's when
        `name` is piped: `-o table | less` is read on that terminal), else 80."""
        if self._width is not None:
            return self._width
        columns = self.env.get("COLUMNS", "")
        if columns.isdigit() and int(columns) > 0:
            return int(columns)
        for stream in dict.fromkeys((name, "stderr")):
            try:
                width = os.get_terminal_size(getattr(self, stream).fileno()).columns
            except (AttributeError, ValueError, OSError):
                width = 0
            if width > 0:
                return width
        return DEFAULT_WIDTH

    def colour(self, name: str) -> bool:
        """Whether what is written to the stream `name` may be coloured (rich's switches)."""
        if self.env.get("NO_COLOR", ""):
            return False
        if self.env.get("TERM", "").lower() in ("dumb", "unknown"):
            return False
        return self.is_terminal(name) or bool(self.env.get("FORCE_COLOR", ""))

    def controlling_terminal(self) -> Tty | None:
        """The controlling terminal to ask a question on, or None (see controlling_terminal)."""
        return controlling_terminal()
