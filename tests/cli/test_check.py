"""`convrisk check` in-process against a serve in this process: every output format it cannot
print, the variants of the behaviour tests/e2e/test_check.py runs once through the installed
script, under its test name."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from convrisk.local_backend.backend import LocalBackend

from .conftest import REMOTE_TOKEN, Invoke


@pytest.fixture
def remote(
    invoke: Invoke, cli_server: Any, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Invoke]:
    """convrisk against the module's in-process serve over this test's database, which holds
    records of others: a muted conversation, an archived one and a risk profile."""
    db_path.parent.mkdir(parents=True, exist_ok=True)
    with LocalBackend(db_path) as backend, cli_server.serving(backend, []) as running:
        monkeypatch.setenv("CONVRISK_BASE_URL", running.url)
        monkeypatch.setenv("CONVRISK_TOKEN", REMOTE_TOKEN)
        muted = backend.conversations.create({"contact_id": "someone"})["id"]
        backend.conversations.update(muted, {"is_muted": True, "is_pinned": True})
        archived = backend.conversations.create({"group_id": "team"})["id"]
        backend.conversations.update(archived, {"archived_at": 1_600_000_000})
        backend.risk_profiles.create(
            {"customer_id": "cus_9", "profile_type": "aggressive", "score": 3, "details": {}}
        )
        yield invoke


def held(db_path: Path) -> list[dict[str, Any]]:
    """Every record the service holds, ids and times included (the sandbox's snapshot)."""
    with LocalBackend(db_path) as backend:
        return [json.loads(line) for line in backend.snapshot()]


@pytest.mark.parametrize("output", ["id", "yaml"])
def test_check_refuses_an_output_format_it_cannot_print_before_sending(
    remote: Invoke, db_path: Path, output: str
) -> None:
    before = held(db_path)
    assert len(before) == 3
    result = remote("check", "-o", output)
    assert result.code == 2
    assert len(result.stderr.splitlines()) == 1 and "-o" in result.stderr
    assert held(db_path) == before
