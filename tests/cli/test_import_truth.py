"""Import reports what it did (issue 18, item 1): a record the service answered from an earlier
identical request is `replayed`, never `created`; a dry run says `would_replay`. In-process on the
local database and against a serve over HTTP; the installed script runs each once against
`convrisk serve` (tests/e2e/test_import_truth.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .e2e_twin import Twin
from .e2e_twin import twin as twin  # a fixture: each test on the local db and on serve


def results(stdout: str) -> list[dict[str, Any]]:
    """The JSON-lines results of an import."""
    return [json.loads(line) for line in stdout.splitlines()]


def contacts(twin: Twin) -> list[str]:
    """The contact ids of every stored conversation, sorted."""
    return sorted(
        str(c.get("contact_id")) for c in twin.store.conversations.list(limit=100)["data"]
    )


def test_tuesdays_file_with_mondays_line_reports_it_replayed(twin: Twin, tmp_path: Path) -> None:
    monday = tmp_path / "monday.jsonl"
    monday.write_text('{"contact_id":"c_777"}\n')
    tuesday = tmp_path / "tuesday.jsonl"
    tuesday.write_text('{"contact_id":"c_777"}\n{"contact_id":"c_778"}\n')
    first = twin.run("conv", "import", str(monday))
    assert first.code == 0, first.stderr
    assert first.stderr == "1 record: 1 created, 0 updated, 0 replayed, 0 failed.\n"
    second = twin.run("conv", "import", str(tuesday))
    assert second.code == 0, second.stderr
    rows = results(second.stdout)
    assert [(r["line"], r["status"]) for r in rows] == [(1, "replayed"), (2, "created")]
    assert rows[0]["id"] == results(first.stdout)[0]["id"]
    assert second.stderr.startswith("2 records: 1 created, 0 updated, 1 replayed, 0 failed.\n")
    assert "CONVRISK_IMPORT_RUN" in second.stderr  # how to create it again on purpose
    assert contacts(twin) == ["c_777", "c_778"]


@pytest.mark.e2e  # slow: about a second, or more (the quick loop leaves it out)
def test_a_rerun_reports_every_record_replayed_and_writes_nothing(
    twin: Twin, tmp_path: Path
) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps({"contact_id": f"c_{n}"}) + "\n" for n in range(300)))
    first = twin.run("conv", "import", str(path))
    again = twin.run("conv", "import", str(path))
    assert first.code == again.code == 0, again.stderr
    assert {r["status"] for r in results(first.stdout)} == {"created"}
    assert {r["status"] for r in results(again.stdout)} == {"replayed"}
    assert [r["id"] for r in results(again.stdout)] == [r["id"] for r in results(first.stdout)]
    assert (
        again.stderr.splitlines()[0] == "300 records: 0 created, 0 updated, 300 replayed, 0 failed."
    )
    assert twin.count("conversations") == 300


def test_a_dry_run_says_would_replay_where_the_service_can_tell(twin: Twin, tmp_path: Path) -> None:
    done = tmp_path / "done.jsonl"
    done.write_text('{"contact_id":"c_1"}\n')
    made = twin.run("conv", "import", str(done), "-o", "id")
    assert made.code == 0, made.stderr
    path = tmp_path / "more.jsonl"
    path.write_text('{"contact_id":"c_1"}\n{"contact_id":"c_2"}\n')
    plan = twin.run("conv", "import", str(path), "--dry-run", "-o", "jsonl")
    assert plan.code == 0, plan.stderr
    rows = results(plan.stdout)
    if twin.remote:
        # The interface has no read-only way to ask: the service cannot tell ahead, and says so.
        assert [r["status"] for r in rows] == ["planned", "planned"]
        assert "cannot say before a create whether it would replay" in plan.stderr
        assert "2 planned (2 creates and 0 updates), 0 would_replay, 0 failed" in plan.stderr
    else:
        assert [(r["status"], r["id"]) for r in rows] == [
            ("would_replay", made.stdout.strip()),
            ("planned", None),
        ]
        assert "1 planned (1 create and 0 updates), 1 would_replay, 0 failed" in plan.stderr
        readable = twin.run("conv", "import", str(path), "--dry-run")
        assert readable.stdout.splitlines()[0].startswith(f"would replay {made.stdout.strip()}")
    assert twin.count("conversations") == 1
