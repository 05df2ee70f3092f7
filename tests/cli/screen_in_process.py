"""convrisk's main() run in-process as if on a terminal of some width, its output played on a pyte
screen: the in-process twin of tests/e2e/screen.py's `on_screen`, for the variants (widths,
formats) of a behaviour whose one e2e run uses a real pseudo-terminal.

stdout and stderr write, in the order of the writes, into one buffer (one terminal), and the
streams named in `terminals` are said to be terminals (the check convrisk makes,
`iostreams.is_terminal`); COLUMNS gives the width, TERM is xterm-256color, as on the pty. A line
break reaches the screen as the terminal's line discipline passes it on (ONLCR: CR LF)."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterable
from dataclasses import dataclass

import pyte
import pytest

from convrisk.cli.app import main
from convrisk.cli.output import iostreams

SCREEN_LINES = 1000  # tall enough that nothing scrolls off


@dataclass
class Shown:
    """What one run put on the screen: its exit code, the bytes written, and the screen."""

    code: int
    output: bytes
    screen: pyte.Screen

    def text(self) -> list[str]:
        """The screen's lines, trailing spaces and trailing empty lines removed."""
        return text_of(self.screen)


def show(
    monkeypatch: pytest.MonkeyPatch,
    *args: str,
    columns: int,
    lines: int = SCREEN_LINES,
    input: str = "",
    terminals: Iterable[str] = ("stdin", "stdout", "stderr"),
    **env: str,
) -> Shown:
    """Run `convrisk ARGS` on a terminal `columns` wide and `lines` high (and `env` set for the
    run)."""
    written = io.BytesIO()
    out = io.TextIOWrapper(written, encoding="utf-8", write_through=True)
    err = io.TextIOWrapper(written, encoding="utf-8", errors="backslashreplace", write_through=True)
    stdin = io.TextIOWrapper(io.BytesIO(input.encode("utf-8")), encoding="utf-8")
    names = frozenset(terminals)
    with monkeypatch.context() as patch:
        patch.setenv("COLUMNS", str(columns))
        patch.setenv("TERM", "xterm-256color")
        for name, value in env.items():
            patch.setenv(name, value)
        patch.setattr(sys, "stdin", stdin)
        patch.setattr(sys, "stdout", out)
        patch.setattr(sys, "stderr", err)

        def is_terminal(stream: object) -> bool:
            return any(stream is getattr(sys, name) for name in names)

        patch.setattr(iostreams, "is_terminal", is_terminal)
        code = main(list(args))
        out.flush()
        err.flush()
    output = written.getvalue()
    return Shown(code, output, played(output, columns, lines))


def played(output: bytes, columns: int, lines: int = SCREEN_LINES) -> pyte.Screen:
    """A screen `columns` wide that was shown `output` (line breaks as a terminal passes them)."""
    screen = pyte.Screen(columns, lines)
    pyte.ByteStream(screen).feed(output.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"))
    return screen


def text_of(screen: pyte.Screen) -> list[str]:
    """A screen's lines, trailing spaces and trailing empty lines removed."""
    shown = [line.rstrip() for line in screen.display]
    while shown and not shown[-1]:
        shown.pop()
    return shown


def on_screen(
    monkeypatch: pytest.MonkeyPatch,
    *args: str,
    columns: int,
    lines: int = SCREEN_LINES,
    expect: int = 0,
    **env: str,
) -> list[str]:
    """The lines `convrisk ARGS` shows on a terminal `columns` wide; it must exit `expect`."""
    shown = show(monkeypatch, *args, columns=columns, lines=lines, **env)
    assert shown.code == expect, f"exit {shown.code}\n{shown.output.decode(errors='replace')}"
    return shown.text()
