"""docs/guide/python.md's examples, run in order as one program on each backend: a local database
chosen by CONVRISK_DB, and a real `convrisk serve` on loopback chosen by CONVRISK_BASE_URL."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from convrisk.local_backend.backend import LocalBackend

from .both_backends import isolated_env, serving
from .console import SAFETY_TIMEOUT

PAGE = Path(__file__).resolve().parents[2] / "docs" / "guide" / "python.md"


def python_blocks(text: str) -> list[str]:
    """The ```python blocks of a Markdown page, in order."""
    return re.findall(r"^```python\n(.*?)^```", text, re.M | re.S)


def run_page(cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The page's examples as one program, in a fresh interpreter."""
    program = "\n".join(python_blocks(PAGE.read_text(encoding="utf-8")))
    return subprocess.run(
        [sys.executable, "-c", program],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=SAFETY_TIMEOUT,
    )


def conversations_in(db: Path) -> int:
    """How many conversations the database holds."""
    with LocalBackend(db) as store:
        return len(store.conversations.list(limit=100).records)


def test_the_page_has_examples_of_each_section() -> None:
    blocks = python_blocks(PAGE.read_text(encoding="utf-8"))
    code = "\n".join(blocks)
    assert len(blocks) >= 6
    for call in ("Client.local(", "Client.remote(", "Client.from_profile(", ".iterate(", ".list("):
        assert call in code, call
    for verb in ("create", "retrieve", "update", "delete"):
        assert f".{verb}(" in code, verb


@pytest.mark.parametrize("backend", ["local", "remote"])
def test_the_python_pages_examples_run(backend: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    if backend == "local":
        db = tmp_path / "app.db"
        result = run_page(work, isolated_env(home, CONVRISK_DB=str(db)))
        assert result.returncode == 0, result.stderr
    else:
        (tmp_path / "serve-home").mkdir()
        with serving(tmp_path / "serve-home") as serve:
            remote = {"CONVRISK_BASE_URL": serve.url, "CONVRISK_TOKEN": serve.token}
            result = run_page(work, isolated_env(home, **remote))
        assert result.returncode == 0, result.stderr
        db = serve.db_path
        assert "POST /v1/conversations" in "".join(serve.log)
    # The program's records are where the settings sent them, and nowhere else.
    assert conversations_in(db) == 6
    assert not (home / "data").exists()
    assert "No such conversation" in result.stdout
    assert "base_url must be an http:// or https:// URL" in result.stdout
