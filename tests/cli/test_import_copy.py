"""`import --copy` (issue 18, item 7; DESIGN 5.2): what `-o jsonl` prints is read back, each
record created anew (id and read-only fields ignored, with one note) and its settable fields that
a create does not take applied by an update; run again, it creates nothing twice. Without
--copy an export is one error that says how to copy. Both resources, in-process into the local
database and into a serve over HTTP, from a local database; the installed script runs each once
into `convrisk serve` (tests/e2e/test_import_copy.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import Result
from .e2e_twin import Twin
from .e2e_twin import twin as twin  # a fixture: each test on the local db and on serve

Run = Callable[..., Result]

# What the service sets: never compared between the two data sets.
STAMPS = {"id", "created_at", "updated_at"}


def source(twin: Twin, tmp_path: Path) -> Run:
    """convrisk in-process on a local database A (whatever backend `twin` is on), with
    conversations and risk profiles of every shape an export can have."""
    elsewhere = {
        "CONVRISK_DB": str(tmp_path / "a.db"),
        "CONVRISK_BASE_URL": None,
        "CONVRISK_TOKEN": None,
        "XDG_STATE_HOME": str(tmp_path / "a-home" / "state"),
    }

    def on_a(*args: str) -> Result:
        return twin.run(*args, **elsewhere)

    def made(*args: str) -> str:
        result = on_a(*args, "-o", "id")
        assert result.code == 0, result.stderr
        return result.stdout.strip()

    plain = made("conv", "create", "--contact-id", "c_1")
    made("conv", "create", "--group-id", "g_1")
    made("conv", "update", plain, "--mute", "--pin", "--pinned-message-id", "m_1")
    archived = made("conv", "create", "--contact-id", "c_2")
    made("conv", "update", archived, "--archived-at", "2024-05-01T12:00:00Z")
    for n in range(3):
        made(
            "risk", "create", "--customer-id", f"cus_{n}", "--profile-type", "moderate",
            "--score", str(n * 10), "--details", json.dumps({"n": n, "tags": ["a"]}),
        )  # fmt: skip
    return on_a


def export(run: Run, group: str) -> tuple[str, list[dict[str, Any]]]:
    """`GROUP list --all -o jsonl` of a backend: the text, and the records without stamps."""
    result = run(group, "list", "--all", "-o", "jsonl")
    assert result.code == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    shown = [{k: v for k, v in r.items() if k not in STAMPS} for r in records]
    return result.stdout, sorted(shown, key=lambda r: json.dumps(r, sort_keys=True))


@pytest.mark.parametrize(
    ("group", "resource"), [("conv", "conversations"), ("risk", "risk_profiles")]
)
def test_an_export_copied_twice_is_the_same_data_set_created_once(
    twin: Twin,
    tmp_path: Path,
    group: str,
    resource: str,
) -> None:
    a = source(twin, tmp_path)
    text, wanted = export(a, group)
    first = twin.run(group, "import", "-", "--copy", input=text)
    assert first.code == 0, first.stderr
    n = len(wanted)
    assert (
        first.stderr.splitlines()[-1]
        == f"{n} records: {n} created, 0 updated, 0 replayed, 0 failed."
    )
    notes = [line for line in first.stderr.splitlines() if "--copy" in line]
    assert len(notes) == 1 and "created_at" in notes[0] and "id" in notes[0]  # one note
    assert export(twin.run, group)[1] == wanted
    again = twin.run(group, "import", "-", "--copy", input=text)
    assert again.code == 0, again.stderr
    assert f"{n} records: 0 created, 0 updated, {n} replayed, 0 failed." in again.stderr
    made = [json.loads(line) for line in first.stdout.splitlines()]
    replayed = [json.loads(line) for line in again.stdout.splitlines()]
    assert [r["id"] for r in replayed] == [r["id"] for r in made]
    assert twin.count(resource) == n and export(twin.run, group)[1] == wanted


def test_an_export_without_copy_is_one_error_that_says_how_to_copy(
    twin: Twin,
    tmp_path: Path,
) -> None:
    text, _ = export(source(twin, tmp_path), "conv")
    result = twin.run("conv", "import", "-", input=text)
    assert result.code == 2
    assert len(result.stderr.splitlines()) == 1 and result.stdout == ""
    assert "last_active_at" in result.stderr and "add --copy" in result.stderr
    assert twin.count("conversations") == 0


def test_a_copy_whose_update_fails_keeps_the_create_and_a_rerun_finishes_it(
    twin: Twin,
) -> None:
    line = {"id": "conv_x", "contact_id": "c_9", "is_muted": True, "archived_at": "soon"}
    text = json.dumps(line) + "\n"
    bad = twin.run("conv", "import", "-", "--copy", "-o", "jsonl", input=text)
    assert bad.code == 1
    (row,) = [json.loads(x) for x in bad.stdout.splitlines()]
    assert row["status"] == "failed" and "archived_at" in row["error"]["message"]
    fixed = {**line, "archived_at": 1714564800}
    good = twin.run("conv", "import", "-", "--copy", "-o", "jsonl", input=json.dumps(fixed) + "\n")
    assert good.code == 0, good.stderr
    assert twin.count("conversations") == 1
    (stored,) = twin.store.conversations.list()["data"]
    assert (stored["is_muted"], stored["archived_at"]) == (True, 1714564800)


def test_a_record_changed_since_it_was_copied_is_not_created_twice(twin: Twin) -> None:
    line = {"id": "rp_src", "customer_id": "cus_1", "profile_type": "moderate", "score": 1}
    first = twin.run("risk", "import", "-", "--copy", input=json.dumps(line) + "\n")
    assert first.code == 0, first.stderr
    changed = json.dumps({**line, "score": 2}) + "\n"
    again = twin.run("risk", "import", "-", "--copy", "-o", "jsonl", input=changed)
    assert again.code == 1
    (row,) = [json.loads(x) for x in again.stdout.splitlines()]
    assert "already copied in the last 24 hours with other values" in row["error"]["message"]
    assert twin.count("risk_profiles") == 1


def test_a_copy_run_again_after_the_source_changed_sets_the_changed_fields(
    twin: Twin,
    tmp_path: Path,
) -> None:
    a = source(twin, tmp_path)
    text, _ = export(a, "conv")
    assert twin.run("conv", "import", "-", "--copy", input=text).code == 0
    muted = [json.loads(x) for x in text.splitlines() if json.loads(x)["is_muted"]]
    (record,) = muted
    assert a("conv", "update", record["id"], "--unmute").code == 0
    newer, wanted = export(a, "conv")
    again = twin.run("conv", "import", "-", "--copy", input=newer)
    assert again.code == 0, again.stderr
    n = len(wanted)
    assert f"{n} records: 0 created, 1 updated, {n - 1} replayed, 0 failed." in again.stderr
    assert export(twin.run, "conv")[1] == wanted


def test_a_copy_that_stops_on_an_error_creates_nothing_after_it(
    twin: Twin,
) -> None:
    lines = [
        {"id": "conv_a", "contact_id": "c_1", "is_muted": True},
        {"id": "conv_b", "contact_id": "c_2", "archived_at": "soon"},
        {"id": "conv_c", "contact_id": "c_3", "is_muted": True},
    ]
    text = "".join(json.dumps(line) + "\n" for line in lines)
    result = twin.run("conv", "import", "-", "--copy", "--stop-on-error", "-o", "jsonl", input=text)
    assert result.code == 1
    rows = [json.loads(x) for x in result.stdout.splitlines()]
    assert [(r["line"], r["status"]) for r in rows] == [(1, "created"), (2, "failed")]
    assert rows[1]["id"] is not None  # the record its create made is named
    assert twin.count("conversations") == 2
