"""A remote `list --all -o jsonl/json/id` over `convrisk serve` prints, byte for byte, what the
general path prints for the same conversations: pages of plain rows (read the quick way, each
record's bytes as sent) and a page of varied ones (read the long way) alike. JSON lines here;
a JSON document and ids too, in-process, in tests/cli/test_remote_export_bytes.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from convrisk.local_backend.backend import LocalBackend
from tests.local_backend.varied import fill_varied

from .both_backends import Remote, serving
from .test_export_bytes import _expected

PLAIN = 250  # conversations of plain text, newest: the first pages hold only them


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


def test_a_remote_export_prints_exactly_what_the_general_path_prints(
    served_db: Path, tmp_path: Path
) -> None:
    fmt = "jsonl"
    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(served_db, home / "serve.db")
    with serving(home) as served:
        remote = Remote(tmp_path / "client", served.url, served.token)
        result = remote.run("conv", "list", "--all", "-o", fmt)
    assert result.returncode == 0, result.stderr
    expected = _expected(served_db, "conversations", fmt).decode()
    assert expected.count('{"id":') > 20
    assert result.stdout == expected
