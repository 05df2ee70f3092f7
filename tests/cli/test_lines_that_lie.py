"""The variants of tests/e2e/test_lines_that_lie.py in-process: `api` hides a token the service
echoes in every form, piped and on a terminal (a pyte screen)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.conftest import Invoke
from tests.cli.screen_in_process import on_screen
from tests.e2e.odd_service import LyingErrors, token_echoes
from tests.e2e.test_lines_that_lie import TOKEN, assert_nothing_forged
from tests.loopback import on_loopback, running, url_of


@pytest.fixture
def liar(monkeypatch: pytest.MonkeyPatch, home: Path) -> Iterator[str]:
    """convrisk pointed at a service whose every answer is an error with forged lines and the
    token, without retries: its URL."""
    with running(on_loopback(LyingErrors)) as server:
        monkeypatch.setenv("CONVRISK_BASE_URL", url_of(server))
        monkeypatch.setenv("CONVRISK_TOKEN", TOKEN)
        monkeypatch.setenv("CONVRISK_MAX_RETRIES", "0")
        yield url_of(server)


@pytest.mark.parametrize("piped", [True, False], ids=["piped", "terminal"])
def test_api_hides_a_token_echoed_json_escaped_or_percent_encoded(
    liar: str, invoke: Invoke, monkeypatch: pytest.MonkeyPatch, piped: bool
) -> None:
    if piped:
        result = invoke("api", "/v1/conversations")
        assert result.code == 1
        body = json.loads(result.stdout)
        assert body["error"]["message"].count("***") == len(token_echoes(TOKEN))
        lines = (result.stdout + result.stderr).splitlines()
    else:
        lines = on_screen(
            monkeypatch, "api", "/v1/conversations", columns=1000, lines=100, expect=1
        )
    assert_nothing_forged(lines)
    assert TOKEN not in "".join(lines).replace("\\u", "").replace("%", "")
