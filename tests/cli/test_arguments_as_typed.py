"""The variants of tests/e2e/test_arguments_as_typed.py in-process: each mistyped command,
`--version` after each command, both ways of giving serve a base URL, and a bad body for a
missing id on both backends."""

from __future__ import annotations

from typing import NoReturn

import pytest

from convrisk.api_client import __version__
from tests.cli.conftest import Backends, Invoke


@pytest.fixture
def serve_never_listens(monkeypatch: pytest.MonkeyPatch) -> None:
    """A serve that gets as far as listening fails the test (it would serve until stopped)."""
    import convrisk.local_backend.serve.server as server

    def listening(*args: object, **kwargs: object) -> NoReturn:
        raise AssertionError("serve went on to listen")

    monkeypatch.setattr(server, "run_server", listening)


@pytest.mark.parametrize(
    ("args", "suggestion"),
    [(["conv", "lst"], "'list'"), (["cnv", "list"], "'conv'"), (["config", "shw"], "'show'")],
)
def test_a_mistyped_command_gets_one_suggestion(
    invoke: Invoke, args: list[str], suggestion: str
) -> None:
    result = invoke(*args)
    assert result.code == 2
    assert result.stderr.count("Did you mean") == 1, result.stderr
    assert f"Did you mean {suggestion}?" in result.stderr
    assert result.stderr.count("\n") == 1


@pytest.mark.parametrize(
    "args",
    [
        ["conv", "list", "--version"],
        ["conv", "--version"],
        ["risk", "get", "--version"],  # before its missing ID is noticed
        ["config", "set", "--version"],
        ["serve", "--version"],
        ["api", "--version"],
        ["status", "--version"],
    ],
)
def test_version_after_any_command_prints_the_version(
    invoke: Invoke, serve_never_listens: None, args: list[str]
) -> None:
    result = invoke(*args)
    assert (result.code, result.stdout, result.stderr) == (0, f"convrisk {__version__}\n", "")


@pytest.mark.parametrize(
    "args",
    [
        ["serve", "--base-url", "http://127.0.0.1:9"],
        ["--base-url", "http://127.0.0.1:9", "serve"],
    ],
)
def test_serve_refuses_a_base_url(
    invoke: Invoke, serve_never_listens: None, args: list[str]
) -> None:
    result = invoke(*args, "--port", "0")
    assert result.code == 2
    assert "serve serves a local database: --base-url does not apply" in result.stderr
    assert "listening" not in result.stderr


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (
            [
                "conv",
                "update",
                "conv_00000000000000000000000000",
                "--pinned-message-id",
                "a\udcffb",
            ],
            "pinned_message_id must be valid Unicode text",
        ),
        (
            ["risk", "update", "rp_00000000000000000000000000", "--details", '{"a": "\\udc80"}'],
            "details must hold valid Unicode text only",
        ),
    ],
)
def test_a_bad_body_for_a_missing_id_is_a_usage_error_on_both_backends(
    either: Backends, args: list[str], named: str
) -> None:
    for dry_run in ([], ["--dry-run"]):
        result = either.invoke(*args, *dry_run)
        assert result.code == 2, (either.name, dry_run, result.stderr)
        assert named in result.stderr and "HTTP" not in result.stderr
