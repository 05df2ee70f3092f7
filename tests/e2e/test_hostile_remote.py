"""The installed `convrisk` against hostile servers on loopback: it never hangs or floods."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.hostile_server import MIB, HostileServer

from .both_backends import isolated_env
from .console import CONVRISK

SAFETY_TIMEOUT = 120


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A private HOME for the run."""
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def trickle() -> Iterator[HostileServer]:
    """A server sending its status line and headers one byte per 0.3 s, forever."""
    with HostileServer("trickle", pause=0.3, max_seconds=SAFETY_TIMEOUT) as server:
        yield server


@pytest.fixture(scope="module")
def bomb_server() -> Iterator[HostileServer]:
    """A gzip bomb: about 300 KiB on the wire, 300 MiB of JSON once decoded (over 256 MiB).
    One for the module: compressing the 300 MiB takes about a second."""
    with HostileServer("gzip-bomb", size=300 * MIB, max_seconds=SAFETY_TIMEOUT) as server:
        yield server


@pytest.fixture
def bomb(bomb_server: HostileServer) -> HostileServer:
    """The module's gzip bomb, its count of requests started again for this test."""
    bomb_server.requests = 0
    return bomb_server


def _list(home: Path, url: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CONVRISK, "--base-url", url, "conv", "list"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=SAFETY_TIMEOUT,
        env=isolated_env(home, CONVRISK_TOKEN="tok", **env),
    )


def test_trickled_headers_end_in_a_timeout_exit_5(home: Path, trickle: HostileServer) -> None:
    result = _list(home, trickle.url, CONVRISK_TIMEOUT="1", CONVRISK_MAX_RETRIES="0")
    assert result.returncode == 5, result.stderr
    assert "did not answer in time" in result.stderr
    assert "timeout 1 s" in result.stderr
    assert result.stdout == ""
    assert trickle.requests == 1


def test_a_gzip_bomb_fails_once_naming_the_limit_exit_1(home: Path, bomb: HostileServer) -> None:
    result = _list(home, bomb.url)
    assert result.returncode == 1, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert "256 MiB limit" in lines[0]
    assert "max_response_mb" in lines[0]
    assert result.stdout == ""
    # Not retried, though retries are on by default.
    assert bomb.requests == 1


def test_max_response_mb_from_the_environment_sets_the_limit(
    home: Path, bomb: HostileServer
) -> None:
    result = _list(home, bomb.url, CONVRISK_MAX_RESPONSE_MB="1")
    assert result.returncode == 1, result.stderr
    assert "1 MiB limit" in result.stderr
    assert bomb.requests == 1


def test_a_raised_max_response_mb_lets_a_large_answer_through(
    home: Path, bomb: HostileServer
) -> None:
    # 300 MiB of decoded JSON (an empty page with padding) fits under a 512 MiB limit.
    result = _list(home, bomb.url, CONVRISK_MAX_RESPONSE_MB="512")
    assert result.returncode == 0, result.stderr
    assert "limit" not in result.stderr
