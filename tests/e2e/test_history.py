"""`convrisk history` through the installed script: newest first, every format, --limit and
--id, and a journal with bad lines, a directory in its place, or none at all."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from .console import run
from .screen import on_screen


def journal_of(env: dict[str, str]) -> Path:
    """The default journal of convrisk run with `env` (no XDG_STATE_HOME: under HOME)."""
    return Path(env["HOME"]) / ".local" / "state" / "convrisk" / "journal.jsonl"


def ok(env: dict[str, str], *args: str) -> str:
    result = run(env, *args)
    assert result.returncode == 0, result.stderr
    return result.stdout


def written(env: dict[str, str], count: int) -> list[str]:
    """Create `count` conversations, one command each: their ids, oldest first."""
    return [
        ok(env, "conv", "create", "--contact-id", f"c_{n}", "-o", "id").strip()
        for n in range(count)
    ]


def test_newest_first_in_every_format(env: dict[str, str]) -> None:
    ids = written(env, 3)
    ok(env, "conv", "update", ids[0], "--pin")
    as_json: list[dict[str, Any]] = json.loads(ok(env, "history", "-o", "json"))
    assert [(e["operation"], e["id"]) for e in as_json] == [
        ("update", ids[0]),
        *[("create", i) for i in reversed(ids)],
    ]
    entry_ids = [e["entry"] for e in as_json]
    assert ok(env, "history", "-o", "id").split() == entry_ids
    assert [json.loads(line) for line in ok(env, "history", "-o", "jsonl").splitlines()] == as_json
    rows = list(csv.DictReader(io.StringIO(ok(env, "history", "-o", "csv"))))
    assert [(r["entry"], r["id"], r["status"]) for r in rows] == [
        (e["entry"], e["id"], "ok") for e in as_json
    ]
    assert json.loads(rows[0]["before"])["is_pinned"] is False
    piped = ok(env, "history").splitlines()  # a table, piped: TSV under a header of field names
    assert piped[0].split("\t")[:3] == ["time", "entry", "run"]
    assert [line.split("\t")[1] for line in piped[1:]] == entry_ids


def test_limit_and_the_hint_that_more_exist(env: dict[str, str]) -> None:
    written(env, 3)
    result = run(env, "history", "--limit", "2", "-o", "id")
    assert result.returncode == 0 and len(result.stdout.split()) == 2
    assert "More journal entries exist: use --all, or --limit N" in result.stderr
    every = run(env, "history", "--all", "-o", "id")
    assert len(every.stdout.split()) == 3 and every.stderr == ""
    for bad in (["--limit", "0"], ["--limit", "x"], ["--limit", "2", "--all"], ["--id", ""]):
        refused = run(env, "history", *bad)
        assert refused.returncode == 2 and refused.stderr.startswith("Error: "), bad


def test_the_default_is_twenty_entries(env: dict[str, str]) -> None:
    path = journal_of(env)
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(_entry(n)) + "\n" for n in range(25)))
    shown = ok(env, "history", "-o", "id").split()
    assert shown == [_entry(n)["entry"] for n in range(24, 4, -1)]


def test_id_picks_one_records_entries_or_one_entry(env: dict[str, str]) -> None:
    first, second = written(env, 2)
    ok(env, "conv", "update", first, "--mute")
    ok(env, "conv", "delete", second, "--yes")
    about_first = json.loads(ok(env, "history", "--id", first, "-o", "json"))
    assert [e["operation"] for e in about_first] == ["update", "create"]
    entry = about_first[0]["entry"]
    assert [e["entry"] for e in json.loads(ok(env, "history", "--id", entry, "-o", "json"))] == [
        entry
    ]
    assert json.loads(ok(env, "history", "--id", "conv_nothing", "-o", "json")) == []


def _entry(n: int) -> dict[str, Any]:
    return {
        "entry": f"j_{n:012x}abcdef",
        "run": f"r_{n:012x}abcdef",
        "time": "2026-11-25T06:15:00.123Z",
        "profile": "default",
        "backend": "local",
        "target": "/tmp/x.db",
        "argv": ["convrisk", "conv", "create"],
        "operation": "create",
        "resource": "conversations",
        "id": f"conv_{n:026d}",
        "before": None,
        "after": {"id": f"conv_{n:026d}"},
        "idempotency_key": None,
        "outcome": {"status": "ok"},
    }


def test_bad_lines_are_named_and_the_rest_listed(env: dict[str, str]) -> None:
    path = journal_of(env)
    path.parent.mkdir(parents=True)
    good = [json.dumps(_entry(n)).encode() for n in range(3)]
    path.write_bytes(
        b"\n".join(
            [good[0], b"{not json", b"\xff\xfe not utf-8", good[1], b'{"entry": 5}', good[2]]
        )
        + b"\n"
        + b'{"entry": "j_cut", "run'  # cut short: the last write was interrupted
    )
    result = run(env, "history", "-o", "id")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [_entry(n)["entry"] for n in (2, 1, 0)]
    warnings = result.stderr.splitlines()
    assert warnings == [
        f"Warning: The journal {path} line 7: cut short (no end of line), skipped.",
        f"Warning: The journal {path} line 5: not a journal entry, skipped.",
        f"Warning: The journal {path} line 3: not UTF-8, skipped.",
        f"Warning: The journal {path} line 2: not JSON, skipped.",
    ]


def test_a_huge_journal_lists_its_newest_entries_at_once(env: dict[str, str]) -> None:
    """A journal of 30 MiB with a line of 5 MiB in it: the newest entries, the long line named."""
    path = journal_of(env)
    path.parent.mkdir(parents=True)
    line = json.dumps(_entry(0)) + "\n"
    with path.open("w") as out:
        out.write(line * (25 * 1024 * 1024 // len(line)))
        out.write('{"entry": "' + "x" * (5 * 1024 * 1024) + '"}\n')
        out.write(json.dumps(_entry(1)) + "\n")
    result = run(env, "history", "--limit", "3", "-o", "id")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [_entry(1)["entry"], _entry(0)["entry"], _entry(0)["entry"]]
    (warning,) = result.stderr.splitlines()[:1]
    assert "longer than 4,194,304 bytes, skipped" in warning and str(path) in warning


def test_a_journal_of_many_bad_lines_is_read_in_linear_time_and_named_briefly(
    env: dict[str, str],
) -> None:
    """100,000 bad lines after one good entry: each line's number is not counted from the start
    of the file again (which took minutes), and undo, like history, names only the first few."""
    import time

    path = journal_of(env)
    path.parent.mkdir(parents=True)
    good = dict(_entry(1), target=str(Path(env["HOME"]) / "x.db"))
    with path.open("w") as out:
        out.write(json.dumps(good) + "\n")
        out.write("garbage\n" * 100_000)
    started = time.monotonic()
    result = run(env, "history", "-o", "id")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [good["entry"]]
    warnings = result.stderr.splitlines()
    assert warnings[0] == f"Warning: The journal {path} line 100001: not JSON, skipped."
    assert warnings[9] == f"Warning: The journal {path} line 99992: not JSON, skipped."
    assert len(warnings) == 11
    undone = run(env, "--db", good["target"], "undo", good["entry"], "--dry-run")
    assert undone.returncode == 0, undone.stderr
    assert len(undone.stderr.splitlines()) <= 13, undone.stderr[:2000]
    assert time.monotonic() - started < 30


def test_no_journal_yet_is_an_empty_list(env: dict[str, str]) -> None:
    result = run(env, "history", "-o", "json")
    assert (result.returncode, result.stdout, result.stderr) == (0, "[]\n", "")
    assert not journal_of(env).exists()


def test_a_journal_convrisk_must_not_read_is_one_line_exit_2(
    env: dict[str, str], tmp_path: Path
) -> None:
    # A symlink in the journal's place; a directory, and another user's file, in-process in
    # tests/cli/test_history.py.
    path = journal_of(env)
    path.parent.mkdir(parents=True)
    (tmp_path / "elsewhere.jsonl").write_text(json.dumps(_entry(1)) + "\n")
    path.symlink_to(tmp_path / "elsewhere.jsonl")
    result = run(env, "history")
    assert result.returncode == 2 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"Error: The journal {path} is ")


def test_the_table_on_a_terminal_never_cuts_an_id(env: dict[str, str]) -> None:
    ids = written(env, 2)
    entries = json.loads(ok(env, "history", "-o", "json"))
    for columns in (120, 80, 56):  # narrower than both ids side by side, rows fold
        lines = on_screen({**env, "NO_COLOR": "1"}, "history", columns=columns)
        assert len(lines) == 3 and all(len(line) <= columns for line in lines)
        assert lines[0].split()[:2] in (["TIME", "ENTRY"], ["ENTRY", "OPERATION"], ["ENTRY", "ID"])
        for line, entry in zip(lines[1:], entries, strict=True):
            assert entry["entry"] in line and entry["id"] in line
        if columns >= 80:  # the time gives way first
            assert "OPERATION" in lines[0] and "OUTCOME" in lines[0]
            assert "create" in lines[1] and "ok" in lines[1]
        if columns >= 120:
            assert lines[0].split() == [
                "TIME", "ENTRY", "OPERATION", "RESOURCE", "ID", "OUTCOME", "PROFILE",
            ]  # fmt: skip
    assert {e["id"] for e in entries} == set(ids)


def test_a_journal_holding_1e400_and_nan_prints_valid_json_with_one_note(
    env: dict[str, str],
) -> None:
    # Issue 29, finding 7: Python's reader takes 1e400 as inf and NaN as nan; JSON has neither.
    ok(env, "risk", "create", "--customer-id", "c", "--profile-type", "t", "--score", "5")
    journal = journal_of(env)
    line = journal.read_text().splitlines()[0]
    assert '"score":5' in line
    journal.write_text(
        line.replace('"score":5', '"score":1e400') + "\n" + line.replace('"score":5', '"score":NaN')
        + "\n"
    )  # fmt: skip

    def refuse(name: str) -> None:
        raise ValueError(f"{name} is not JSON")

    for fmt in ("jsonl", "json"):
        result = run(env, "history", "-o", fmt)
        assert result.returncode == 0, result.stderr
        if fmt == "jsonl":
            entries = [json.loads(x, parse_constant=refuse) for x in result.stdout.splitlines()]
        else:
            entries = json.loads(result.stdout, parse_constant=refuse)
        assert [e["after"]["score"] for e in entries] == ["NaN", "Infinity"]
        assert "Infinity," not in result.stdout and "NaN," not in result.stdout
        notes = [x for x in result.stderr.splitlines() if x.startswith("Note: numbers")]
        assert notes == [
            "Note: numbers that JSON cannot hold (NaN, or too large for a float, such as 1e400) "
            'are printed as the strings "NaN", "Infinity" and "-Infinity".'
        ], result.stderr
