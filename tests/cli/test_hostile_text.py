"""The variants of tests/e2e/test_hostile_text.py in-process: every format against the hostile
service on loopback, and a hostile value on a pyte screen of each width."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from convrisk.local_backend.backend import LocalBackend
from tests.cli.conftest import Invoke
from tests.cli.screen_in_process import played, show, text_of
from tests.e2e.test_hostile_text import (
    HOSTILE,
    HOSTILE_RECORD,
    SHOWN,
    HostileService,
    assert_no_raw_control,
)
from tests.loopback import on_loopback, running, url_of


@pytest.fixture
def hostile(monkeypatch: pytest.MonkeyPatch, home: Path) -> Iterator[str]:
    """convrisk pointed at the hostile service on loopback, without retries: its URL."""
    HostileService.paths = []
    with running(on_loopback(HostileService)) as server:
        monkeypatch.setenv("CONVRISK_BASE_URL", url_of(server))
        monkeypatch.setenv("CONVRISK_TOKEN", "t" * 24)
        monkeypatch.setenv("CONVRISK_MAX_RETRIES", "0")
        yield url_of(server)


@pytest.mark.parametrize("fmt", ["table", "csv", "json", "jsonl", "id"])
def test_every_format_survives_a_lone_surrogate_and_line_separators(
    hostile: str, invoke: Invoke, fmt: str
) -> None:
    result = invoke("conv", "list", "--limit", "1", "-o", fmt)
    assert result.code == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert_no_raw_control(result.stdout)
    for char in ("\u2028", "\u2029", "\x85"):
        assert char not in result.stdout
    if fmt in ("json", "jsonl"):
        [got] = json.loads(result.stdout) if fmt == "json" else [json.loads(result.stdout)]
        assert got == HOSTILE_RECORD  # the same values, escaped as JSON allows


@pytest.mark.parametrize("columns", [80, 120])
def test_a_hostile_value_cannot_retitle_or_clear_a_real_terminal(
    backend: LocalBackend, monkeypatch: pytest.MonkeyPatch, columns: int
) -> None:
    """The e2e test's shell script, command by command, on one screen."""
    conv_id = backend.conversations.create({"contact_id": HOSTILE})["id"]
    listed = show(monkeypatch, "conv", "list", columns=columns)
    got = show(monkeypatch, "conv", "get", conv_id, columns=columns)
    refused = show(monkeypatch, "conv", "get", "\x1b]0;pwned\x07", columns=columns)
    assert (listed.code, got.code, refused.code) == (0, 0, 2)
    screen = played(b"MARKER\n" + listed.output + got.output + refused.output, columns)
    lines = text_of(screen)
    assert screen.title == ""
    assert lines[0] == "MARKER"
    row = next(line for line in lines if line.startswith(conv_id))
    assert "contact \\x1b]0;" in row  # escaped, and cut to fit the line
    assert f"contact_id         {SHOWN}" in lines  # `get` shows the whole value, escaped
    assert any("Error: '\\x1b]0;pwned\\x07' is not a conversation id" in line for line in lines)
