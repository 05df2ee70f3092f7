"""`convrisk serve --proxy-to`'s refusals in-process: every bad proxy option, the variants of the
behaviour tests/e2e/test_proxy.py runs once through the installed script, under its test name.
A serve that got past its checks would fail the test at once (never_serve)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Invoke
from .serving_in_process import never_serve


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--validate", "enforce"], "--validate applies only with --proxy-to URL."),
        (["--proxy-timeout", "5"], "--proxy-timeout applies only with --proxy-to URL."),
        (["--proxy-to", "ftp://127.0.0.1/"], "--proxy-to must be an http:// or https:// URL"),
        (["--proxy-to", "http://u:p@127.0.0.1/"], "must not carry a user name or password"),
        (["--proxy-to", "http://127.0.0.1:1", "--validate", "loud"], "report or enforce"),
        (["--proxy-to", "http://127.0.0.1:1", "--proxy-timeout", "0"], "more than 0"),
        (["--proxy-to", "http://127.0.0.1:1", "--clock", "frozen"], "--clock does not apply"),
        (["--proxy-to", "http://127.0.0.1:1/a\x7fb"], "--proxy-to: not a URL a request can go"),
    ],
)
def test_bad_proxy_options_exit_2_with_one_line(
    invoke: Invoke,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    args: list[str],
    named: str,
) -> None:
    never_serve(monkeypatch)
    done = invoke("serve", "--port", "0", "--db", str(tmp_path / "s.db"), *args)
    assert done.code == 2
    assert named in done.stderr
    assert "p@" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
