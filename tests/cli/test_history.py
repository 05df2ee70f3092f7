"""`convrisk history` in-process: a journal in its place that convrisk must not read (a
directory, a symlink, another user's file). The installed script reads a symlink once in
tests/e2e/test_history.py."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from .conftest import Invoke


def journal_of(home: Path) -> Path:
    """The default journal in this HOME (no XDG_STATE_HOME)."""
    return home / ".local" / "state" / "convrisk" / "journal.jsonl"


def _entry(n: int) -> dict[str, Any]:
    return {
        "entry": f"j_{n:012x}abcdef",
        "run": f"r_{n:012x}abcdef",
        "time": "2026-11-25T06:15:00.123Z",
        "profile": "default",
        "backend": "local",
        "target": "/tmp/x.db",
        "argv": ["convrisk", "conv", "create"],
        "operation": "create",
        "resource": "conversations",
        "id": f"conv_{n:026d}",
        "before": None,
        "after": {"id": f"conv_{n:026d}"},
        "idempotency_key": None,
        "outcome": {"status": "ok"},
    }


@pytest.mark.parametrize("what", ["directory", "symlink", "another_users"])
def test_a_journal_convrisk_must_not_read_is_one_line_exit_2(
    invoke: Invoke, home: Path, tmp_path: Path, what: str
) -> None:
    path = journal_of(home)
    path.parent.mkdir(parents=True)
    if what == "directory":
        path.mkdir()
    elif what == "symlink":
        (tmp_path / "elsewhere.jsonl").write_text(json.dumps(_entry(1)) + "\n")
        path.symlink_to(tmp_path / "elsewhere.jsonl")
    else:
        if os.geteuid() != 0:
            pytest.skip("only root can give a file to another user")
        path.write_text(json.dumps(_entry(1)) + "\n")
        os.chown(path, 65534, 65534)
    result = invoke("history")
    assert result.code == 2 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"Error: The journal {path} is ")
