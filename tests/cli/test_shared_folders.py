"""The variants of tests/e2e/test_shared_folders.py in-process: a config file, and serve's token
file, of every mode that lets other users in, refused."""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

import pytest

from tests.cli.conftest import Invoke, Result
from tests.e2e.test_shared_folders import TOKEN


def assert_one_line_error(result: Result, code: int, *named: str) -> None:
    assert result.code == code, (result.code, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    for name in named:
        assert name in lines[0], (name, result.stderr)
    assert result.stdout == ""


@pytest.mark.parametrize("mode", [0o666, 0o620, 0o602], ids=["0666", "0620", "0602"])
def test_a_config_file_others_may_write_is_refused(
    invoke: Invoke, config_file: Path, mode: int
) -> None:
    config_file.parent.mkdir(parents=True, exist_ok=True)
    config_file.write_text(f"[default]\nbase_url = 'http://127.0.0.1:9'\ntoken = '{TOKEN}'\n")
    config_file.chmod(mode)
    before = config_file.read_bytes()
    for args in (("conv", "list"), ("config", "show"), ("config", "set", "timeout", "5")):
        result = invoke(*args)
        assert_one_line_error(
            result, 2, str(config_file), f"writable by other users (mode 0{mode:o})"
        )
        assert f"chmod 600 {config_file}" in result.stderr and TOKEN not in result.stderr
    assert config_file.read_bytes() == before


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o660, 0o602], ids=str)
def test_serve_refuses_a_token_file_open_to_others(
    invoke: Invoke, db_path: Path, monkeypatch: pytest.MonkeyPatch, mode: int
) -> None:
    import convrisk.local_backend.serve.server as server

    def listening(*args: object, **kwargs: object) -> NoReturn:
        raise AssertionError("serve went on to listen")

    monkeypatch.setattr(server, "run_server", listening)
    db_path.parent.mkdir(parents=True, exist_ok=True)
    path = db_path.with_name(db_path.name + ".token")
    path.write_text(TOKEN + "\n")
    path.chmod(mode)
    result = invoke("serve", "--port", "0")
    assert_one_line_error(
        result, 2, "token file", str(path), f"mode 0{mode:o}", f"chmod 600 {path}"
    )
    assert "listening" not in result.stderr
    assert path.read_text() == TOKEN + "\n"
