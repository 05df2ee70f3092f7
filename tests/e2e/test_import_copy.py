"""`import --copy` (issue 18, item 7; DESIGN 5.2): what `-o jsonl` prints is read back, each
record created anew (id and read-only fields ignored, with one note) and its settable fields that
a create does not take applied by an update; run again, it creates nothing twice. Without
--copy an export is one error that says how to copy. The installed convrisk, from a local
database into `convrisk serve`; both resources into both backends in-process in
tests/cli/test_import_copy.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from convrisk.local_backend.backend import LocalBackend

from .both_backends import Cli, isolated_env
from .both_backends import over_serve as over_serve  # a fixture: convrisk against its own serve
from .console import run

# What the service sets: never compared between the two data sets.
STAMPS = {"id", "created_at", "updated_at"}


def source(tmp_path: Path) -> dict[str, str]:
    """The environment of a local database A, with conversations and risk profiles of every
    shape an export can have (seeded in this process: the export is what the script prints)."""
    with LocalBackend(tmp_path / "a.db") as store:
        plain = store.conversations.create({"contact_id": "c_1"})["id"]
        store.conversations.create({"group_id": "g_1"})
        store.conversations.update(
            plain, {"is_muted": True, "is_pinned": True, "pinned_message_id": "m_1"}
        )
        archived = store.conversations.create({"contact_id": "c_2"})["id"]
        store.conversations.update(archived, {"archived_at": 1714564800})  # 2024-05-01T12:00:00Z
        for n in range(3):
            store.risk_profiles.create(
                {"customer_id": f"cus_{n}", "profile_type": "moderate", "score": n * 10,
                 "details": {"n": n, "tags": ["a"]}}
            )  # fmt: skip
    return isolated_env(tmp_path / "a-home", CONVRISK_DB=str(tmp_path / "a.db"))


def export(env: dict[str, str], group: str) -> tuple[str, list[dict[str, Any]]]:
    """`GROUP list --all -o jsonl` of a backend: the text, and the records without stamps."""
    result = run(env, group, "list", "--all", "-o", "jsonl")
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    shown = [{k: v for k, v in r.items() if k not in STAMPS} for r in records]
    return result.stdout, sorted(shown, key=lambda r: json.dumps(r, sort_keys=True))


def test_an_export_copied_twice_is_the_same_data_set_created_once(
    over_serve: Cli,
    tmp_path: Path,
) -> None:
    # Conversations, whose copy also updates what a create does not take; risk profiles (and
    # the local database as the target) in tests/cli/test_import_copy.py.
    group, resource = "conv", "conversations"
    a = source(tmp_path)
    text, wanted = export(a, group)
    first = over_serve.run(group, "import", "-", "--copy", input=text)
    assert first.returncode == 0, first.stderr
    n = len(wanted)
    assert (
        first.stderr.splitlines()[-1]
        == f"{n} records: {n} created, 0 updated, 0 replayed, 0 failed."
    )
    notes = [line for line in first.stderr.splitlines() if "--copy" in line]
    assert len(notes) == 1 and "created_at" in notes[0] and "id" in notes[0]  # one note
    assert export(over_serve.env, group)[1] == wanted
    again = over_serve.run(group, "import", "-", "--copy", input=text)
    assert again.returncode == 0, again.stderr
    assert f"{n} records: 0 created, 0 updated, {n} replayed, 0 failed." in again.stderr
    made = [json.loads(line) for line in first.stdout.splitlines()]
    replayed = [json.loads(line) for line in again.stdout.splitlines()]
    assert [r["id"] for r in replayed] == [r["id"] for r in made]
    assert over_serve.count(resource) == n and export(over_serve.env, group)[1] == wanted


def test_an_export_without_copy_is_one_error_that_says_how_to_copy(
    over_serve: Cli,
    tmp_path: Path,
) -> None:
    text, _ = export(source(tmp_path), "conv")
    result = over_serve.run("conv", "import", "-", input=text)
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1 and result.stdout == ""
    assert "last_active_at" in result.stderr and "add --copy" in result.stderr
    assert over_serve.count("conversations") == 0


def test_a_copy_whose_update_fails_keeps_the_create_and_a_rerun_finishes_it(
    over_serve: Cli,
) -> None:
    line = {"id": "conv_x", "contact_id": "c_9", "is_muted": True, "archived_at": "soon"}
    text = json.dumps(line) + "\n"
    bad = over_serve.run("conv", "import", "-", "--copy", "-o", "jsonl", input=text)
    assert bad.returncode == 1
    (row,) = [json.loads(x) for x in bad.stdout.splitlines()]
    assert row["status"] == "failed" and "archived_at" in row["error"]["message"]
    fixed = {**line, "archived_at": 1714564800}
    good = over_serve.run(
        "conv", "import", "-", "--copy", "-o", "jsonl", input=json.dumps(fixed) + "\n"
    )
    assert good.returncode == 0, good.stderr
    assert over_serve.count("conversations") == 1
    (stored,) = over_serve.store.conversations.list()["data"]
    assert (stored["is_muted"], stored["archived_at"]) == (True, 1714564800)


def test_a_record_changed_since_it_was_copied_is_not_created_twice(over_serve: Cli) -> None:
    line = {"id": "rp_src", "customer_id": "cus_1", "profile_type": "moderate", "score": 1}
    first = over_serve.run("risk", "import", "-", "--copy", input=json.dumps(line) + "\n")
    assert first.returncode == 0, first.stderr
    changed = json.dumps({**line, "score": 2}) + "\n"
    again = over_serve.run("risk", "import", "-", "--copy", "-o", "jsonl", input=changed)
    assert again.returncode == 1
    (row,) = [json.loads(x) for x in again.stdout.splitlines()]
    assert "already copied in the last 24 hours with other values" in row["error"]["message"]
    assert over_serve.count("risk_profiles") == 1


def test_a_copy_run_again_after_the_source_changed_sets_the_changed_fields(
    over_serve: Cli,
    tmp_path: Path,
) -> None:
    a = source(tmp_path)
    text, _ = export(a, "conv")
    assert over_serve.run("conv", "import", "-", "--copy", input=text).returncode == 0
    muted = [json.loads(x) for x in text.splitlines() if json.loads(x)["is_muted"]]
    (record,) = muted
    assert run(a, "conv", "update", record["id"], "--unmute").returncode == 0
    newer, wanted = export(a, "conv")
    again = over_serve.run("conv", "import", "-", "--copy", input=newer)
    assert again.returncode == 0, again.stderr
    n = len(wanted)
    assert f"{n} records: 0 created, 1 updated, {n - 1} replayed, 0 failed." in again.stderr
    assert export(over_serve.env, "conv")[1] == wanted


def test_a_copy_that_stops_on_an_error_creates_nothing_after_it(
    over_serve: Cli,
) -> None:
    lines = [
        {"id": "conv_a", "contact_id": "c_1", "is_muted": True},
        {"id": "conv_b", "contact_id": "c_2", "archived_at": "soon"},
        {"id": "conv_c", "contact_id": "c_3", "is_muted": True},
    ]
    text = "".join(json.dumps(line) + "\n" for line in lines)
    result = over_serve.run(
        "conv", "import", "-", "--copy", "--stop-on-error", "-o", "jsonl", input=text
    )
    assert result.returncode == 1
    rows = [json.loads(x) for x in result.stdout.splitlines()]
    assert [(r["line"], r["status"]) for r in rows] == [(1, "created"), (2, "failed")]
    assert rows[1]["id"] is not None  # the record its create made is named
    assert over_serve.count("conversations") == 2
