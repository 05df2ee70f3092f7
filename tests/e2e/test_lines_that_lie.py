"""Issue 18 item 5: a line break from data or from a service's message never starts a line of
its own on a terminal (status, errors, serve's notices, the --debug traceback), and a token the
service echoes back is hidden in every form it comes back in. The installed `convrisk` on a real
pseudo-terminal, rendered by pyte, against a hostile service on loopback: each behaviour once
(`api` piped too: in-process, tests/cli/test_lines_that_lie.py)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.loopback import on_loopback, running, url_of

from .both_backends import isolated_env
from .odd_service import FORGED, LyingErrors, token_echoes
from .screen import Terminal, on_screen

TOKEN = "Secret-Token_0123456789/abc"


@pytest.fixture(scope="module")
def liar() -> Iterator[str]:
    """The URL of a service whose every answer is an error with forged lines and the token."""
    with running(on_loopback(LyingErrors)) as server:
        yield url_of(server)


def remote_env(tmp_path: Path, url: str) -> dict[str, str]:
    return isolated_env(
        tmp_path, CONVRISK_BASE_URL=url, CONVRISK_TOKEN=TOKEN, CONVRISK_MAX_RETRIES="0"
    )


def assert_nothing_forged(lines: list[str]) -> None:
    """No screen line starts with the forged text, and the token shows in none of its forms."""
    for line in lines:
        assert not line.startswith(FORGED), lines
        assert not line.startswith("service  ok"), lines
        for echo in token_echoes(TOKEN):
            assert echo not in line, lines


def test_status_shows_a_service_message_with_line_breaks_on_one_line(
    tmp_path: Path, liar: str
) -> None:
    lines = on_screen(remote_env(tmp_path, liar), "status", columns=1000, expect=1)
    assert [line.split()[0] for line in lines] == [
        "profile",
        "backend",
        "token",
        "writes",
        "service",
    ]
    assert lines[4].startswith("service  failed, exit code 1: refused\\nservice  ok")
    for shown in ("\\r\\n", "\\u2028", "\\u2029", "\\x85", "\\x0b", "\\x0c"):
        assert shown in lines[4]
    assert_nothing_forged(lines)
    assert lines[4].count("***") == len(token_echoes(TOKEN))


def test_an_error_line_holds_the_service_message_on_one_line(tmp_path: Path, liar: str) -> None:
    lines = on_screen(remote_env(tmp_path, liar), "conv", "get", "conv_1", columns=1000, expect=1)
    assert len(lines) == 1 and lines[0].startswith("Error: conv_1: refused\\nservice  ok"), lines
    assert_nothing_forged(lines)


def test_the_debug_traceback_keeps_its_frames_and_the_message_on_one_line(
    tmp_path: Path, liar: str
) -> None:
    lines = on_screen(
        remote_env(tmp_path, liar), "--debug", "conv", "get", "conv_1", columns=1000, expect=1
    )
    assert "Traceback (most recent call last):" in lines
    assert any(line.startswith('  File "') for line in lines)
    last = next(line for line in lines if line.startswith("convrisk.api_client.errors."))
    assert "refused\\nservice  ok" in last
    assert_nothing_forged(lines)


def test_api_hides_a_token_echoed_json_escaped_or_percent_encoded(
    tmp_path: Path, liar: str
) -> None:
    env = remote_env(tmp_path, liar)
    lines = on_screen(env, "api", "/v1/conversations", columns=1000, expect=1)  # piped: in-process
    assert_nothing_forged(lines)
    assert TOKEN not in "".join(lines).replace("\\u", "").replace("%", "")


def test_serve_notices_show_a_line_break_in_the_database_path_escaped(tmp_path: Path) -> None:
    folder = tmp_path / "db\nconvrisk serve: listening on the forged port"
    folder.mkdir()
    db = folder / "x.db"
    env = isolated_env(tmp_path, CONVRISK_SERVE_TOKEN="serve-token-1234")
    term = Terminal(env, ["serve", "--port", "0", "--db", str(db)], columns=300)
    term.read_until(b"CONVRISK_TOKEN")
    term.child.send_signal(signal.SIGINT)
    term.finish()
    lines = term.text()
    listening = [line for line in lines if line.startswith("convrisk serve: listening on")]
    assert len(listening) == 1, lines
    database = [line for line in lines if line.startswith("convrisk serve: database ")]
    assert len(database) == 1 and "db\\nconvrisk serve: listening" in database[0], lines
