"""`convrisk undo` on the local backend, over journal entries written with journal.append: which
entries it takes, how each is reversed, and what it refuses; and, at the end, undo after real
writes through the command line on both backends (in-process: the local database, a serve over
HTTP), the variants of tests/e2e/test_undo.py, which runs the installed script once each."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from convrisk.api_client.resources import RESOURCES
from convrisk.cli.journal import entries as journal
from convrisk.local_backend.backend import LocalBackend
from tests import described

from .conftest import Invoke
from .e2e_twin import Twin
from .e2e_twin import twin as twin  # a fixture: each test on the local db and on serve


@pytest.fixture
def journal_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The journal these tests write and undo reads."""
    path = tmp_path / "state" / "journal.jsonl"
    monkeypatch.setenv("CONVRISK_JOURNAL", str(path))
    return path


class Journal:
    """Entries as a command would have written them to the local database."""

    def __init__(self, path: Path, db_path: Path) -> None:
        self.path = path
        self.db_path = db_path

    def add(
        self,
        operation: str,
        record_id: str | None,
        before: dict[str, Any] | None,
        after: dict[str, Any] | None,
        *,
        run: str | None = None,
        resource: str = "conversations",
        status: str = "ok",
        target: str | None = None,
        **extra: Any,
    ) -> journal.Entry:
        entry: journal.Entry = {
            "entry": journal.new_id("j_"),
            "run": run or journal.new_id("r_"),
            "time": journal.utc_now(),
            "profile": "default",
            "backend": "local",
            "target": target or str(self.db_path),
            "argv": ["convrisk", operation],
            "operation": operation,  # type: ignore[typeddict-item]
            "resource": resource,
            "id": record_id,
            "before": before,
            "after": after,
            "idempotency_key": None,
            "outcome": {"status": status},  # type: ignore[typeddict-item]
        }
        entry.update(extra)  # type: ignore[typeddict-item]
        journal.append(self.path, [entry])
        return entry


@pytest.fixture
def written(journal_file: Path, db_path: Path) -> Journal:
    return Journal(journal_file, db_path)


def created(backend: LocalBackend, journal_: Journal, contact: str = "c_1", **kw: Any) -> Any:
    record = backend.conversations.create({"contact_id": contact})
    return record, journal_.add("create", record["id"], None, dict(record), **kw)


def updated(backend: LocalBackend, journal_: Journal, id: str, changes: Any, **kw: Any) -> Any:
    before = dict(backend.conversations.retrieve(id))
    after = dict(backend.conversations.update(id, changes))
    return after, journal_.add("update", id, before, after, **kw)


def deleted(backend: LocalBackend, journal_: Journal, id: str, **kw: Any) -> Any:
    before = dict(backend.conversations.retrieve(id))
    backend.conversations.delete(id)
    return before, journal_.add("delete", id, before, None, **kw)


def exists(backend: LocalBackend, id: str) -> bool:
    from convrisk.api_client.errors import NotFoundError

    try:
        backend.conversations.retrieve(id)
    except NotFoundError:
        return False
    return True


def test_undo_of_a_create_deletes_the_record(
    invoke: Invoke, backend: LocalBackend, written: Journal
) -> None:
    record, entry = created(backend, written)
    rows = invoke("undo", entry["entry"], "-o", "json").ok().json()
    assert rows == [
        {
            "entry": entry["entry"],
            "status": "undone",
            "operation": "delete",
            "id": record["id"],
            "stands_for": None,
            "body": {},
        }
    ]
    assert not exists(backend, record["id"])


def test_undo_of_an_update_sets_back_the_fields_it_changed(
    invoke: Invoke, backend: LocalBackend, written: Journal
) -> None:
    record, _ = created(backend, written)
    _, entry = updated(
        backend, written, record["id"], {"is_muted": True, "archived_at": 1700000000}
    )
    rows = invoke("undo", entry["entry"], "-o", "json").ok().json()
    assert rows[0]["body"] == {"is_muted": False, "archived_at": None}
    now = dict(backend.conversations.retrieve(record["id"]))
    assert (now["is_muted"], now["archived_at"]) == (False, None)


def test_undo_of_a_delete_creates_the_old_fields_under_a_new_id(
    invoke: Invoke, backend: LocalBackend, written: Journal
) -> None:
    record, _ = created(backend, written, contact="c_9")
    backend.conversations.update(record["id"], {"is_muted": True, "archived_at": 1700000000})
    before, entry = deleted(backend, written, record["id"])
    [row] = invoke("undo", entry["entry"], "-o", "json").ok().json()
    new_id = row["id"]
    assert row["operation"] == "create" and row["stands_for"] == record["id"]
    made = backend.conversations.retrieve(new_id)
    fields = described.settable(RESOURCES["conversations"])
    assert {k: made[k] for k in fields} == {k: before[k] for k in fields}  # type: ignore[literal-required]
    assert new_id != record["id"] and not exists(backend, record["id"])


def test_a_record_changed_since_is_left_alone_unless_forced(
    invoke: Invoke, backend: LocalBackend, written: Journal
) -> None:
    record, entry = created(backend, written)
    backend.conversations.update(record["id"], {"is_pinned": True})
    result = invoke("undo", entry["entry"])
    assert result.code == 1 and result.stdout == ""
    assert f"{entry['entry']}: {record['id']} changed since it was created (is_pinned)" in (
        result.stderr
    )
    assert "--force" in result.stderr and exists(backend, record["id"])
    invoke("undo", entry["entry"], "--force").ok()
    assert not exists(backend, record["id"])


def test_an_update_is_undone_on_its_own_fields_and_another_writer_s_change_is_kept(
    invoke: Invoke, backend: LocalBackend, written: Journal
) -> None:
    record, _ = created(backend, written)
    _, entry = updated(backend, written, record["id"], {"is_muted": True}, set=["is_muted"])
    backend.conversations.update(record["id"], {"is_pinned": True})
    invoke("undo", entry["entry"]).ok()
    now = backend.conversations.retrieve(record["id"])
    assert (now["is_muted"], now["is_pinned"]) == (False, True)


def test_an_update_whose_own_field_changed_since_is_named_and_kept(
    invoke: Invoke, backend: LocalBackend, written: Journal
) -> None:
    record, _ = created(backend, written)
    _, entry = updated(backend, written, record["id"], {"pinned_message_id": "m_1"})
    backend.conversations.update(record["id"], {"pinned_message_id": "m_2"})
    result = invoke("undo", entry["entry"])
    assert result.code == 1 and result.stdout == ""
    assert "changed since the update (pinned_message_id): left alone" in result.stderr
    assert backend.conversations.retrieve(record["id"])["pinned_message_id"] == "m_2"


def test_an_update_reverses_only_the_fields_its_command_set(
    invoke: Invoke, backend: LocalBackend, written: Journal
) -> None:
    # The entry's before and after disagree on is_pinned too (another writer pinned it between
    # a remote read and the write): the command set is_muted alone, so only it goes back.
    record, _ = created(backend, written)
    before = dict(backend.conversations.retrieve(record["id"]))
    after = dict(backend.conversations.update(record["id"], {"is_muted": True, "is_pinned": True}))
    entry = written.add("update", record["id"], before, after, set=["is_muted"])
    [row] = invoke("undo", entry["entry"], "-o", "json").json()
    assert row["body"] == {"is_muted": False}
    now = backend.conversations.retrieve(record["id"])
    assert (now["is_muted"], now["is_pinned"]) == (False, True)


def test_unknown_and_malformed_ids_are_usage_errors(
    invoke: Invoke, backend: LocalBackend, written: Journal
) -> None:
    record, entry = created(backend, written)
    for given, words in (
        ("j_000000000000aaaaaa", "No entry j_000000000000aaaaaa in the journal"),
        ("r_000000000000aaaaaa", "No entry r_000000000000aaaaaa in the journal"),
        ("conv_X", "'conv_X' is not an entry id (j_...) or a run id (r_...)"),
    ):
        result = invoke("undo", entry["entry"], given)
        assert result.code == 2, result.stderr
        assert words in result.stderr
    assert exists(backend, record["id"])
    assert invoke("undo").code == 2


def test_entries_written_elsewhere_are_refused_naming_them(
    invoke: Invoke, backend: LocalBackend, written: Journal
) -> None:
    record, here = created(backend, written)
    _, there = created(backend, written, target="/elsewhere/other.db")
    result = invoke("undo", here["entry"], there["entry"])
    assert result.code == 2
    assert f"{there['entry']} (profile default (local /elsewhere/other.db))" in result.stderr
    assert here["entry"] not in result.stderr.split("written elsewhere")[0]
    assert exists(backend, record["id"])


def test_last_undoes_every_entry_of_the_last_command_here(
    invoke: Invoke, backend: LocalBackend, written: Journal
) -> None:
    first, _ = created(backend, written)
    run = journal.new_id("r_")
    second, _ = created(backend, written, run=run)
    third, _ = created(backend, written, run=run)
    created(backend, written, target="/elsewhere/other.db")  # newer, but not here
    rows = invoke("undo", "--last", "-o", "json").ok().json()
    assert [r["id"] for r in rows] == [third["id"], second["id"]]  # newest first
    assert exists(backend, first["id"])
    assert not exists(backend, second["id"]) and not exists(backend, third["id"])


def test_last_n_counts_commands_and_skips_those_undone(
    invoke: Invoke, backend: LocalBackend, written: Journal
) -> None:
    a, _ = created(backend, written)
    b, _ = created(backend, written)
    c, c_entry = created(backend, written)
    backend.conversations.delete(c["id"])
    # undo's own run, which undid the last command: --last passes over both.
    written.add("delete", c["id"], dict(c), None, undoes=c_entry["entry"])
    result = invoke("undo", "--last", "3", "-o", "json").ok()
    assert [r["id"] for r in result.json()] == [b["id"], a["id"]]
    assert "Only 2 commands to undo here." in result.stderr
    result = invoke("undo", "--last")
    assert result.code == 1 and "Nothing to undo" in result.stderr


@pytest.mark.parametrize("given", [["0"], ["x"], ["1", "2"], ["10001"]])
def test_last_takes_one_number_of_commands(
    invoke: Invoke, written: Journal, given: list[str]
) -> None:
    result = invoke("undo", "--last", *given)
    assert result.code == 2 and "--last takes" in result.stderr


def test_an_entry_undone_already_is_refused(
    invoke: Invoke, backend: LocalBackend, written: Journal
) -> None:
    record, entry = created(backend, written)
    undoing = written.add("delete", record["id"], dict(record), None, undoes=entry["entry"])
    backend.conversations.delete(record["id"])
    result = invoke("undo", entry["entry"])
    assert result.code == 1
    assert f"{entry['entry']}: already undone by {undoing['entry']}." in result.stderr


def test_named_api_requests_are_refused_and_failures_skipped(
    invoke: Invoke, backend: LocalBackend, written: Journal
) -> None:
    api = written.add("api", None, None, None, resource=None, method="PUT", path="/v1/x")  # type: ignore[arg-type]
    failed = written.add("update", "conv_X", None, None, status="failed")
    result = invoke("undo", api["entry"], failed["entry"])
    assert result.code == 1
    assert "an `api` request (PUT /v1/x) cannot be undone" in result.stderr
    assert f"{failed['entry']}: its update failed: skipped (undo puts back only" in result.stderr


def test_dry_run_writes_nothing(invoke: Invoke, backend: LocalBackend, written: Journal) -> None:
    record, entry = created(backend, written)
    result = invoke("undo", entry["entry"], "--dry-run").ok()
    assert result.lines() == [f"would delete {record['id']} (undoes {entry['entry']})"]
    assert "Nothing was written" in result.stderr
    assert exists(backend, record["id"])


def test_max_affected_refuses_before_any_write(
    invoke: Invoke, backend: LocalBackend, written: Journal
) -> None:
    run = journal.new_id("r_")
    records = [created(backend, written, run=run)[0] for _ in range(3)]
    result = invoke("undo", run, "--max-affected", "2")
    assert result.code == 2 and "3 records, more than --max-affected 2" in result.stderr
    assert all(exists(backend, r["id"]) for r in records)
    invoke("undo", run, "--max-affected", "3").ok()
    assert not any(exists(backend, r["id"]) for r in records)


def test_a_bad_journal_line_is_named_and_the_rest_is_read(
    invoke: Invoke, backend: LocalBackend, written: Journal
) -> None:
    record, entry = created(backend, written)
    with written.path.open("ab") as f:
        f.write(b"\xff\xfe not json\n")
    result = invoke("undo", entry["entry"])
    assert result.code == 0, result.stderr
    assert f"The journal {written.path} line 2: not UTF-8, skipped." in result.stderr
    assert not exists(backend, record["id"])


def test_create_update_delete_of_one_record_undone_together_leave_it_gone(
    invoke: Invoke, backend: LocalBackend, written: Journal
) -> None:
    run = journal.new_id("r_")
    record, _ = created(backend, written, run=run)
    updated(backend, written, record["id"], {"is_muted": True}, run=run)
    deleted(backend, written, record["id"], run=run)
    rows = invoke("undo", run, "-o", "json").ok().json()
    assert [r["operation"] for r in rows] == ["create", "update", "delete"]
    new_id = rows[0]["id"]
    assert [r["id"] for r in rows] == [new_id] * 3
    assert all(r["stands_for"] == record["id"] for r in rows)
    assert not exists(backend, new_id) and not exists(backend, record["id"])


def test_a_command_s_failed_and_api_entries_are_skipped_with_one_note_each(
    invoke: Invoke, backend: LocalBackend, written: Journal
) -> None:
    run = journal.new_id("r_")
    record, _ = created(backend, written, run=run)
    for _ in range(3):
        written.add("create", None, None, None, run=run, status="failed")
    written.add("api", None, None, None, run=run, resource=None, method="POST", path="/v1/x")  # type: ignore[arg-type]
    result = invoke("undo", "--last").ok()
    assert not exists(backend, record["id"])
    assert result.stderr.splitlines() == [
        "Skipped 1 entry: `api` requests (convrisk cannot undo them; see `convrisk history`).",
        "Skipped 3 entries: their create failed (undo puts back only what the service confirmed).",
    ]


def old_id(prefix: str, hours_ago: float) -> str:
    """An entry or run id made `hours_ago` hours ago."""
    import os
    import time

    ms = int((time.time() - hours_ago * 3600) * 1000)
    return f"{prefix}{ms:012x}{os.urandom(3).hex()}"


def test_the_journal_is_read_back_only_as_far_as_the_choice_needs(
    invoke: Invoke, backend: LocalBackend, written: Journal
) -> None:
    written.path.parent.mkdir(parents=True, exist_ok=True)
    written.path.write_bytes(b"not json, three hours old\n")
    run = old_id("r_", 3)
    old, _ = created(backend, written, run=run, entry=old_id("j_", 3))
    recent, _ = created(backend, written)
    result = invoke("undo", "--last").ok()
    assert "line 1" not in result.stderr  # three hours back: not read
    assert not exists(backend, recent["id"]) and exists(backend, old["id"])
    # An old entry named is found however far back it is (and the bad line is named on the way).
    again = invoke("undo", run).ok()
    assert f"The journal {written.path} line 1: not JSON, skipped." in again.stderr
    assert not exists(backend, old["id"])


def test_last_takes_every_entry_of_a_command_whose_lines_interleave_with_another(
    invoke: Invoke, backend: LocalBackend, written: Journal
) -> None:
    long_run, short_run = journal.new_id("r_"), journal.new_id("r_")
    first, _ = created(backend, written, run=long_run)
    other, _ = created(backend, written, run=short_run)
    last, _ = created(backend, written, run=long_run)  # the long command ended last
    rows = invoke("undo", "--last", "-o", "json").ok().json()
    assert [r["id"] for r in rows] == [last["id"], first["id"]]
    assert exists(backend, other["id"])


def test_a_relative_db_is_the_file_it_named_where_the_write_ran(
    invoke: Invoke, written: Journal, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, other = tmp_path / "first", tmp_path / "other"
    first.mkdir()
    other.mkdir()
    monkeypatch.chdir(first)
    id = invoke("--db", "x.db", "conv", "create", "--contact-id", "c", "-o", "id").ok().stdout
    invoke("--db", "x.db", "conv", "delete", id.strip(), "--yes").ok()
    monkeypatch.chdir(other)  # the same words name another file here: not where it was deleted
    result = invoke("--db", "x.db", "undo", "--last")
    assert result.code == 1 and f"(local {other / 'x.db'})" in result.stderr
    assert not (other / "x.db").exists()  # nothing was made there
    monkeypatch.chdir(first)
    [row] = invoke("--db", "x.db", "undo", "--last", "-o", "json").ok().json()
    assert (row["operation"], row["stands_for"]) == ("create", id.strip())


def test_what_is_already_as_undo_would_leave_it_needs_nothing(
    invoke: Invoke, backend: LocalBackend, written: Journal
) -> None:
    gone, made = created(backend, written)
    backend.conversations.delete(gone["id"])
    record, _ = created(backend, written)
    _, changed = updated(backend, written, record["id"], {"is_muted": True})
    backend.conversations.update(record["id"], {"is_muted": False})  # put back by hand
    result = invoke("undo", made["entry"], changed["entry"], "-o", "json").ok()
    assert result.json() == []
    assert f"{made['entry']}: {gone['id']} is gone already: nothing to undo." in result.stderr
    assert f"{record['id']} is as it was before the update already" in result.stderr


def test_a_deleted_id_that_exists_again_is_compared_with_the_record_deleted(
    invoke: Invoke, backend: LocalBackend, written: Journal
) -> None:
    record, _ = created(backend, written)
    # The journal says it was deleted, yet the id is there (a service restored it).
    entry = written.add("delete", record["id"], dict(record), None)
    same = invoke("undo", entry["entry"]).ok()
    assert f"{record['id']} exists again as it was: nothing to undo." in same.stderr
    backend.conversations.update(record["id"], {"is_pinned": True})
    changed = invoke("undo", entry["entry"])
    assert changed.code == 1
    assert "changed since the delete (it exists again) (is_pinned)" in changed.stderr
    [row] = invoke("undo", entry["entry"], "--force", "-o", "json").ok().json()
    assert (row["operation"], row["id"], row["body"]) == (
        "update",
        record["id"],
        {"is_pinned": False},
    )
    assert backend.conversations.retrieve(record["id"])["is_pinned"] is False


def test_an_entry_without_its_records_cannot_be_undone(
    invoke: Invoke, backend: LocalBackend, written: Journal
) -> None:
    record, _ = created(backend, written)
    entry = written.add("update", record["id"], None, dict(record))
    result = invoke("undo", entry["entry"])
    assert result.code == 1
    assert "lacks the record before or after it: cannot undo it." in result.stderr


def test_with_the_journal_off_undo_has_nothing_to_read(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONVRISK_JOURNAL", "off")
    result = invoke("undo", "--last")
    assert result.code == 2 and "The journal is off (CONVRISK_JOURNAL=off)" in result.stderr


def test_refusals_are_json_lines_on_stderr_with_json_output(
    invoke: Invoke, backend: LocalBackend, written: Journal
) -> None:
    import json

    record, entry = created(backend, written)
    backend.conversations.update(record["id"], {"is_muted": True})
    result = invoke("undo", entry["entry"], "-o", "json")
    assert result.code == 1 and result.json() == []
    [error] = [json.loads(line)["error"] for line in result.stderr.splitlines()]
    assert error["type"] == "undo_refused" and entry["entry"] in error["message"]


def test_an_undo_of_a_delete_cut_short_after_its_create_is_finished_on_that_record(
    invoke: Invoke, backend: LocalBackend, written: Journal
) -> None:
    record, _ = created(backend, written)
    backend.conversations.update(record["id"], {"is_muted": True, "is_pinned": True})
    _, entry = deleted(backend, written, record["id"])
    # The journal as a run killed between its create and its update left it.
    made = backend.conversations.create({"contact_id": record["contact_id"]})
    written.add("create", made["id"], None, dict(made), undoes=entry["entry"], unit="started")
    [row] = invoke("undo", entry["entry"], "-o", "json").ok().json()
    assert (row["id"], row["stands_for"], row["status"]) == (made["id"], record["id"], "undone")
    [only] = backend.conversations.list()["data"]
    assert (only["id"], only["is_muted"], only["is_pinned"]) == (made["id"], True, True)
    again = invoke("undo", entry["entry"])
    assert again.code == 1 and "already undone by" in again.stderr


def cut_short(store: LocalBackend, written: Journal, **where: Any) -> tuple[Any, Any, Any]:
    """A muted record deleted, and the journal as an undo killed between the create that made
    it anew and the update of the fields a create does not take left it: (the record deleted,
    the delete's entry, the record made anew). `where`: the entries' backend and target."""
    record = store.conversations.create({"contact_id": "c_1"})
    before = dict(store.conversations.update(record["id"], {"is_muted": True}))
    store.conversations.delete(record["id"])
    entry = written.add("delete", record["id"], before, None, **where)
    made = store.conversations.create({"contact_id": "c_1"})
    written.add(
        "create", made["id"], None, dict(made), undoes=entry["entry"], unit="started", **where
    )
    return before, entry, made


def test_finishing_a_unit_cut_short_leaves_a_field_another_writer_set_since_unless_forced(
    invoke: Invoke, backend: LocalBackend, written: Journal
) -> None:
    _, entry, made = cut_short(backend, written)
    backend.conversations.update(made["id"], {"is_pinned": True})  # another writer, after the kill
    result = invoke("undo", entry["entry"])
    assert result.code == 1 and result.stdout == ""
    assert "changed since it was made anew as" in result.stderr and "(is_pinned)" in result.stderr
    now = backend.conversations.retrieve(made["id"])
    assert (now["is_muted"], now["is_pinned"]) == (False, True)  # nothing written
    [row] = invoke("undo", entry["entry"], "--force", "-o", "json").ok().json()
    assert row["id"] == made["id"]
    now = backend.conversations.retrieve(made["id"])
    assert (now["is_muted"], now["is_pinned"]) == (True, False)  # the deleted record's values


def test_a_dry_run_of_a_unit_cut_short_whose_record_was_deleted_says_what_the_run_does(
    invoke: Invoke, backend: LocalBackend, written: Journal
) -> None:
    _, entry, made = cut_short(backend, written)
    [planned] = invoke("undo", entry["entry"], "--dry-run", "-o", "json").ok().json()
    assert (planned["id"], planned["status"]) == (made["id"], "planned")  # the id it goes to
    backend.conversations.delete(made["id"])
    dry = invoke("undo", entry["entry"], "--dry-run", "-o", "json")
    real = invoke("undo", entry["entry"], "-o", "json")
    assert dry.code == real.code == 1 and dry.json() == real.json() == []
    gone = f"{made['id']}, made anew for"
    assert gone in dry.stderr and gone in real.stderr
    assert "0 writes planned, 1 refused" in dry.stderr
    assert backend.conversations.list()["data"] == []


def test_as_curl_of_a_unit_cut_short_prints_the_update_of_the_record_it_made(
    invoke: Invoke, backend: LocalBackend, written: Journal
) -> None:
    url = "http://127.0.0.1:9"
    _, entry, made = cut_short(backend, written, backend="remote", target=url)
    result = invoke("--base-url", url, "--as-curl", "undo", entry["entry"])
    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [line.split()[:4] for line in lines] == [
        ["curl", "-X", "GET", f"{url}/v1/conversations/{made['id']}"],
        ["curl", "-X", "PUT", f"{url}/v1/conversations/{made['id']}"],
    ]  # no second create
    assert '"is_muted":true' in lines[1]


# -- undo after real writes through the command line, on both backends (the variants of
# tests/e2e/test_undo.py, whose tests run the installed script once each) ---------------------


def _journaled(twin: Twin) -> Path:
    """Point the journal into the test's folder; its path."""
    path = twin.home / "journal.jsonl"
    twin.env["CONVRISK_JOURNAL"] = str(path)
    return path


def _entries(path: Path) -> list[journal.Entry]:
    """The journal's entries, oldest first (a line that is not one fails the test)."""
    read = list(journal.read(path))
    assert all(not isinstance(item, journal.Problem) for item in read), read
    return read  # type: ignore[return-value]


def _ok(twin: Twin, *args: str, input: str | None = None) -> str:
    """Run convrisk, which must succeed; its stdout."""
    result = twin.run(*args, input=input)
    assert result.code == 0, result.stderr
    return result.stdout


def _record(twin: Twin, resource: str, id: str) -> dict[str, Any] | None:
    """A record as the database holds it, or None when it is gone."""
    from convrisk.api_client.errors import NotFoundError

    try:
        return dict(getattr(twin.store, resource).retrieve(id))
    except NotFoundError:
        return None


def _settable(resource: str, row: dict[str, Any]) -> dict[str, Any]:
    """The fields of a record that a client sets (the service moves the others itself)."""
    return {f.name: row.get(f.name) for f in RESOURCES[resource].writable()}  # type: ignore[index]


def test_undo_of_a_create_removes_the_record(twin: Twin) -> None:
    _journaled(twin)
    id = _ok(twin, "conv", "create", "--contact-id", "c_1", "-o", "id").strip()
    [row] = json.loads(_ok(twin, "undo", "--last", "-o", "json"))
    assert (row["operation"], row["id"], row["status"]) == ("delete", id, "undone")
    assert _record(twin, "conversations", id) is None


@pytest.mark.parametrize(
    ("group", "resource", "make", "change"),
    [
        (
            "conv",
            "conversations",
            ["--contact-id", "c_1"],
            ["--mute", "--pin", "--pinned-message-id", "m_1", "--archived-at", "1700000000"],
        ),
        (
            "risk",
            "risk_profiles",
            ["--customer-id", "cus_1", "--profile-type", "moderate", "--score", "72",
             "--details", '{"a": [1, 2]}'],
            ["--profile-type", "aggressive", "--score", "9.5", "--details", '{"b": null}'],
        ),
    ],
)  # fmt: skip
def test_undo_of_an_update_puts_every_field_back(
    twin: Twin,
    group: str,
    resource: str,
    make: list[str],
    change: list[str],
) -> None:
    _journaled(twin)
    id = _ok(twin, group, "create", *make, "-o", "id").strip()
    before = _record(twin, resource, id)
    _ok(twin, group, "update", id, *change)
    assert _record(twin, resource, id) != before
    [row] = json.loads(_ok(twin, "undo", "--last", "-o", "json"))
    assert (row["operation"], row["id"]) == ("update", id)
    after = _record(twin, resource, id)
    assert after is not None and before is not None
    for name in RESOURCES[resource].names():  # type: ignore[index]
        if name != "updated_at":  # the undo is an update: the service moves its time
            assert after[name] == before[name], name


@pytest.mark.parametrize(
    ("group", "resource", "make", "change", "writes"),
    [
        (
            "conv",
            "conversations",
            ["--group-id", "g_1"],
            ["--mute", "--archived-at", "1700000000"],
            ["create", "update"],  # a create does not take is_muted or archived_at
        ),
        (
            "risk",
            "risk_profiles",
            ["--customer-id", "cus_1", "--profile-type", "moderate", "--score", "72"],
            ["--details", '{"x": [1, {"y": null}]}'],
            ["create"],
        ),
    ],
)
def test_undo_of_a_delete_makes_a_new_record_with_the_old_fields(
    twin: Twin,
    group: str,
    resource: str,
    make: list[str],
    change: list[str],
    writes: list[str],
) -> None:
    path = _journaled(twin)
    old = _ok(twin, group, "create", *make, "-o", "id").strip()
    _ok(twin, group, "update", old, *change)
    before = _record(twin, resource, old)
    assert before is not None
    _ok(twin, group, "delete", old, "--yes")
    deleted = _entries(path)[-1]
    result = twin.run("undo", "--last")
    assert result.code == 0, result.stderr
    [line] = result.stdout.splitlines()
    new = line.split()[1]
    assert line.startswith(f"create {new} in place of {old}: ")
    assert line.endswith(f"(undoes {deleted['entry']})")
    made = _record(twin, resource, new)
    assert new != old and made is not None and _record(twin, resource, old) is None
    assert _settable(resource, made) == _settable(resource, before)
    # The journal says which old id the new record stands for, and which entry it undoes.
    undoing = [e for e in _entries(path) if e.get("undoes") == deleted["entry"]]
    assert [e["operation"] for e in undoing] == writes
    assert all(e["id"] == new and e.get("stands_for") == old for e in undoing)


def test_a_dry_run_of_undoing_a_delete_names_the_old_id_not_none(twin: Twin) -> None:
    path = _journaled(twin)
    old = _ok(twin, "conv", "create", "--contact-id", "c_1", "-o", "id").strip()
    _ok(twin, "conv", "delete", old, "--yes")
    deleted = _entries(path)[-1]
    line = _ok(twin, "undo", "--last", "--dry-run")
    assert line.startswith(f"would create a new record in place of {old}: "), line
    [planned] = [
        json.loads(x) for x in _ok(twin, "undo", "--last", "--dry-run", "-o", "jsonl").split()
    ]
    # The old id is what the new record stands for, not the id it will have.
    assert (planned["id"], planned["stands_for"]) == (None, old)
    assert planned["entry"] == deleted["entry"]
    assert _ok(twin, "undo", "--last", "--dry-run", "-o", "id") == ""


def test_undo_last_after_an_api_write_refuses_it_and_leaves_the_older_command_alone(
    twin: Twin,
) -> None:
    path = _journaled(twin)
    made = ["--customer-id", "cus_1", "--profile-type", "moderate", "--score", "5"]
    kept = _ok(twin, "risk", "create", *made, "-o", "id").strip()
    _ok(twin, "risk", "update", kept, "--score", "9")  # meant
    gone = _ok(twin, "conv", "create", "--contact-id", "c_1", "-o", "id").strip()
    _ok(twin, "api", "-X", "DELETE", f"/v1/conversations/{gone}")  # the mistake
    api = _entries(path)[-1]
    result = twin.run("undo", "--last")
    # The last command that wrote is the `api` one: undo says it cannot put it back, and does
    # not reach past it to undo the update before it.
    assert result.code == 1, result.stderr
    assert f"{api['entry']}: an `api` request (DELETE /v1/conversations/{gone})" in result.stderr
    assert result.stdout == ""
    now = _record(twin, "risk_profiles", kept)
    assert now is not None and now["score"] == 9
    assert not any(e.get("undoes") for e in _entries(path))


def test_an_entry_undone_twice_is_refused_the_second_time(twin: Twin) -> None:
    path = _journaled(twin)
    id = _ok(twin, "conv", "create", "--contact-id", "c_1", "-o", "id").strip()
    created = _entries(path)[-1]
    _ok(twin, "undo", created["entry"])
    undone = _entries(path)[-1]
    assert (undone["operation"], undone["id"], undone.get("undoes")) == (
        "delete",
        id,
        created["entry"],
    )
    again = twin.run("undo", created["entry"])
    assert again.code == 1
    assert f"{created['entry']}: already undone by {undone['entry']}." in again.stderr
    # and --last passes over both: nothing else was written here.
    last = twin.run("undo", "--last")
    assert last.code == 1 and "Nothing to undo" in last.stderr


def test_a_record_journaled_with_the_token_hidden_is_not_put_back_as_stars(
    twin: Twin,
) -> None:
    # The journal hides the token wherever it stands, in the records too: a record that holds
    # the token's text is journaled with `***` in its place. Undo must not write that back.
    path = _journaled(twin)
    token = twin.token or "moderate"
    twin.env["CONVRISK_TOKEN"] = token
    made = ["--customer-id", token, "--profile-type", "moderate", "--score", "50"]
    old = _ok(twin, "risk", "create", *made, "-o", "id").strip()
    _ok(twin, "risk", "delete", old, "--yes")
    deleted = _entries(path)[-1]
    assert deleted["before"] is not None and deleted["before"]["customer_id"] == "***"
    assert deleted.get("redacted") is True
    result = twin.run("undo", "--last")
    assert result.code == 1, result.stdout
    assert f"{deleted['entry']}: the journal holds {old} with the token's text hidden" in (
        result.stderr
    )
    assert result.stdout == "" and twin.count("risk_profiles") == 0
    assert all(not e.get("undoes") for e in _entries(path))


@pytest.mark.e2e  # slow: about a second, or more (the quick loop leaves it out)
def test_undo_of_a_1000_record_import_puts_the_store_back(twin: Twin) -> None:
    _journaled(twin)
    store = twin.store.conversations
    kept: list[dict[str, Any]] = [dict(store.create({"contact_id": f"c_{n}"})) for n in range(300)]
    for row in kept[::3]:
        store.update(row["id"], {"is_muted": True})
    earlier = {row["id"]: dict(store.retrieve(row["id"])) for row in kept}
    lines = [
        json.dumps({"id": row["id"], "is_muted": n % 2 == 0, "archived_at": 1700000000 + n})
        for n, row in enumerate(kept)
    ]
    lines += [json.dumps({"group_id": f"g_{n}"}) for n in range(700)]
    _ok(twin, "conv", "import", "-", input="\n".join(lines) + "\n")
    assert twin.count("conversations") == 1000
    started = time.perf_counter()
    result = twin.run("undo", "--last", "-o", "jsonl")
    took = time.perf_counter() - started
    assert result.code == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(rows) == 1000 and {r["status"] for r in rows} == {"undone"}
    now = {row["id"]: dict(row) for row in _every(twin)}
    assert now.keys() == earlier.keys()  # the 700 created are gone, nothing else is
    for id, was in earlier.items():
        assert now[id] == was, id  # field by field, times included
    print(f"undo of a 1,000-record import ({twin.name}): {took:.2f} s")


def _every(twin: Twin) -> list[dict[str, Any]]:
    """Every conversation the database holds (at most 100,000)."""
    rows: list[dict[str, Any]] = []
    cursor = None
    for _ in range(1000):
        page = twin.store.conversations.list(limit=100, starting_after=cursor)
        rows += [dict(row) for row in page["data"]]
        if not page["has_more"]:
            return rows
        cursor = page["data"][-1]["id"]
    raise AssertionError("more than 100,000 conversations")


def test_undo_is_refused_on_a_read_only_profile(twin: Twin) -> None:
    _journaled(twin)
    id = _ok(twin, "conv", "create", "--contact-id", "c_1", "-o", "id").strip()
    _ok(twin, "config", "set", "read_only", "true")
    result = twin.run("undo", "--last")
    assert result.code == 2
    assert "The profile 'default' is read-only" in result.stderr
    assert _record(twin, "conversations", id) is not None
    # --dry-run writes nothing: it is allowed, and shows what undo would do.
    planned = twin.run("undo", "--last", "--dry-run")
    assert planned.code == 0, planned.stderr
    assert planned.stdout.startswith(f"would delete {id} ")


def test_undo_on_a_protected_profile_needs_yes_without_a_terminal(twin: Twin) -> None:
    path = _journaled(twin)
    ids = _ok(twin, "conv", "import", "-", input='{"contact_id": "a"}\n{"contact_id": "b"}\n')
    _ok(twin, "config", "set", "protected", "true")
    refused = twin.run("undo", "--last")
    assert refused.code == 2 and "Pass --yes" in refused.stderr
    assert twin.count("conversations") == 2
    before = len(_entries(path))
    done = twin.run("undo", "--last", "--yes")
    assert done.code == 0, done.stderr
    assert "Protected profile 'default'" in done.stderr and ": 2 records." in done.stderr
    assert twin.count("conversations") == 0 and len(ids.splitlines()) == 2
    assert len(_entries(path)) == before + 2  # the two deletes, journaled


def test_max_affected_and_dry_run_write_nothing(twin: Twin) -> None:
    path = _journaled(twin)
    lines = "".join(f'{{"contact_id": "c_{n}"}}\n' for n in range(5))
    _ok(twin, "conv", "import", "-", input=lines)
    written = len(_entries(path))
    over = twin.run("undo", "--last", "--max-affected", "4")
    assert over.code == 2
    assert "5 records, more than --max-affected 4; nothing was sent." in over.stderr
    planned = twin.run("undo", "--last", "--dry-run", "-o", "jsonl")
    assert planned.code == 0, planned.stderr
    assert [json.loads(line)["status"] for line in planned.stdout.splitlines()] == ["planned"] * 5
    assert twin.count("conversations") == 5 and len(_entries(path)) == written
    _ok(twin, "undo", "--last", "--max-affected", "5")
    assert twin.count("conversations") == 0


def test_a_record_changed_since_is_named_and_kept_unless_forced(twin: Twin) -> None:
    _journaled(twin)
    id = _ok(twin, "conv", "create", "--contact-id", "c_1", "-o", "id").strip()
    _ok(twin, "conv", "update", id, "--pin")  # the last command: undo it, then the create
    _ok(twin, "undo", "--last")
    _ok(twin, "conv", "update", id, "--mute")
    _ok(twin, "undo", "--last")
    _ok(twin, "conv", "update", id, "--archive")  # and not undone: the create is refused
    journal_entries = _entries(twin.home / "journal.jsonl")
    create = next(e for e in journal_entries if e["operation"] == "create")
    refused = twin.run("undo", create["entry"])
    assert refused.code == 1
    assert f"{create['entry']}: {id} changed since it was created (archived_at)" in refused.stderr
    assert _record(twin, "conversations", id) is not None
    _ok(twin, "undo", create["entry"], "--force")
    assert _record(twin, "conversations", id) is None


def test_unknown_entries_and_entries_written_elsewhere_are_usage_errors(twin: Twin) -> None:
    path = _journaled(twin)
    here = _ok(twin, "conv", "create", "--contact-id", "c_1", "-o", "id").strip()
    elsewhere = {"CONVRISK_DB": str(twin.home / "other.db"), "CONVRISK_BASE_URL": None}
    made = twin.run("conv", "create", "--group-id", "g", **elsewhere, CONVRISK_TOKEN=None)
    assert made.code == 0, made.stderr
    there = _entries(path)[-1]
    refused = twin.run("undo", _entries(path)[0]["entry"], there["entry"])
    assert refused.code == 2
    assert f"{there['entry']} (profile default (local {twin.home / 'other.db'}))" in refused.stderr
    unknown = twin.run("undo", "j_000000000000abcdef")
    assert unknown.code == 2 and "No entry j_000000000000abcdef" in unknown.stderr
    assert _record(twin, "conversations", here) is not None
    # --last passes over the other database's command: it undoes the create made here.
    _ok(twin, "undo", "--last")
    assert _record(twin, "conversations", here) is None


def test_undo_on_a_protected_profile_asks_for_the_count_on_a_terminal(
    twin: Twin, terminal: Callable[..., None]
) -> None:
    # On a real pseudo-terminal, once, in tests/e2e/test_undo.py.
    _journaled(twin)
    _ok(twin, "conv", "import", "-", input='{"contact_id": "a"}\n{"contact_id": "b"}\n')
    _ok(twin, "config", "set", "protected", "true")
    terminal("stdin", "stdout", "stderr")
    result = twin.run("undo", "--last", input="2\n")
    assert result.code == 0, result.stderr
    assert "Type the number of records (2)" in result.stderr
    assert "to undo journal entries" in result.stderr
    assert "(undoes " in result.stdout
    assert twin.count("conversations") == 0


def test_as_curl_prints_the_check_and_the_write_and_sends_nothing(twin: Twin) -> None:
    path = _journaled(twin)
    kept = _ok(twin, "conv", "create", "--contact-id", "c_1", "-o", "id").strip()
    gone = _ok(twin, "conv", "create", "--group-id", "g_1", "-o", "id").strip()
    _ok(twin, "conv", "delete", gone, "--yes")
    _ok(twin, "config", "set", "read_only", "true")  # printing a request is not a write
    written = _entries(path)
    result = twin.run("undo", "--last", "3", "--as-curl")
    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    # Each write after the read that checks its record, right before it.
    assert [line.split()[:3] for line in lines] == [
        ["curl", "-X", "GET"],  # the deleted record: still gone?
        ["curl", "-X", "POST"],  # the deleted record made anew
        ["curl", "-X", "GET"],  # the record created first: still as created?
        ["curl", "-X", "DELETE"],  # the record created first, removed
    ]
    # The undo of gone's create goes to the id the POST would answer: not printed, said so.
    assert (
        "--as-curl: not printed, as they go to the id a create would answer: 1 write to a "
        "record made anew and the update of the fields a create does not take (1 record)."
    ) in result.stderr
    assert lines[0].split()[3].endswith(f"/v1/conversations/{gone}")
    assert f"'Idempotency-Key: undo-{written[-1]['entry']}'" in lines[1]
    assert """--data-binary '{"group_id":"g_1"}'""" in lines[1]
    assert lines[2].split()[3].endswith(f"/v1/conversations/{kept}")
    assert lines[3].split()[3].endswith(f"/v1/conversations/{kept}")
    assert "4 requests printed as curl command lines; nothing was sent." in result.stderr
    assert _entries(path) == written
    assert _record(twin, "conversations", kept) is not None
    assert _record(twin, "conversations", gone) is None and twin.count("conversations") == 1
