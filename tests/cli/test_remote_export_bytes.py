"""The variants of tests/e2e/test_remote_export_bytes.py in-process: a remote `list --all` over
an in-process serve prints, byte for byte, what the general path prints, as JSON lines, as a
JSON document and as ids."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from convrisk.api_client import Client
from convrisk.local_backend.backend import LocalBackend
from tests.cli.conftest import Invoke
from tests.cli.served_in_process import served
from tests.e2e.test_export_bytes import _expected
from tests.e2e.test_remote_export_bytes import PLAIN
from tests.local_backend.varied import fill_varied
from tests.shared_server import SharedServer


@pytest.fixture(scope="module")
def served_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The varied database (tests/local_backend/varied.py) with PLAIN plain conversations."""
    path = tmp_path_factory.mktemp("remote-export") / "varied.db"
    fill_varied(path)
    with LocalBackend(path) as store:
        for n in range(PLAIN):
            made = store.conversations.create({"contact_id": f"ct_{n:05d}"})
            store.conversations.update(made["id"], {"is_muted": n % 2 == 0})
    return path


@pytest.mark.parametrize("fmt", ["jsonl", "json", "id"])
def test_a_remote_export_prints_exactly_what_the_general_path_prints(
    served_db: Path,
    tmp_path: Path,
    cli_server: SharedServer,
    invoke: Invoke,
    monkeypatch: pytest.MonkeyPatch,
    fmt: str,
) -> None:
    copy = tmp_path / "serve.db"
    shutil.copy(served_db, copy)
    with served(cli_server, copy, monkeypatch):
        result = invoke("conv", "list", "--all", "-o", fmt)
    assert result.code == 0, result.stderr
    if fmt == "id":
        with LocalBackend(served_db) as store:
            ids = [record["id"] for record in Client(store).conversations.iterate()]
        assert result.stdout == "".join(f"{id}\n" for id in ids)
        assert len(ids) > 20
        return
    expected = _expected(served_db, "conversations", fmt).decode()
    assert expected.count('{"id":') > 20
    assert result.stdout == expected
