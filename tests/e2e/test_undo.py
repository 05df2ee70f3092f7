"""`convrisk undo` after real writes, through the installed script against `convrisk serve`
(issue 19): a create, an update, a delete and a 1,000-record import each put back by `undo
--last`, checked record by record; an entry undone twice; what undo itself writes to the
journal. The variants (both resources, the local database too) run in-process at the end of
tests/cli/test_undo.py."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from convrisk.api_client.resources import RESOURCES
from convrisk.cli.journal import entries as journal

from .both_backends import Cli, isolated_env
from .both_backends import over_serve as over_serve  # a fixture: convrisk against its own serve
from .console import SAFETY_TIMEOUT, on_a_terminal, read_until, run


def journaled(cli: Cli) -> Path:
    """Point the journal into the test's folder; its path."""
    path = cli.home / "journal.jsonl"
    cli.env["CONVRISK_JOURNAL"] = str(path)
    return path


def entries(path: Path) -> list[journal.Entry]:
    """The journal's entries, oldest first (a line that is not one fails the test)."""
    read = list(journal.read(path))
    assert all(not isinstance(item, journal.Problem) for item in read), read
    return read  # type: ignore[return-value]


def ok(cli: Cli, *args: str, input: str | None = None) -> str:
    """Run convrisk, which must succeed; its stdout."""
    result = cli.run(*args, input=input)
    assert result.returncode == 0, result.stderr
    return result.stdout


def record(cli: Cli, resource: str, id: str) -> dict[str, Any] | None:
    """A record as the database holds it, or None when it is gone."""
    from convrisk.api_client.errors import NotFoundError

    try:
        return dict(getattr(cli.store, resource).retrieve(id))
    except NotFoundError:
        return None


def settable(resource: str, row: dict[str, Any]) -> dict[str, Any]:
    """The fields of a record that a client sets (the service moves the others itself)."""
    return {f.name: row.get(f.name) for f in RESOURCES[resource].writable()}  # type: ignore[index]


def test_undo_of_a_create_removes_the_record(over_serve: Cli) -> None:
    journaled(over_serve)
    id = ok(over_serve, "conv", "create", "--contact-id", "c_1", "-o", "id").strip()
    [row] = json.loads(ok(over_serve, "undo", "--last", "-o", "json"))
    assert (row["operation"], row["id"], row["status"]) == ("delete", id, "undone")
    assert record(over_serve, "conversations", id) is None


def test_undo_of_an_update_puts_every_field_back(over_serve: Cli) -> None:
    # A conversation, every settable field changed; a risk profile, and the local database, in
    # tests/cli/test_undo.py.
    group, resource = "conv", "conversations"
    make = ["--contact-id", "c_1"]
    change = ["--mute", "--pin", "--pinned-message-id", "m_1", "--archived-at", "1700000000"]
    journaled(over_serve)
    id = ok(over_serve, group, "create", *make, "-o", "id").strip()
    before = record(over_serve, resource, id)
    ok(over_serve, group, "update", id, *change)
    assert record(over_serve, resource, id) != before
    [row] = json.loads(ok(over_serve, "undo", "--last", "-o", "json"))
    assert (row["operation"], row["id"]) == ("update", id)
    after = record(over_serve, resource, id)
    assert after is not None and before is not None
    for name in RESOURCES[resource].names():  # type: ignore[index]
        if name != "updated_at":  # the undo is an update: the service moves its time
            assert after[name] == before[name], name


def test_undo_of_a_delete_makes_a_new_record_with_the_old_fields(over_serve: Cli) -> None:
    # A conversation, whose fields a create does not take are set by an update after it; a risk
    # profile, and the local database, in tests/cli/test_undo.py.
    group, resource = "conv", "conversations"
    make = ["--group-id", "g_1"]
    change = ["--mute", "--archived-at", "1700000000"]
    writes = ["create", "update"]  # a create does not take is_muted or archived_at
    path = journaled(over_serve)
    old = ok(over_serve, group, "create", *make, "-o", "id").strip()
    ok(over_serve, group, "update", old, *change)
    before = record(over_serve, resource, old)
    assert before is not None
    ok(over_serve, group, "delete", old, "--yes")
    deleted = entries(path)[-1]
    result = over_serve.run("undo", "--last")
    assert result.returncode == 0, result.stderr
    [line] = result.stdout.splitlines()
    new = line.split()[1]
    assert line.startswith(f"create {new} in place of {old}: ")
    assert line.endswith(f"(undoes {deleted['entry']})")
    made = record(over_serve, resource, new)
    assert new != old and made is not None and record(over_serve, resource, old) is None
    assert settable(resource, made) == settable(resource, before)
    # The journal says which old id the new record stands for, and which entry it undoes.
    undoing = [e for e in entries(path) if e.get("undoes") == deleted["entry"]]
    assert [e["operation"] for e in undoing] == writes
    assert all(e["id"] == new and e.get("stands_for") == old for e in undoing)


def test_a_dry_run_of_undoing_a_delete_names_the_old_id_not_none(over_serve: Cli) -> None:
    path = journaled(over_serve)
    old = ok(over_serve, "conv", "create", "--contact-id", "c_1", "-o", "id").strip()
    ok(over_serve, "conv", "delete", old, "--yes")
    deleted = entries(path)[-1]
    line = ok(over_serve, "undo", "--last", "--dry-run")
    assert line.startswith(f"would create a new record in place of {old}: "), line
    [planned] = [
        json.loads(x) for x in ok(over_serve, "undo", "--last", "--dry-run", "-o", "jsonl").split()
    ]
    # The old id is what the new record stands for, not the id it will have.
    assert (planned["id"], planned["stands_for"]) == (None, old)
    assert planned["entry"] == deleted["entry"]
    assert ok(over_serve, "undo", "--last", "--dry-run", "-o", "id") == ""


def test_undo_last_after_an_api_write_refuses_it_and_leaves_the_older_command_alone(
    over_serve: Cli,
) -> None:
    path = journaled(over_serve)
    made = ["--customer-id", "cus_1", "--profile-type", "moderate", "--score", "5"]
    kept = ok(over_serve, "risk", "create", *made, "-o", "id").strip()
    ok(over_serve, "risk", "update", kept, "--score", "9")  # meant
    gone = ok(over_serve, "conv", "create", "--contact-id", "c_1", "-o", "id").strip()
    ok(over_serve, "api", "-X", "DELETE", f"/v1/conversations/{gone}")  # the mistake
    api = entries(path)[-1]
    result = over_serve.run("undo", "--last")
    # The last command that wrote is the `api` one: undo says it cannot put it back, and does
    # not reach past it to undo the update before it.
    assert result.returncode == 1, result.stderr
    assert f"{api['entry']}: an `api` request (DELETE /v1/conversations/{gone})" in result.stderr
    assert result.stdout == ""
    now = record(over_serve, "risk_profiles", kept)
    assert now is not None and now["score"] == 9
    assert not any(e.get("undoes") for e in entries(path))


def test_an_entry_undone_twice_is_refused_the_second_time(over_serve: Cli) -> None:
    path = journaled(over_serve)
    id = ok(over_serve, "conv", "create", "--contact-id", "c_1", "-o", "id").strip()
    created = entries(path)[-1]
    ok(over_serve, "undo", created["entry"])
    undone = entries(path)[-1]
    assert (undone["operation"], undone["id"], undone.get("undoes")) == (
        "delete",
        id,
        created["entry"],
    )
    again = over_serve.run("undo", created["entry"])
    assert again.returncode == 1
    assert f"{created['entry']}: already undone by {undone['entry']}." in again.stderr
    # and --last passes over both: nothing else was written here.
    last = over_serve.run("undo", "--last")
    assert last.returncode == 1 and "Nothing to undo" in last.stderr


def test_a_record_journaled_with_the_token_hidden_is_not_put_back_as_stars(
    over_serve: Cli,
) -> None:
    # The journal hides the token wherever it stands, in the records too: a record that holds
    # the token's text is journaled with `***` in its place. Undo must not write that back.
    path = journaled(over_serve)
    token = over_serve.env.get("CONVRISK_TOKEN") or "moderate"
    over_serve.env["CONVRISK_TOKEN"] = token
    made = ["--customer-id", token, "--profile-type", "moderate", "--score", "50"]
    old = ok(over_serve, "risk", "create", *made, "-o", "id").strip()
    ok(over_serve, "risk", "delete", old, "--yes")
    deleted = entries(path)[-1]
    assert deleted["before"] is not None and deleted["before"]["customer_id"] == "***"
    assert deleted.get("redacted") is True
    result = over_serve.run("undo", "--last")
    assert result.returncode == 1, result.stdout
    assert f"{deleted['entry']}: the journal holds {old} with the token's text hidden" in (
        result.stderr
    )
    assert result.stdout == "" and over_serve.count("risk_profiles") == 0
    assert all(not e.get("undoes") for e in entries(path))


def test_undo_of_a_1000_record_import_puts_the_store_back(over_serve: Cli) -> None:
    journaled(over_serve)
    store = over_serve.store.conversations
    kept: list[dict[str, Any]] = [dict(store.create({"contact_id": f"c_{n}"})) for n in range(300)]
    for row in kept[::3]:
        store.update(row["id"], {"is_muted": True})
    earlier = {row["id"]: dict(store.retrieve(row["id"])) for row in kept}
    lines = [
        json.dumps({"id": row["id"], "is_muted": n % 2 == 0, "archived_at": 1700000000 + n})
        for n, row in enumerate(kept)
    ]
    lines += [json.dumps({"group_id": f"g_{n}"}) for n in range(700)]
    ok(over_serve, "conv", "import", "-", input="\n".join(lines) + "\n")
    assert over_serve.count("conversations") == 1000
    started = time.perf_counter()
    result = over_serve.run("undo", "--last", "-o", "jsonl")
    took = time.perf_counter() - started
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(rows) == 1000 and {r["status"] for r in rows} == {"undone"}
    now = {row["id"]: dict(row) for row in _every(over_serve)}
    assert now.keys() == earlier.keys()  # the 700 created are gone, nothing else is
    for id, was in earlier.items():
        assert now[id] == was, id  # field by field, times included
    print(f"undo of a 1,000-record import ({over_serve.name}): {took:.2f} s")


def _every(cli: Cli) -> list[dict[str, Any]]:
    """Every conversation the database holds (at most 100,000)."""
    rows: list[dict[str, Any]] = []
    cursor = None
    for _ in range(1000):
        page = cli.store.conversations.list(limit=100, starting_after=cursor)
        rows += [dict(row) for row in page["data"]]
        if not page["has_more"]:
            return rows
        cursor = page["data"][-1]["id"]
    raise AssertionError("more than 100,000 conversations")


def test_undo_is_refused_on_a_read_only_profile(over_serve: Cli) -> None:
    journaled(over_serve)
    id = ok(over_serve, "conv", "create", "--contact-id", "c_1", "-o", "id").strip()
    ok(over_serve, "config", "set", "read_only", "true")
    result = over_serve.run("undo", "--last")
    assert result.returncode == 2
    assert "The profile 'default' is read-only" in result.stderr
    assert record(over_serve, "conversations", id) is not None
    # --dry-run writes nothing: it is allowed, and shows what undo would do.
    planned = over_serve.run("undo", "--last", "--dry-run")
    assert planned.returncode == 0, planned.stderr
    assert planned.stdout.startswith(f"would delete {id} ")


def test_undo_on_a_protected_profile_needs_yes_without_a_terminal(over_serve: Cli) -> None:
    path = journaled(over_serve)
    ids = ok(over_serve, "conv", "import", "-", input='{"contact_id": "a"}\n{"contact_id": "b"}\n')
    ok(over_serve, "config", "set", "protected", "true")
    refused = over_serve.run("undo", "--last")
    assert refused.returncode == 2 and "Pass --yes" in refused.stderr
    assert over_serve.count("conversations") == 2
    before = len(entries(path))
    done = over_serve.run("undo", "--last", "--yes")
    assert done.returncode == 0, done.stderr
    assert "Protected profile 'default'" in done.stderr and ": 2 records." in done.stderr
    assert over_serve.count("conversations") == 0 and len(ids.splitlines()) == 2
    assert len(entries(path)) == before + 2  # the two deletes, journaled


def test_max_affected_and_dry_run_write_nothing(over_serve: Cli) -> None:
    path = journaled(over_serve)
    lines = "".join(f'{{"contact_id": "c_{n}"}}\n' for n in range(5))
    ok(over_serve, "conv", "import", "-", input=lines)
    written = len(entries(path))
    over = over_serve.run("undo", "--last", "--max-affected", "4")
    assert over.returncode == 2
    assert "5 records, more than --max-affected 4; nothing was sent." in over.stderr
    planned = over_serve.run("undo", "--last", "--dry-run", "-o", "jsonl")
    assert planned.returncode == 0, planned.stderr
    assert [json.loads(line)["status"] for line in planned.stdout.splitlines()] == ["planned"] * 5
    assert over_serve.count("conversations") == 5 and len(entries(path)) == written
    ok(over_serve, "undo", "--last", "--max-affected", "5")
    assert over_serve.count("conversations") == 0


def test_a_record_changed_since_is_named_and_kept_unless_forced(over_serve: Cli) -> None:
    journaled(over_serve)
    id = ok(over_serve, "conv", "create", "--contact-id", "c_1", "-o", "id").strip()
    ok(over_serve, "conv", "update", id, "--pin")  # the last command: undo it, then the create
    ok(over_serve, "undo", "--last")
    ok(over_serve, "conv", "update", id, "--mute")
    ok(over_serve, "undo", "--last")
    ok(over_serve, "conv", "update", id, "--archive")  # and not undone: the create is refused
    journal_entries = entries(over_serve.home / "journal.jsonl")
    create = next(e for e in journal_entries if e["operation"] == "create")
    refused = over_serve.run("undo", create["entry"])
    assert refused.returncode == 1
    assert f"{create['entry']}: {id} changed since it was created (archived_at)" in refused.stderr
    assert record(over_serve, "conversations", id) is not None
    ok(over_serve, "undo", create["entry"], "--force")
    assert record(over_serve, "conversations", id) is None


def test_unknown_entries_and_entries_written_elsewhere_are_usage_errors(over_serve: Cli) -> None:
    path = journaled(over_serve)
    here = ok(over_serve, "conv", "create", "--contact-id", "c_1", "-o", "id").strip()
    elsewhere = isolated_env(
        over_serve.home / "other", CONVRISK_DB=str(over_serve.home / "other.db")
    )
    made = run({**elsewhere, "CONVRISK_JOURNAL": str(path)}, "conv", "create", "--group-id", "g")
    assert made.returncode == 0, made.stderr
    there = entries(path)[-1]
    refused = over_serve.run("undo", entries(path)[0]["entry"], there["entry"])
    assert refused.returncode == 2
    assert (
        f"{there['entry']} (profile default (local {over_serve.home / 'other.db'}))"
        in refused.stderr
    )
    unknown = over_serve.run("undo", "j_000000000000abcdef")
    assert unknown.returncode == 2 and "No entry j_000000000000abcdef" in unknown.stderr
    assert record(over_serve, "conversations", here) is not None
    # --last passes over the other database's command: it undoes the create made here.
    ok(over_serve, "undo", "--last")
    assert record(over_serve, "conversations", here) is None


def test_undo_on_a_protected_profile_asks_for_the_count_on_a_terminal(over_serve: Cli) -> None:
    import os

    journaled(over_serve)
    ok(over_serve, "conv", "import", "-", input='{"contact_id": "a"}\n{"contact_id": "b"}\n')
    ok(over_serve, "config", "set", "protected", "true")
    child, fd = on_a_terminal(over_serve.env, "undo", "--last")
    try:
        asked = read_until(fd, b"to undo journal entries")
        assert b"Type the number of records (2)" in asked
        os.write(fd, b"2\n")
        shown = read_until(fd, b"(undoes ")
        assert child.wait(timeout=SAFETY_TIMEOUT) == 0, shown
    finally:
        os.close(fd)
        if child.poll() is None:
            child.kill()
            child.wait(timeout=SAFETY_TIMEOUT)
    assert over_serve.count("conversations") == 0


def test_as_curl_prints_the_check_and_the_write_and_sends_nothing(over_serve: Cli) -> None:
    path = journaled(over_serve)
    kept = ok(over_serve, "conv", "create", "--contact-id", "c_1", "-o", "id").strip()
    gone = ok(over_serve, "conv", "create", "--group-id", "g_1", "-o", "id").strip()
    ok(over_serve, "conv", "delete", gone, "--yes")
    ok(over_serve, "config", "set", "read_only", "true")  # printing a request is not a write
    written = entries(path)
    result = over_serve.run("undo", "--last", "3", "--as-curl")
    assert result.returncode == 0, result.stderr
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
    assert entries(path) == written
    assert record(over_serve, "conversations", kept) is not None
    assert (
        record(over_serve, "conversations", gone) is None and over_serve.count("conversations") == 1
    )
