"""Import after undo (issue 29, item 4): once `undo` has removed what an import created, the same
file imports those records again, and no result says `replayed` with an id that is not there.
On the local database and against `convrisk serve` the deleted record's key is forgotten and the
record made anew; a service that still replays a deleted record's key gets `gone`, exit 1.
The two-backend variants run in-process in tests/cli/test_import_after_undo.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .both_backends import Cli, isolated_env
from .both_backends import over_serve as over_serve  # a fixture: convrisk against its own serve
from .console import run
from .keeping_service import keeping_service


def results(stdout: str) -> list[dict[str, Any]]:
    """The JSON-lines results of an import."""
    return [json.loads(line) for line in stdout.splitlines()]


def five(folder: Path) -> Path:
    """A file of five conversations to create."""
    path = folder / "five.jsonl"
    path.write_text("".join(json.dumps({"contact_id": f"c_{n}"}) + "\n" for n in range(5)))
    return path


def imported(cli: Cli, path: Path) -> list[dict[str, Any]]:
    """`conv import PATH -o jsonl`, which must succeed: its results."""
    result = cli.run("conv", "import", str(path), "-o", "jsonl")
    assert result.returncode == 0, result.stderr
    return results(result.stdout)


def test_reimport_after_undo_creates_the_records_again(over_serve: Cli, tmp_path: Path) -> None:
    path = five(tmp_path)
    first = imported(over_serve, path)
    undone = over_serve.run("undo", "--last")
    assert undone.returncode == 0, undone.stderr
    assert over_serve.count("conversations") == 0
    again = over_serve.run("conv", "import", str(path), "-o", "jsonl")
    assert again.returncode == 0, again.stderr
    rows = results(again.stdout)
    assert [(r["line"], r["status"]) for r in rows] == [(n, "created") for n in range(1, 6)]
    assert not {r["id"] for r in rows} & {r["id"] for r in first}  # new records, new ids
    assert again.stderr.startswith("5 records: 5 created, 0 updated, 0 replayed, 0 failed.\n")
    for row in rows:
        got = over_serve.run("conv", "get", row["id"], "-o", "json")
        assert got.returncode == 0, got.stderr
        assert json.loads(got.stdout)["contact_id"] == f"c_{row['line'] - 1}"
    assert over_serve.count("conversations") == 5
    # The keys now hold the new records: a third run replays them, and each is there.
    third = imported(over_serve, path)
    assert [(r["status"], r["id"]) for r in third] == [("replayed", r["id"]) for r in rows]
    assert over_serve.count("conversations") == 5
    # And the records made again are undone like the first ones.
    assert over_serve.run("undo", "--last").returncode == 0
    assert over_serve.count("conversations") == 0


def test_reimport_after_deleting_some_replays_the_rest_and_makes_those_anew(
    over_serve: Cli,
    tmp_path: Path,
) -> None:
    path = five(tmp_path)
    first = imported(over_serve, path)
    for row in first[1::2]:  # lines 2 and 4
        deleted = over_serve.run("conv", "delete", row["id"], "--yes")
        assert deleted.returncode == 0, deleted.stderr
    rows = imported(over_serve, path)
    assert [r["status"] for r in rows] == ["replayed", "created", "replayed", "created", "replayed"]
    assert [r["id"] for r in rows[::2]] == [r["id"] for r in first[::2]]
    stored = {c["id"] for c in over_serve.store.conversations.list(limit=10)["data"]}
    assert {r["id"] for r in rows} == stored
    assert over_serve.count("conversations") == 5


def test_a_dry_run_after_undo_plans_the_records_anew(tmp_path: Path) -> None:
    from .both_backends import local_cli

    local = local_cli(tmp_path)
    try:
        path = five(tmp_path)
        imported(local, path)
        assert local.run("undo", "--last").returncode == 0
        plan = local.run("conv", "import", str(path), "--dry-run", "-o", "jsonl")
        assert plan.returncode == 0, plan.stderr
        assert [(r["status"], r["id"]) for r in results(plan.stdout)] == [("planned", None)] * 5
        assert "5 planned (5 creates and 0 updates), 0 would_replay" in plan.stderr
        assert local.count("conversations") == 0
    finally:
        local.close()


def _against(url: str, home: Path) -> dict[str, str]:
    return isolated_env(home, CONVRISK_BASE_URL=url, CONVRISK_TOKEN="t" * 20)


def test_a_service_that_replays_a_deleted_records_key_gets_gone_exit_1(tmp_path: Path) -> None:
    path = five(tmp_path)
    with keeping_service() as (url, store):
        env = _against(url, tmp_path / "home")
        first = run(env, "conv", "import", str(path), "-o", "jsonl")
        assert first.returncode == 0, first.stderr
        made = [r["id"] for r in results(first.stdout)]
        undone = run(env, "undo", "--last")
        assert undone.returncode == 0, undone.stderr
        assert store.records == {}  # the service replays the keys of records it has not
        again = run(env, "conv", "import", str(path), "-o", "jsonl")
        gets = [ident for ident in made if run(env, "conv", "get", ident).returncode == 3]
    assert again.returncode == 1, again.stderr
    rows = results(again.stdout)
    assert [(r["line"], r["status"], r["id"]) for r in rows] == [
        (n, "gone", None) for n in range(1, 6)
    ]
    assert "replayed" not in [r["status"] for r in rows]
    for row, ident in zip(rows, made, strict=True):
        assert row["error"]["message"].startswith(f"{ident}, which an earlier import")
        assert "was deleted since" in row["error"]["message"]
    lines = again.stderr.splitlines()
    assert "5 records: 0 created, 0 updated, 0 replayed, 5 gone, 0 failed." in lines
    hint = next(line for line in lines if line.startswith("Gone:"))
    assert "CONVRISK_IMPORT_RUN" in hint and "only those lines" in hint
    assert gets == made  # each is really not there


def test_with_some_deleted_the_rest_is_replayed_and_those_gone(tmp_path: Path) -> None:
    path = five(tmp_path)
    with keeping_service() as (url, store):
        env = _against(url, tmp_path / "home")
        first = run(env, "conv", "import", str(path), "-o", "jsonl")
        made = [r["id"] for r in results(first.stdout)]
        assert run(env, "conv", "delete", made[0], made[3], "--yes").returncode == 0
        before = len(store.requests)
        again = run(env, "conv", "import", str(path), "-o", "jsonl")
        after = store.requests[before:]
        # -o id prints only the ids that are there.
        ids = run(env, "conv", "import", str(path), "-o", "id")
    assert again.returncode == ids.returncode == 1, again.stderr
    rows = results(again.stdout)
    assert [r["status"] for r in rows] == ["gone", "replayed", "replayed", "gone", "replayed"]
    assert [r["id"] for r in rows if r["status"] == "replayed"] == [made[1], made[2], made[4]]
    assert "5 records: 0 created, 0 updated, 3 replayed, 2 gone, 0 failed." in again.stderr
    assert ids.stdout.split() == [made[1], made[2], made[4]]
    # One POST and one GET per record, nothing written.
    assert sorted(method for method, _ in after) == ["GET"] * 5 + ["POST"] * 5


def test_a_first_import_reads_nothing_back(tmp_path: Path) -> None:
    path = five(tmp_path)
    with keeping_service() as (url, store):
        first = run(_against(url, tmp_path / "home"), "conv", "import", str(path))
    assert first.returncode == 0, first.stderr
    assert [method for method, _ in store.requests] == ["POST"] * 5


def test_a_copy_into_a_service_that_replays_a_deleted_records_key_gets_gone(
    tmp_path: Path,
) -> None:
    export = tmp_path / "export.jsonl"
    export.write_text(
        "".join(
            json.dumps({"id": f"conv_01HF7YAT00BSHDCDR4F3G8DM{n:02d}", "contact_id": f"c_{n}"})
            + "\n"
            for n in range(3)
        )
    )
    with keeping_service() as (url, store):
        env = _against(url, tmp_path / "home")
        first = run(env, "conv", "import", str(export), "--copy", "-o", "jsonl")
        assert first.returncode == 0, first.stderr
        made = [r["id"] for r in results(first.stdout)]
        assert run(env, "conv", "delete", made[1], "--yes").returncode == 0
        again = run(env, "conv", "import", str(export), "--copy", "-o", "jsonl")
        left = dict(store.records)
    assert again.returncode == 1, again.stderr
    rows = results(again.stdout)
    assert [(r["status"], r["id"]) for r in rows] == [
        ("replayed", made[0]),
        ("gone", None),
        ("replayed", made[2]),
    ]
    assert rows[1]["error"]["message"].startswith(f"{made[1]}, which an earlier import")
    assert "other fields could not be set" not in again.stderr
    assert sorted(left) == sorted([made[0], made[2]])
