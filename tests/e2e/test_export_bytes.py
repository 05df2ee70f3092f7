"""`convrisk ... list --all -o jsonl/json` over varied rows prints, byte for byte, what the general
path (each record dumped by Python) prints: the export path changes speed, never output. Once
here; both lists in both formats in-process, in tests/cli/test_export_bytes.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from convrisk.api_client import Client
from convrisk.api_client.records import json_text
from convrisk.api_client.text import printable_json
from convrisk.local_backend.backend import LocalBackend
from tests.local_backend.varied import fill_varied

from .both_backends import isolated_env
from .console import CONVRISK

SAFETY_TIMEOUT = 120


@pytest.fixture(scope="module")
def varied(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The varied database (see tests/local_backend/varied.py)."""
    path = tmp_path_factory.mktemp("export") / "varied.db"
    fill_varied(path)
    return path


def _expected(path: Path, name: str, fmt: str) -> bytes:
    """What the general path prints: every record through json.dumps and printable_json."""
    with LocalBackend(path) as store:
        records = list(getattr(Client(store), name).iterate())
    texts = [printable_json(json_text(record)) for record in records]
    text = "".join(t + "\n" for t in texts) if fmt == "jsonl" else "[" + ",".join(texts) + "]\n"
    return text.encode("utf-8")


def test_the_export_prints_exactly_what_the_general_path_prints(
    varied: Path, tmp_path: Path
) -> None:
    command, name, fmt = "risk", "risk_profiles", "jsonl"
    result = subprocess.run(
        [CONVRISK, "--db", str(varied), command, "list", "--all", "-o", fmt],
        env=isolated_env(tmp_path / "home"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=SAFETY_TIMEOUT,
    )
    assert result.returncode == 0, result.stderr
    expected = _expected(varied, name, fmt)
    assert expected.count(b'{"id":') > 20
    assert result.stdout == expected
