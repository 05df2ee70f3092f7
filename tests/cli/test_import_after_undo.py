"""Import after undo (issue 29, item 4): once `undo` has removed what an import created, the same
file imports those records again, and no result says `replayed` with an id that is not there.
In-process on the local database and against a serve over HTTP; the installed script runs each
once against `convrisk serve` (tests/e2e/test_import_after_undo.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .e2e_twin import Twin
from .e2e_twin import twin as twin  # a fixture: each test on the local db and on serve


def results(stdout: str) -> list[dict[str, Any]]:
    """The JSON-lines results of an import."""
    return [json.loads(line) for line in stdout.splitlines()]


def five(folder: Path) -> Path:
    """A file of five conversations to create."""
    path = folder / "five.jsonl"
    path.write_text("".join(json.dumps({"contact_id": f"c_{n}"}) + "\n" for n in range(5)))
    return path


def imported(twin: Twin, path: Path) -> list[dict[str, Any]]:
    """`conv import PATH -o jsonl`, which must succeed: its results."""
    result = twin.run("conv", "import", str(path), "-o", "jsonl")
    assert result.code == 0, result.stderr
    return results(result.stdout)


def test_reimport_after_undo_creates_the_records_again(twin: Twin, tmp_path: Path) -> None:
    path = five(tmp_path)
    first = imported(twin, path)
    undone = twin.run("undo", "--last")
    assert undone.code == 0, undone.stderr
    assert twin.count("conversations") == 0
    again = twin.run("conv", "import", str(path), "-o", "jsonl")
    assert again.code == 0, again.stderr
    rows = results(again.stdout)
    assert [(r["line"], r["status"]) for r in rows] == [(n, "created") for n in range(1, 6)]
    assert not {r["id"] for r in rows} & {r["id"] for r in first}  # new records, new ids
    assert again.stderr.startswith("5 records: 5 created, 0 updated, 0 replayed, 0 failed.\n")
    for row in rows:
        got = twin.run("conv", "get", row["id"], "-o", "json")
        assert got.code == 0, got.stderr
        assert json.loads(got.stdout)["contact_id"] == f"c_{row['line'] - 1}"
    assert twin.count("conversations") == 5
    # The keys now hold the new records: a third run replays them, and each is there.
    third = imported(twin, path)
    assert [(r["status"], r["id"]) for r in third] == [("replayed", r["id"]) for r in rows]
    assert twin.count("conversations") == 5
    # And the records made again are undone like the first ones.
    assert twin.run("undo", "--last").code == 0
    assert twin.count("conversations") == 0


def test_reimport_after_deleting_some_replays_the_rest_and_makes_those_anew(
    twin: Twin,
    tmp_path: Path,
) -> None:
    path = five(tmp_path)
    first = imported(twin, path)
    for row in first[1::2]:  # lines 2 and 4
        deleted = twin.run("conv", "delete", row["id"], "--yes")
        assert deleted.code == 0, deleted.stderr
    rows = imported(twin, path)
    assert [r["status"] for r in rows] == ["replayed", "created", "replayed", "created", "replayed"]
    assert [r["id"] for r in rows[::2]] == [r["id"] for r in first[::2]]
    stored = {c["id"] for c in twin.store.conversations.list(limit=10)["data"]}
    assert {r["id"] for r in rows} == stored
    assert twin.count("conversations") == 5
