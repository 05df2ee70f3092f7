"""The variants of tests/e2e/test_export_bytes.py in-process: both lists, as JSON lines and as a
JSON document, print byte for byte what the general path prints."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.conftest import Invoke
from tests.e2e.test_export_bytes import _expected
from tests.local_backend.varied import fill_varied


@pytest.fixture(scope="module")
def varied(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The varied database (see tests/local_backend/varied.py)."""
    path = tmp_path_factory.mktemp("export") / "varied.db"
    fill_varied(path)
    return path


@pytest.mark.parametrize("fmt", ["jsonl", "json"])
@pytest.mark.parametrize(
    ("command", "name"), [("conv", "conversations"), ("risk", "risk_profiles")]
)
def test_the_export_prints_exactly_what_the_general_path_prints(
    varied: Path, invoke: Invoke, command: str, name: str, fmt: str
) -> None:
    result = invoke("--db", str(varied), command, "list", "--all", "-o", fmt)
    assert result.code == 0, result.stderr
    expected = _expected(varied, name, fmt)
    assert expected.count(b'{"id":') > 20
    assert result.stdout.encode("utf-8") == expected
