"""`convrisk serve --load FILE` in-process: every file it refuses to load, the variants of the
behaviour tests/e2e/test_sandbox_serve.py runs once through the installed script, under its test
name. A serve that got past its checks would fail the test at once (never_serve)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Invoke
from .serving_in_process import never_serve


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b'{"resource": "conversations", "id": "conv_x"}\n', "line 1: not a conversation"),
        (b"\n\xff\n", "line 2: not UTF-8"),
        (None, "No such file"),
    ],
)
def test_a_bad_load_file_is_exit_2_with_one_line_and_nothing_served(
    invoke: Invoke,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    content: bytes | None,
    says: str,
) -> None:
    never_serve(monkeypatch)
    snapshot = tmp_path / "bad.jsonl"
    if content is not None:
        snapshot.write_bytes(content)
    result = invoke("serve", "--port", "0", "--db", str(tmp_path / "s.db"), "--load", str(snapshot))
    assert result.code == 2
    assert says in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "listening" not in result.stderr
    assert not (tmp_path / "s.db").exists()
