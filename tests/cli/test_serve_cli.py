"""`convrisk serve`'s refusals in-process: every token that is no header token (from --token and
from CONVRISK_SERVE_TOKEN) and every bad sandbox option, the variants of behaviours
tests/e2e/test_serve_cli.py runs once through the installed script, under the same test names.
A serve that got past its checks would fail the test at once (never_serve)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .conftest import Invoke, Result
from .serving_in_process import never_serve


@pytest.fixture
def serve(invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Invoke:
    """`convrisk serve --port 0 --db s.db ARGS`, in-process, expected to refuse."""
    never_serve(monkeypatch)

    def run(*args: str) -> Result:
        return invoke("serve", "--port", "0", "--db", str(tmp_path / "s.db"), *args)

    return run


@pytest.mark.parametrize(
    "token", ["my secret token", " ", "", "tab\there", "caf\u00e9", "new\nline"]
)
def test_a_token_that_is_not_a_header_token_is_refused_with_exit_2(
    serve: Invoke, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, token: str
) -> None:
    for args, env in (
        (("--token", token), {}),
        ((), {"CONVRISK_SERVE_TOKEN": token}),
    ):
        with monkeypatch.context() as patched:
            for name, value in env.items():
                patched.setenv(name, value)
            result = serve(*args)
        assert result.code == 2, result.stderr
        assert "listening" not in result.stderr
        assert ("empty" in result.stderr) or ("spaces or characters" in result.stderr)
        if token.strip():
            assert token not in result.stderr
    assert not (tmp_path / "s.db.token").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["--latency", "abc"],
        ["--latency", "50-10"],
        ["--latency", "70000"],
        ["--latency", "-5"],
        ["--faults", "1.5"],
        ["--faults", "-0.1"],
        ["--faults", "nan"],
        ["--seed", "-1"],
        ["--log-format", "xml"],
    ],
)
def test_bad_sandbox_options_are_usage_errors(serve: Invoke, args: list[str]) -> None:
    result = serve(*args)
    assert result.code == 2, result.stderr
    assert args[0] in result.stderr
    assert "Traceback" not in result.stderr
    assert "listening" not in result.stderr


@pytest.mark.parametrize("value", ["abc", "0", "-3", "wrong parent"])
def test_a_parent_pid_that_is_not_the_parent_of_serve_is_refused_with_exit_2(
    serve: Invoke, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    # "wrong parent": a real process id, but not the one that started serve.
    given = str(os.getpid()) if value == "wrong parent" else value
    monkeypatch.setenv("CONVRISK_SERVE_PARENT_PID", given)
    result = serve()
    assert result.code == 2, result.stderr
    assert "CONVRISK_SERVE_PARENT_PID" in result.stderr
    assert "Traceback" not in result.stderr
    assert "listening" not in result.stderr
