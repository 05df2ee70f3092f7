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
        (["--record", "rec.jsonl"], "--record applies only with --proxy-to URL."),
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


@pytest.mark.parametrize(
    ("where", "named"),
    [
        ("missing/rec.jsonl", "--record {out}/missing/rec.jsonl: cannot write in {out}/missing: "),
        ("a-file/rec.jsonl", "--record {out}/a-file/rec.jsonl: cannot write in {out}/a-file: "),
        ("", "--record {out}/: is a directory."),
        ("-", "--record takes a file name (not - or empty)."),
    ],
)
def test_a_record_file_that_cannot_be_written_is_exit_2_at_start(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, where: str, named: str
) -> None:
    never_serve(monkeypatch)
    out = tmp_path / "out"
    out.mkdir()
    (out / "a-file").write_text("kept\n")
    target = where if where == "-" else f"{out}/{where}"
    proxy = ["--proxy-to", "http://127.0.0.1:1", "--record", target]
    done = invoke("serve", "--port", "0", "--db", str(tmp_path / "s.db"), *proxy)
    assert done.code == 2
    assert f"Error: {named.format(out=out)}" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    # Nothing written, nothing left: the probe's file is removed.
    assert sorted(p.name for p in out.iterdir()) == ["a-file"]
    assert (out / "a-file").read_text() == "kept\n"


def test_an_existing_record_file_is_left_as_it_was_by_the_start(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    never_serve(monkeypatch)
    out = tmp_path / "out"
    out.mkdir()
    target = out / "rec.jsonl"
    target.write_text("an earlier recording\n")
    proxy = ["--proxy-to", "http://127.0.0.1:1", "--record", str(target)]
    with pytest.raises(BaseException, match="serve started"):
        invoke("serve", "--port", "0", "--db", str(tmp_path / "s.db"), *proxy)
    assert target.read_text() == "an earlier recording\n"
    assert sorted(p.name for p in out.iterdir()) == ["rec.jsonl"]
