"""`convrisk undo` that cannot destroy what it should protect (issue 29): a record another writer
changed while a long undo runs is kept, in-process on the local database and against a serve
over HTTP. The other writer here changes the record right after undo's first write; the
installed script, changed under by a writer in another process while it writes, is
tests/e2e/test_undo_trust.py."""

from __future__ import annotations

from typing import Any

import pytest

from convrisk.api_client.records import Created
from convrisk.cli.journal import undo_writes

from .e2e_twin import Twin
from .e2e_twin import twin as twin  # a fixture: each test on the local db and on serve


def ok(twin: Twin, *args: str, input: str | None = None) -> str:
    """Run convrisk, which must succeed; its stdout."""
    result = twin.run(*args, input=input)
    assert result.code == 0, result.stderr
    return result.stdout


@pytest.mark.e2e  # slow: about a second, or more (the quick loop leaves it out)
def test_a_record_changed_while_a_long_undo_runs_is_kept(
    twin: Twin, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Long enough that the change lands while undo writes: right after its first write, here
    # (the e2e test needs 700 over serve for its reader to block the undo part way).
    count = 300
    twin.env["CONVRISK_JOURNAL"] = str(twin.home / "journal.jsonl")
    made = twin.store.risk_profiles.create_many(
        [
            (
                {"customer_id": f"cus_{n}", "profile_type": "moderate", "score": 10,
                 "details": {}},
                None,
            )
            for n in range(count)
        ],
        stop_on_error=True,
    )  # fmt: skip
    ids = [result.record["id"] for result in made if isinstance(result, Created)]
    assert len(ids) == count
    ok(twin, "risk", "update", "-", "--score", "50", "--yes", input="\n".join(ids) + "\n")
    assert {twin.store.risk_profiles.retrieve(i)["score"] for i in ids} == {50}
    # Undo goes newest entry first: the first id is put back last. Another writer changes it
    # once undo's writes have begun.
    step = undo_writes.Undoer.step
    steps = 0

    def then_another_writer(self: undo_writes.Undoer, *args: Any) -> None:
        nonlocal steps
        step(self, *args)
        steps += 1
        if steps == 1:
            twin.store.risk_profiles.update(ids[0], {"score": 99})

    with monkeypatch.context() as patched:
        patched.setattr(undo_writes.Undoer, "step", then_another_writer)
        undo = twin.run("undo", "--last", "--yes", "-o", "jsonl", "--max-affected", "10000")
    assert undo.code == 1
    assert f"{ids[0]} changed since the update (score): left alone." in undo.stderr
    assert len(undo.stdout.splitlines()) == count - 1
    assert twin.store.risk_profiles.retrieve(ids[0])["score"] == 99
    assert {twin.store.risk_profiles.retrieve(i)["score"] for i in ids[1:]} == {10}
