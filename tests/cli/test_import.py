"""`conv import` / `risk import` in-process on both backends (the local database and a serve
over HTTP): files and stdin, good and bad input, dry runs, and re-runs after an interruption.
The installed script runs each once against `convrisk serve` (or where a real pipe, signal or
terminal is the point) in tests/e2e/test_import.py."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from convrisk.cli.importing import run as importer

from .e2e_twin import Twin
from .e2e_twin import twin as twin  # a fixture: each test on the local db and on serve

MISSING_RP = "rp_00000000000000000000000000"


def profile(n: int, **extra: Any) -> Any:
    """A risk profile record of the import file, numbered."""
    return {
        "customer_id": f"cus_{n:05d}",
        "profile_type": "moderate",
        "score": n,
        "details": {"n": n},
        **extra,
    }


def jsonl(path: Path, records: list[Any]) -> Path:
    """Write records as JSON lines (a str is written as the line itself)."""
    path.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records),
        encoding="utf-8",
    )
    return path


def results(stdout: str) -> list[dict[str, Any]]:
    """The JSON-lines results of an import."""
    return [json.loads(line) for line in stdout.splitlines()]


def complete_results(stdout: str) -> list[dict[str, Any]]:
    """The results a killed import printed in full (its last line may be cut short)."""
    return [json.loads(line) for line in stdout.splitlines(keepends=True) if line.endswith("\n")]


def customers(twin: Twin) -> list[str]:
    """The customer ids of every stored risk profile, oldest first."""
    page = twin.store.risk_profiles.list(limit=100)
    return sorted(r["customer_id"] for r in page["data"])


def test_a_jsonl_file_creates_and_updates_in_order(twin: Twin, tmp_path: Path) -> None:
    existing = twin.store.risk_profiles.create(profile(0))
    path = jsonl(
        tmp_path / "profiles.jsonl",
        [
            profile(1),
            "",  # blank lines are not records, but count as lines
            {"id": existing["id"], "score": 99.5, "details": {"reviewed": True}},
            {"customer_id": "cus_2", "profile_type": "aggressive", "score": 2},  # details: {}
        ],
    )
    result = twin.run("risk", "import", str(path))
    assert result.code == 0, result.stderr
    rows = results(result.stdout)
    assert [(r["line"], r["status"]) for r in rows] == [
        (1, "created"),
        (3, "updated"),
        (4, "created"),
    ]
    assert rows[1]["id"] == existing["id"] and "error" not in rows[0]
    assert result.stderr == "3 records: 2 created, 1 updated, 0 replayed, 0 failed.\n"
    updated = twin.store.risk_profiles.retrieve(existing["id"])
    assert (updated["score"], updated["details"]) == (99.5, {"reviewed": True})
    assert twin.store.risk_profiles.retrieve(rows[2]["id"])["details"] == {}
    assert customers(twin) == ["cus_00000", "cus_00001", "cus_2"]


def test_a_csv_file_with_typed_cells(twin: Twin, tmp_path: Path) -> None:
    conv = twin.store.conversations.create({"contact_id": "c_0"})
    twin.store.conversations.update(conv["id"], {"pinned_message_id": "m_1", "archived_at": 5})
    path = tmp_path / "conversations.csv"
    path.write_text(
        "\ufeffid,contact_id,group_id,is_muted,is_pinned,archived_at,pinned_message_id\r\n"
        ",c_1,,,,,\r\n"
        ",,g_1,,,,\r\n"
        f"{conv['id']},,,TRUE,0,null,null\r\n"
        f"{conv['id']},,,,,2024-05-01T12:00:00Z,\r\n",
        encoding="utf-8",
    )
    result = twin.run("conv", "import", str(path), "-o", "json")
    assert result.code == 0, result.stderr
    rows = json.loads(result.stdout)
    assert [(r["line"], r["status"]) for r in rows] == [
        (2, "created"),
        (3, "created"),
        (4, "updated"),
        (5, "updated"),
    ]
    changed = twin.store.conversations.retrieve(conv["id"])
    assert (changed["is_muted"], changed["is_pinned"], changed["pinned_message_id"]) == (
        True,
        False,
        None,
    )
    assert changed["archived_at"] == 1714564800
    made = [twin.store.conversations.retrieve(r["id"]) for r in rows[:2]]
    assert (made[0]["contact_id"], made[1]["group_id"]) == ("c_1", "g_1")

    risk = tmp_path / "profiles.csv"
    risk.write_text(
        "customer_id,profile_type,score,details\n"
        "cus_1,moderate,72,\n"
        'cus_2,aggressive,-1e3,"{""a"": [1]}"\n'
    )
    made_risk = twin.run("risk", "import", str(risk), "-o", "id")
    assert made_risk.code == 0, made_risk.stderr
    first, second = (twin.store.risk_profiles.retrieve(i) for i in made_risk.stdout.split())
    assert (first["score"], first["details"]) == (72, {})
    assert (second["score"], second["details"]) == (-1000.0, {"a": [1]})


def test_a_bad_record_fails_alone_and_the_rest_go_on(twin: Twin, tmp_path: Path) -> None:
    path = jsonl(
        tmp_path / "mixed.jsonl",
        [
            profile(1),
            profile(2, score="high"),
            "[1, 2]",
            "{not json",
            {"id": MISSING_RP, "score": 1},
            {"id": MISSING_RP, "customer_id": "cus_x"},
            {"scor": 3, "customer_id": "cus_y"},
            {"customer_id": "cus_z", "profile_type": "moderate"},
            profile(9),
        ],
    )
    result = twin.run("risk", "import", str(path))
    assert result.code == 1
    rows = results(result.stdout)
    assert [r["status"] for r in rows] == ["created", *["failed"] * 7, "created"]
    failed = {r["line"]: r["error"] for r in rows if r["status"] == "failed"}
    assert failed[2]["param"] == "score" and failed[2]["type"] == "invalid_request_error"
    assert "not a JSON object" in failed[3]["message"]
    assert "not valid JSON" in failed[4]["message"]
    assert failed[5]["type"] == "not_found_error"
    assert "line 6 has an id, so it is an update, and customer_id" in failed[6]["message"]
    assert "unknown field 'scor'" in failed[7]["message"] and failed[7]["param"] == "scor"
    assert failed[8]["param"] == "score"  # missing
    for line in failed:
        assert f"Error: line {line}" in result.stderr
    assert result.stderr.endswith("9 records: 2 created, 0 updated, 0 replayed, 7 failed.\n")
    assert customers(twin) == ["cus_00001", "cus_00009"]


def test_stop_on_error_stops_at_the_first_failure(twin: Twin, tmp_path: Path) -> None:
    path = jsonl(tmp_path / "p.jsonl", [profile(1), profile(2), profile(3, score=None)])
    path.write_text(path.read_text() + "".join(json.dumps(profile(n)) + "\n" for n in (4, 5)))
    result = twin.run("risk", "import", str(path), "--stop-on-error")
    assert result.code == 1
    assert [(r["line"], r["status"]) for r in results(result.stdout)] == [
        (1, "created"),
        (2, "created"),
        (3, "failed"),
    ]
    assert customers(twin) == ["cus_00001", "cus_00002"]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("p.jsonl", '[{"customer_id": "c"}]\n', "is not JSON lines of risk profiles: line 1"),
        ("p.jsonl", "customer_id,score\nc,1\n", "line 1 is not valid JSON"),
        ("p.jsonl", "null\n", "line 1 is null, not a JSON object"),
        ("p.csv", "customer_id,scor\nc,1\n", "unknown column 'scor'"),
        ("p.csv", "customer_id,customer_id\nc,c\n", "column 'customer_id' is given twice"),
        ("p.csv", "customer_id,score,\nc,1,\n", "empty column name"),
        ("p.data", "\x89PNG\r\n\x1a\n\x00\x00", "is not UTF-8 text: line 1 has byte 0x89"),
        ("p.csv", "c" * (1024 * 1024 + 1) + "\ncus_1\n", "line 1 is longer than 1 MiB"),
        ("p.jsonl", '{"a": "' + "x" * (1024 * 1024) + '"}\n', "line 1 is longer than 1 MiB"),
    ],
    # Short ids: pytest < 8.2 puts the whole id in PYTEST_CURRENT_TEST, and a 1 MiB one in the
    # child's environment is over the kernel's limit (E2BIG).
    ids=lambda value: value[:24] if isinstance(value, str) else None,
)
def test_a_file_that_is_not_jsonl_or_csv_is_exit_2_and_writes_nothing(
    twin: Twin,
    tmp_path: Path,
    name: str,
    content: str,
    message: str,
) -> None:
    path = tmp_path / name
    path.write_bytes(content.encode("latin-1"))
    result = twin.run("risk", "import", str(path))
    assert result.code == 2, result.stderr
    assert message in result.stderr and str(path) in result.stderr
    assert result.stdout == "" and len(result.stderr.splitlines()) == 1
    assert twin.count("risk_profiles") == 0


def test_bytes_that_are_not_utf8_after_a_good_first_line_are_exit_2_and_nothing_is_written(
    twin: Twin,
    tmp_path: Path,
) -> None:
    # Issue 29, finding 9: line 1 was written, line 2 failed (exit 1), line 3 was written.
    path = tmp_path / "p.jsonl"
    path.write_bytes(
        json.dumps(profile(1)).encode() + b"\n"
        + json.dumps(profile(2)).encode().replace(b"cus_00002", b"cus_\xc0\xae2") + b"\n"
        + json.dumps(profile(3)).encode() + b"\n"
    )  # fmt: skip
    expected = f"Error: {path} is not UTF-8 text: line 2 has byte 0xc0; nothing was written.\n"
    result = twin.run("risk", "import", str(path))
    assert (result.code, result.stdout, result.stderr) == (2, "", expected)
    # A file redirected to stdin can be read again: checked whole, as the file is.
    redirected = twin.run("risk", "import", "-", input=io.BytesIO(path.read_bytes()))
    assert redirected.code == 2, redirected.stderr
    assert redirected.stderr == expected.replace(str(path), "stdin")
    assert twin.count("risk_profiles") == 0


def test_a_pipe_is_read_as_it_comes_and_a_line_that_is_not_utf8_fails_alone(
    twin: Twin,
) -> None:
    # What the README says of a pipe: it cannot be read twice, so it is not checked ahead.
    data = (
        json.dumps(profile(1)).encode() + b"\n"
        + json.dumps(profile(2)).encode().replace(b"cus_00002", b"cus_\xff2") + b"\n"
        + json.dumps(profile(3)).encode() + b"\n"
    )  # fmt: skip
    piped = twin.run("risk", "import", "-", input=data)  # a pipe: see e2e_twin.Pipe
    assert piped.code == 1, piped.stderr
    rows = results(piped.stdout)
    assert [(r["line"], r["status"]) for r in rows] == [
        (1, "created"),
        (2, "failed"),
        (3, "created"),
    ]
    assert "line 2 is not UTF-8 text (byte 0xff)" in rows[1]["error"]["message"]
    assert customers(twin) == ["cus_00001", "cus_00003"]
    # Counted first (--max-affected), the pipe is kept in a file: checked whole, as a file is.
    counted = twin.run("risk", "import", "-", "--max-affected", "10", input=data)
    assert counted.code == 2, counted.stderr
    assert (
        counted.stderr
        == "Error: stdin is not UTF-8 text: line 2 has byte 0xff; nothing was written.\n"
    )
    assert customers(twin) == ["cus_00001", "cus_00003"]


def test_files_that_cannot_be_read_and_a_bad_format(twin: Twin, tmp_path: Path) -> None:
    missing = twin.run("risk", "import", str(tmp_path / "nope.jsonl"))
    assert missing.code == 2 and "no such file" in missing.stderr
    folder = twin.run("risk", "import", str(tmp_path))
    assert folder.code == 2 and "is a directory" in folder.stderr
    path = jsonl(tmp_path / "p.jsonl", [profile(1)])
    xml = twin.run("risk", "import", str(path), "--format", "xml")
    assert xml.code == 2 and "--format must be one of jsonl, csv" in xml.stderr
    as_csv = twin.run("risk", "import", str(path), "--format", "csv")
    assert as_csv.code == 2 and "unknown column" in as_csv.stderr
    empty = twin.run("risk", "import", str(jsonl(tmp_path / "e.jsonl", ["", "  "])))
    assert empty.code == 0 and empty.stdout == ""
    assert empty.stderr == "0 records: 0 created, 0 updated, 0 replayed, 0 failed.\n"
    assert twin.count("risk_profiles") == 0


def test_stdin_is_read_with_the_format_told_or_seen(twin: Twin) -> None:
    lines = "".join(json.dumps(profile(n)) + "\n" for n in range(3))
    seen = twin.run("risk", "import", "-", input=lines)
    assert seen.code == 0, seen.stderr
    assert [r["line"] for r in results(seen.stdout)] == [1, 2, 3]
    csv = "customer_id,profile_type,score\ncus_csv,moderate,5\n"
    told = twin.run("risk", "import", "-", "--format", "csv", "-o", "csv", input=csv)
    assert told.code == 0, told.stderr
    assert told.stdout.splitlines()[0] == "line,status,id,error"
    assert told.stdout.splitlines()[1].startswith("2,created,rp_")
    assert "cus_csv" in customers(twin)


def test_running_the_same_file_again_creates_nothing_twice(twin: Twin, tmp_path: Path) -> None:
    path = jsonl(tmp_path / "p.jsonl", [profile(1), profile(1), profile(2, score="x"), profile(3)])
    first = twin.run("risk", "import", str(path))
    again = twin.run("risk", "import", str(path))
    assert first.code == again.code == 1
    # What the first run created, the second replays (the same ids); the failure fails again.
    replayed = [
        {**r, "status": "replayed"} if r["status"] == "created" else r
        for r in results(first.stdout)
    ]
    assert results(again.stdout) == replayed
    # The same record on two lines is two records: both created, once each.
    assert customers(twin) == ["cus_00001", "cus_00001", "cus_00003"]
    # Fixed in place, the failed line is created and the others are still not repeated.
    path.write_text(path.read_text().replace('"score": "x"', '"score": 2'))
    fixed = twin.run("risk", "import", str(path))
    assert fixed.code == 0, fixed.stderr
    assert [r["status"] for r in results(fixed.stdout)] == [
        "replayed",
        "replayed",
        "created",
        "replayed",
    ]
    assert customers(twin) == ["cus_00001", "cus_00001", "cus_00002", "cus_00003"]
    # On purpose, a new CONVRISK_IMPORT_RUN imports the file once more.
    more = twin.run("risk", "import", str(path), CONVRISK_IMPORT_RUN="second")
    assert more.code == 0 and twin.count("risk_profiles") == 8


def test_updates_run_again_set_the_same_values(twin: Twin, tmp_path: Path) -> None:
    rp = twin.store.risk_profiles.create(profile(1))["id"]
    path = jsonl(tmp_path / "u.jsonl", [{"id": rp, "profile_type": "conservative"}])
    for _ in range(2):
        result = twin.run("risk", "import", str(path), "-o", "jsonl")
        assert result.code == 0, result.stderr
        assert results(result.stdout) == [{"line": 1, "status": "updated", "id": rp}]
    assert twin.store.risk_profiles.retrieve(rp)["profile_type"] == "conservative"
    assert twin.count("risk_profiles") == 1


def test_a_record_over_1_mib_fails_alone(twin: Twin, tmp_path: Path) -> None:
    big = profile(2, details={"blob": "x" * (1024 * 1024)})
    path = jsonl(tmp_path / "big.jsonl", [profile(1), big, profile(3)])
    result = twin.run("risk", "import", str(path))
    assert result.code == 1
    assert [r["status"] for r in results(result.stdout)] == ["created", "failed", "created"]
    assert "longer than 1 MiB" in result.stderr
    assert customers(twin) == ["cus_00001", "cus_00003"]


def test_dry_run_checks_every_record_and_id_and_writes_nothing(twin: Twin, tmp_path: Path) -> None:
    rp = twin.store.risk_profiles.create(profile(0))["id"]
    good = jsonl(tmp_path / "good.jsonl", [profile(1), {"id": rp, "score": 5}])
    planned = twin.run("risk", "import", str(good), "--dry-run", "-o", "jsonl")
    assert planned.code == 0, planned.stderr
    assert results(planned.stdout) == [
        {
            "dry_run": True,
            "operation": "create",
            "id": None,
            "body": profile(1),
            "status": "planned",
        },
        {
            "dry_run": True,
            "operation": "update",
            "id": rp,
            "body": {"score": 5},
            "status": "planned",
        },
    ]
    assert (
        "2 records: 2 planned (1 create and 1 update), 0 would_replay, 0 failed the checks."
        in planned.stderr
    )
    readable = twin.run("risk", "import", str(good), "--dry-run")
    assert readable.stdout.splitlines()[1] == f'would update {rp}: {{"score":5}}'
    invalid = jsonl(tmp_path / "bad.jsonl", [profile(1), profile(2, score=True)])
    bad = twin.run("risk", "import", str(invalid), "--dry-run")
    assert bad.code == 2 and "Error: line 2: score must be a number" in bad.stderr
    missing = jsonl(tmp_path / "missing.jsonl", [{"id": MISSING_RP, "score": 1}])
    gone = twin.run("risk", "import", str(missing), "--dry-run", "-o", "json")
    assert gone.code == 3 and json.loads(gone.stdout) == []
    assert json.loads(gone.stderr.splitlines()[0])["error"]["line"] == 1
    assert twin.count("risk_profiles") == 1
    assert twin.store.risk_profiles.retrieve(rp)["score"] == 0


# -- interrupted imports ----------------------------------------------------------------------

# More than three batches (the import is interrupted at the third). The e2e test imports 2,000,
# enough for its results to fill the pipe, so that the signal lands part way.
RECORDS = 1000


def big_file(tmp_path: Path) -> Path:
    """A 1,000-record JSON-lines file of risk profiles."""
    return jsonl(tmp_path / "1000.jsonl", [profile(n) for n in range(RECORDS)])


def rerun_finishes_exactly(twin: Twin, path: Path, seen: list[dict[str, Any]]) -> None:
    """Run the import again: every record created once; what the first run wrote is replayed
    (its ids kept), the rest created."""
    done = twin.count("risk_profiles")
    again = twin.run("risk", "import", str(path))
    assert again.code == 0, again.stderr
    rows = results(again.stdout)
    assert len(rows) == RECORDS and len({r["id"] for r in rows}) == RECORDS
    statuses = [r["status"] for r in rows]
    assert statuses.count("replayed") == done and statuses.count("created") == RECORDS - done
    first_ids = {r["line"]: r["id"] for r in seen}
    assert all(
        first_ids[r["line"]] == r["id"] and r["status"] == "replayed"
        for r in rows
        if r["line"] in first_ids
    )
    assert again.stderr.startswith(
        f"{RECORDS:,} records: {RECORDS - done:,} created, 0 updated, {done:,} replayed, 0 failed."
    )
    assert twin.count("risk_profiles") == RECORDS
    stored = sorted(r["customer_id"] for r in _all_profiles(twin))
    assert stored == sorted(profile(n)["customer_id"] for n in range(RECORDS))


def _all_profiles(twin: Twin) -> list[Any]:
    out: list[Any] = []
    cursor = None
    while True:
        page = twin.store.risk_profiles.list(limit=100, starting_after=cursor)
        out.extend(page["data"])
        if not page["has_more"]:
            return out
        cursor = page["data"][-1]["id"]


@pytest.mark.e2e  # slow: about a second, or more (the quick loop leaves it out)
@pytest.mark.parametrize("written", [False, True], ids=["between-batches", "inside-a-batch"])
def test_an_import_killed_part_way_then_run_again_creates_exactly_every_record(
    twin: Twin,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    written: bool,
) -> None:
    # Ctrl-C as Python delivers it, a KeyboardInterrupt, before the third batch of creates is
    # sent, or once it is written but before its results are reported. A real SIGINT, and a
    # SIGKILL, to the installed script are tests/e2e/test_import.py.
    path = big_file(tmp_path)
    create = importer.Importer._create
    calls = 0

    def interrupted(self: importer.Importer, creates: list[Any]) -> Any:
        nonlocal calls
        calls += 1
        if calls == 3 and not written:
            raise KeyboardInterrupt
        made = create(self, creates)
        if calls == 3:
            raise KeyboardInterrupt
        return made

    with monkeypatch.context() as patched:
        patched.setattr(importer.Importer, "_create", interrupted)
        result = twin.run("risk", "import", str(path), CONVRISK_MAX_RETRIES="0")
    done = twin.count("risk_profiles")
    assert done == importer.BATCH * (3 if written else 2)
    assert result.code == 130
    assert "Run the same command again to finish" in result.stderr
    assert "Traceback" not in result.stderr
    rerun_finishes_exactly(twin, path, complete_results(result.stdout))


def test_conversation_records_from_stdin_and_their_mixed_fields(twin: Twin) -> None:
    conv = twin.store.conversations.create({"group_id": "g_1"})["id"]
    twin.store.conversations.update(conv, {"archived_at": 10})
    lines = [
        {"contact_id": "c_new"},
        {"id": conv, "is_muted": True, "archived_at": None, "pinned_message_id": "m_1"},
        {"is_pinned": True},
        {"id": conv, "group_id": "g_2"},
        {"contact_id": "c_x", "group_id": "g_x"},
    ]
    text = "".join(json.dumps(line) + "\n" for line in lines)
    planned = twin.run("conv", "import", "-", "--dry-run", "-o", "jsonl", input=text)
    assert planned.code == 2
    assert [(p["operation"], p["id"]) for p in results(planned.stdout)] == [
        ("create", None),
        ("update", conv),
    ]
    errors = {
        e["error"]["line"]: e["error"]["message"]
        for e in map(json.loads, (x for x in planned.stderr.splitlines() if x.startswith("{")))
    }
    assert errors[3].startswith("line 3 has no id, so it is a create, and is_pinned")
    assert errors[4].startswith("line 4 has an id, so it is an update, and group_id")
    assert errors[5].startswith("Exactly one of contact_id or group_id")
    assert twin.count("conversations") == 1
    result = twin.run("conv", "import", "-", input=text)
    assert result.code == 1
    assert [r["status"] for r in results(result.stdout)] == [
        "created",
        "updated",
        "failed",
        "failed",
        "failed",
    ]
    changed = twin.store.conversations.retrieve(conv)
    assert (changed["is_muted"], changed["archived_at"], changed["pinned_message_id"]) == (
        True,
        None,
        "m_1",
    )
    assert twin.count("conversations") == 2


def test_dry_run_with_stop_on_error_stops_at_the_first_bad_record(
    twin: Twin, tmp_path: Path
) -> None:
    path = jsonl(tmp_path / "p.jsonl", [profile(1), profile(2, score="x"), profile(3, score="y")])
    result = twin.run("risk", "import", str(path), "--dry-run", "--stop-on-error")
    assert result.code == 2
    assert "line 2" in result.stderr and "line 3" not in result.stderr
    assert len(result.stdout.splitlines()) == 1


def test_jq_on_import_results_picks_the_failures_and_counts_by_status(
    twin: Twin,
    tmp_path: Path,
) -> None:
    source = tmp_path / "profiles.jsonl"
    source.write_text(
        '{"customer_id": "c1", "profile_type": "moderate", "score": 5}\n'
        '{"customer_id": "c2", "score": 5}\n'
        '{"customer_id": "c3", "profile_type": "aggressive", "score": 70}\n'
    )
    failures = twin.run(
        "risk",
        "import",
        str(source),
        "-o",
        "jsonl",
        "--jq",
        'select(.status == "failed") | "line \\(.line): \\(.error.param)"',
    )
    assert failures.code == 1
    assert failures.stdout == "line 2: profile_type\n"
    counts = twin.run(
        "risk",
        "import",
        str(source),
        "--jq",
        "map(.status) | group_by(.) | map({(.[0]): length}) | add",
    )
    assert counts.code == 1
    assert json.loads(counts.stdout) == {"replayed": 2, "failed": 1}
    assert twin.count("risk_profiles") == 2  # the second run replayed the first's creates
    plan = twin.run("risk", "import", str(source), "--dry-run", "-o", "jsonl", "--jq", ".operation")
    assert plan.code == 2 and plan.stdout == "create\ncreate\n"
    bad = twin.run("risk", "import", str(source), "--jq", ".[")
    assert bad.code == 2 and "--jq does not compile" in bad.stderr
    assert twin.count("risk_profiles") == 2
