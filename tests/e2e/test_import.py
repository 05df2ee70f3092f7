"""`conv import` / `risk import`: the installed convrisk against a `convrisk serve` subprocess
(and the local database where the process is the point), through files, pipes and stdin, good and
bad input, dry runs, and re-runs after an interruption. The variants (every bad file, both
backends) run in-process in tests/cli/test_import.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from .both_backends import (
    TOKEN,
    Cli,
    isolated_env,
    local_cli,
    start_drained_serve,
    stop_drained_serve,
)
from .both_backends import over_serve as over_serve  # a fixture: convrisk against its own serve
from .console import CONVRISK, SAFETY_TIMEOUT, assert_loads_none_of, on_a_terminal, read_until

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


def customers(cli: Cli) -> list[str]:
    """The customer ids of every stored risk profile, oldest first."""
    page = cli.store.risk_profiles.list(limit=100)
    return sorted(r["customer_id"] for r in page["data"])


def test_a_jsonl_file_creates_and_updates_in_order(over_serve: Cli, tmp_path: Path) -> None:
    existing = over_serve.store.risk_profiles.create(profile(0))
    path = jsonl(
        tmp_path / "profiles.jsonl",
        [
            profile(1),
            "",  # blank lines are not records, but count as lines
            {"id": existing["id"], "score": 99.5, "details": {"reviewed": True}},
            {"customer_id": "cus_2", "profile_type": "aggressive", "score": 2},  # details: {}
        ],
    )
    result = over_serve.run("risk", "import", str(path))
    assert result.returncode == 0, result.stderr
    rows = results(result.stdout)
    assert [(r["line"], r["status"]) for r in rows] == [
        (1, "created"),
        (3, "updated"),
        (4, "created"),
    ]
    assert rows[1]["id"] == existing["id"] and "error" not in rows[0]
    assert result.stderr == "3 records: 2 created, 1 updated, 0 replayed, 0 failed.\n"
    updated = over_serve.store.risk_profiles.retrieve(existing["id"])
    assert (updated["score"], updated["details"]) == (99.5, {"reviewed": True})
    assert over_serve.store.risk_profiles.retrieve(rows[2]["id"])["details"] == {}
    assert customers(over_serve) == ["cus_00000", "cus_00001", "cus_2"]


def test_a_csv_file_with_typed_cells(over_serve: Cli, tmp_path: Path) -> None:
    conv = over_serve.store.conversations.create({"contact_id": "c_0"})
    over_serve.store.conversations.update(
        conv["id"], {"pinned_message_id": "m_1", "archived_at": 5}
    )
    path = tmp_path / "conversations.csv"
    path.write_text(
        "\ufeffid,contact_id,group_id,is_muted,is_pinned,archived_at,pinned_message_id\r\n"
        ",c_1,,,,,\r\n"
        ",,g_1,,,,\r\n"
        f"{conv['id']},,,TRUE,0,null,null\r\n"
        f"{conv['id']},,,,,2024-05-01T12:00:00Z,\r\n",
        encoding="utf-8",
    )
    result = over_serve.run("conv", "import", str(path), "-o", "json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert [(r["line"], r["status"]) for r in rows] == [
        (2, "created"),
        (3, "created"),
        (4, "updated"),
        (5, "updated"),
    ]
    changed = over_serve.store.conversations.retrieve(conv["id"])
    assert (changed["is_muted"], changed["is_pinned"], changed["pinned_message_id"]) == (
        True,
        False,
        None,
    )
    assert changed["archived_at"] == 1714564800
    made = [over_serve.store.conversations.retrieve(r["id"]) for r in rows[:2]]
    assert (made[0]["contact_id"], made[1]["group_id"]) == ("c_1", "g_1")

    risk = tmp_path / "profiles.csv"
    risk.write_text(
        "customer_id,profile_type,score,details\n"
        "cus_1,moderate,72,\n"
        'cus_2,aggressive,-1e3,"{""a"": [1]}"\n'
    )
    made_risk = over_serve.run("risk", "import", str(risk), "-o", "id")
    assert made_risk.returncode == 0, made_risk.stderr
    first, second = (over_serve.store.risk_profiles.retrieve(i) for i in made_risk.stdout.split())
    assert (first["score"], first["details"]) == (72, {})
    assert (second["score"], second["details"]) == (-1000.0, {"a": [1]})


def test_a_bad_record_fails_alone_and_the_rest_go_on(over_serve: Cli, tmp_path: Path) -> None:
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
    result = over_serve.run("risk", "import", str(path))
    assert result.returncode == 1
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
    assert customers(over_serve) == ["cus_00001", "cus_00009"]


def test_stop_on_error_stops_at_the_first_failure(over_serve: Cli, tmp_path: Path) -> None:
    path = jsonl(tmp_path / "p.jsonl", [profile(1), profile(2), profile(3, score=None)])
    path.write_text(path.read_text() + "".join(json.dumps(profile(n)) + "\n" for n in (4, 5)))
    result = over_serve.run("risk", "import", str(path), "--stop-on-error")
    assert result.returncode == 1
    assert [(r["line"], r["status"]) for r in results(result.stdout)] == [
        (1, "created"),
        (2, "created"),
        (3, "failed"),
    ]
    assert customers(over_serve) == ["cus_00001", "cus_00002"]


def test_a_file_that_is_not_jsonl_or_csv_is_exit_2_and_writes_nothing(
    over_serve: Cli,
    tmp_path: Path,
) -> None:
    # A file of bytes that are not text; JSON that is not JSON lines, CSV with bad columns,
    # lines over 1 MiB (and the local database) in-process in tests/cli/test_import.py.
    name, content = "p.data", "\x89PNG\r\n\x1a\n\x00\x00"
    message = "is not UTF-8 text: line 1 has byte 0x89"
    path = tmp_path / name
    path.write_bytes(content.encode("latin-1"))
    result = over_serve.run("risk", "import", str(path))
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and str(path) in result.stderr
    assert result.stdout == "" and len(result.stderr.splitlines()) == 1
    assert over_serve.count("risk_profiles") == 0


def test_bytes_that_are_not_utf8_after_a_good_first_line_are_exit_2_and_nothing_is_written(
    over_serve: Cli,
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
    result = over_serve.run("risk", "import", str(path))
    assert (result.returncode, result.stdout, result.stderr) == (2, "", expected)
    with path.open("rb") as stdin:
        redirected = subprocess.run(
            [CONVRISK, "risk", "import", "-"], stdin=stdin, env=over_serve.env, capture_output=True,
            text=True, timeout=SAFETY_TIMEOUT,
        )  # fmt: skip
    assert redirected.returncode == 2, redirected.stderr
    assert redirected.stderr == expected.replace(str(path), "stdin")
    assert over_serve.count("risk_profiles") == 0


def test_a_pipe_is_read_as_it_comes_and_a_line_that_is_not_utf8_fails_alone(
    over_serve: Cli,
) -> None:
    # What the README says of a pipe: it cannot be read twice, so it is not checked ahead.
    data = (
        json.dumps(profile(1)).encode() + b"\n"
        + json.dumps(profile(2)).encode().replace(b"cus_00002", b"cus_\xff2") + b"\n"
        + json.dumps(profile(3)).encode() + b"\n"
    )  # fmt: skip
    piped = subprocess.run(
        [CONVRISK, "risk", "import", "-"], input=data, env=over_serve.env, capture_output=True,
        timeout=SAFETY_TIMEOUT,
    )  # fmt: skip
    assert piped.returncode == 1, piped.stderr
    rows = results(piped.stdout.decode())
    assert [(r["line"], r["status"]) for r in rows] == [
        (1, "created"),
        (2, "failed"),
        (3, "created"),
    ]
    assert "line 2 is not UTF-8 text (byte 0xff)" in rows[1]["error"]["message"]
    assert customers(over_serve) == ["cus_00001", "cus_00003"]
    # Counted first (--max-affected), the pipe is kept in a file: checked whole, as a file is.
    counted = subprocess.run(
        [CONVRISK, "risk", "import", "-", "--max-affected", "10"], input=data, env=over_serve.env,
        capture_output=True, timeout=SAFETY_TIMEOUT,
    )  # fmt: skip
    assert counted.returncode == 2, counted.stderr
    assert (
        counted.stderr
        == b"Error: stdin is not UTF-8 text: line 2 has byte 0xff; nothing was written.\n"
    )
    assert customers(over_serve) == ["cus_00001", "cus_00003"]


def test_files_that_cannot_be_read_and_a_bad_format(over_serve: Cli, tmp_path: Path) -> None:
    missing = over_serve.run("risk", "import", str(tmp_path / "nope.jsonl"))
    assert missing.returncode == 2 and "no such file" in missing.stderr
    folder = over_serve.run("risk", "import", str(tmp_path))
    assert folder.returncode == 2 and "is a directory" in folder.stderr
    path = jsonl(tmp_path / "p.jsonl", [profile(1)])
    xml = over_serve.run("risk", "import", str(path), "--format", "xml")
    assert xml.returncode == 2 and "--format must be one of jsonl, csv" in xml.stderr
    as_csv = over_serve.run("risk", "import", str(path), "--format", "csv")
    assert as_csv.returncode == 2 and "unknown column" in as_csv.stderr
    empty = over_serve.run("risk", "import", str(jsonl(tmp_path / "e.jsonl", ["", "  "])))
    assert empty.returncode == 0 and empty.stdout == ""
    assert empty.stderr == "0 records: 0 created, 0 updated, 0 replayed, 0 failed.\n"
    assert over_serve.count("risk_profiles") == 0


def test_stdin_is_read_with_the_format_told_or_seen(over_serve: Cli) -> None:
    lines = "".join(json.dumps(profile(n)) + "\n" for n in range(3))
    seen = over_serve.run("risk", "import", "-", input=lines)
    assert seen.returncode == 0, seen.stderr
    assert [r["line"] for r in results(seen.stdout)] == [1, 2, 3]
    csv = "customer_id,profile_type,score\ncus_csv,moderate,5\n"
    told = over_serve.run("risk", "import", "-", "--format", "csv", "-o", "csv", input=csv)
    assert told.returncode == 0, told.stderr
    assert told.stdout.splitlines()[0] == "line,status,id,error"
    assert told.stdout.splitlines()[1].startswith("2,created,rp_")
    assert "cus_csv" in customers(over_serve)


def test_running_the_same_file_again_creates_nothing_twice(over_serve: Cli, tmp_path: Path) -> None:
    path = jsonl(tmp_path / "p.jsonl", [profile(1), profile(1), profile(2, score="x"), profile(3)])
    first = over_serve.run("risk", "import", str(path))
    again = over_serve.run("risk", "import", str(path))
    assert first.returncode == again.returncode == 1
    # What the first run created, the second replays (the same ids); the failure fails again.
    replayed = [
        {**r, "status": "replayed"} if r["status"] == "created" else r
        for r in results(first.stdout)
    ]
    assert results(again.stdout) == replayed
    # The same record on two lines is two records: both created, once each.
    assert customers(over_serve) == ["cus_00001", "cus_00001", "cus_00003"]
    # Fixed in place, the failed line is created and the others are still not repeated.
    path.write_text(path.read_text().replace('"score": "x"', '"score": 2'))
    fixed = over_serve.run("risk", "import", str(path))
    assert fixed.returncode == 0, fixed.stderr
    assert [r["status"] for r in results(fixed.stdout)] == [
        "replayed",
        "replayed",
        "created",
        "replayed",
    ]
    assert customers(over_serve) == ["cus_00001", "cus_00001", "cus_00002", "cus_00003"]
    # On purpose, a new CONVRISK_IMPORT_RUN imports the file once more.
    more = over_serve.run("risk", "import", str(path), CONVRISK_IMPORT_RUN="second")
    assert more.returncode == 0 and over_serve.count("risk_profiles") == 8


def test_updates_run_again_set_the_same_values(over_serve: Cli, tmp_path: Path) -> None:
    rp = over_serve.store.risk_profiles.create(profile(1))["id"]
    path = jsonl(tmp_path / "u.jsonl", [{"id": rp, "profile_type": "conservative"}])
    for _ in range(2):
        result = over_serve.run("risk", "import", str(path), "-o", "jsonl")
        assert result.returncode == 0, result.stderr
        assert results(result.stdout) == [{"line": 1, "status": "updated", "id": rp}]
    assert over_serve.store.risk_profiles.retrieve(rp)["profile_type"] == "conservative"
    assert over_serve.count("risk_profiles") == 1


def test_a_record_over_1_mib_fails_alone(over_serve: Cli, tmp_path: Path) -> None:
    big = profile(2, details={"blob": "x" * (1024 * 1024)})
    path = jsonl(tmp_path / "big.jsonl", [profile(1), big, profile(3)])
    result = over_serve.run("risk", "import", str(path))
    assert result.returncode == 1
    assert [r["status"] for r in results(result.stdout)] == ["created", "failed", "created"]
    assert "longer than 1 MiB" in result.stderr
    assert customers(over_serve) == ["cus_00001", "cus_00003"]


def test_dry_run_checks_every_record_and_id_and_writes_nothing(
    over_serve: Cli, tmp_path: Path
) -> None:
    rp = over_serve.store.risk_profiles.create(profile(0))["id"]
    good = jsonl(tmp_path / "good.jsonl", [profile(1), {"id": rp, "score": 5}])
    planned = over_serve.run("risk", "import", str(good), "--dry-run", "-o", "jsonl")
    assert planned.returncode == 0, planned.stderr
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
    readable = over_serve.run("risk", "import", str(good), "--dry-run")
    assert readable.stdout.splitlines()[1] == f'would update {rp}: {{"score":5}}'
    invalid = jsonl(tmp_path / "bad.jsonl", [profile(1), profile(2, score=True)])
    bad = over_serve.run("risk", "import", str(invalid), "--dry-run")
    assert bad.returncode == 2 and "Error: line 2: score must be a number" in bad.stderr
    missing = jsonl(tmp_path / "missing.jsonl", [{"id": MISSING_RP, "score": 1}])
    gone = over_serve.run("risk", "import", str(missing), "--dry-run", "-o", "json")
    assert gone.returncode == 3 and json.loads(gone.stdout) == []
    assert json.loads(gone.stderr.splitlines()[0])["error"]["line"] == 1
    assert over_serve.count("risk_profiles") == 1
    assert over_serve.store.risk_profiles.retrieve(rp)["score"] == 0


# -- interrupted imports ----------------------------------------------------------------------

RECORDS = 2000


def big_file(tmp_path: Path) -> Path:
    """A 2,000-record JSON-lines file of risk profiles."""
    return jsonl(tmp_path / "2000.jsonl", [profile(n) for n in range(RECORDS)])


def wait_for_rows(cli: Cli, at_least: int) -> int:
    """Poll the database (bounded in time) until it holds at least this many risk profiles."""
    deadline = time.monotonic() + SAFETY_TIMEOUT
    while time.monotonic() < deadline:
        count = cli.count("risk_profiles")
        if count >= at_least:
            return count
        time.sleep(0.01)
    raise AssertionError(f"fewer than {at_least} rows after {SAFETY_TIMEOUT} s")


def settled_count(cli: Cli) -> int:
    """The risk profiles once the count stops moving: against serve, a create sent just before
    the client died may still commit after it (bounded: at most SAFETY_TIMEOUT)."""
    deadline = time.monotonic() + SAFETY_TIMEOUT
    count, same = cli.count("risk_profiles"), 0
    while same < 5 and time.monotonic() < deadline:
        time.sleep(0.05)
        now = cli.count("risk_profiles")
        count, same = now, same + 1 if now == count else 0
    return count


def rerun_finishes_exactly(cli: Cli, path: Path, seen: list[dict[str, Any]]) -> None:
    """Run the import again: every record created once; what the first run wrote is replayed
    (its ids kept), the rest created."""
    done = cli.count("risk_profiles")
    again = cli.run("risk", "import", str(path))
    assert again.returncode == 0, again.stderr
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
    assert cli.count("risk_profiles") == RECORDS
    stored = sorted(r["customer_id"] for r in _all_profiles(cli))
    assert stored == sorted(profile(n)["customer_id"] for n in range(RECORDS))


def _all_profiles(cli: Cli) -> list[Any]:
    out: list[Any] = []
    cursor = None
    while True:
        page = cli.store.risk_profiles.list(limit=100, starting_after=cursor)
        out.extend(page["data"])
        if not page["has_more"]:
            return out
        cursor = page["data"][-1]["id"]


def test_an_import_killed_part_way_then_run_again_creates_exactly_every_record(
    over_serve: Cli,
    tmp_path: Path,
) -> None:
    # Two signals only a real process gets, each once: SIGKILL (nothing can wind down) against
    # serve, and SIGINT (Ctrl-C: exit 130 and how to finish) on the local database, whose
    # transaction it interrupts. Ctrl-C between batches and inside one, on both backends, is
    # in-process in tests/cli/test_import.py.
    (tmp_path / "local").mkdir()
    on_local = local_cli(tmp_path / "local")
    for cli, sig in ((over_serve, signal.SIGKILL), (on_local, signal.SIGINT)):
        try:
            killed_then_run_again(cli, tmp_path, sig)
        finally:
            cli.close()


def killed_then_run_again(cli: Cli, tmp_path: Path, sig: int) -> None:
    """Import 2,000 records, stop the import with `sig` part way, and run it again."""
    path = big_file(tmp_path)
    child = cli.popen("risk", "import", str(path), CONVRISK_MAX_RETRIES="0")
    try:
        # The results fill the pipe (nobody reads it yet), so the child cannot finish: it is
        # stopped part way, between or inside batches.
        wait_for_rows(cli, 1)
        time.sleep(0.05)
        child.send_signal(sig)
        out, err = child.communicate(timeout=SAFETY_TIMEOUT)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=SAFETY_TIMEOUT)
    done = settled_count(cli)
    assert 0 < done < RECORDS
    if sig == signal.SIGINT:
        assert child.returncode == 130
        assert "Run the same command again to finish" in err and "Traceback" not in err
    else:
        assert child.returncode == -signal.SIGKILL
    rerun_finishes_exactly(cli, path, complete_results(out))


def test_a_dropped_connection_stops_the_import_and_a_rerun_finishes_it(tmp_path: Path) -> None:
    """`serve` is killed (-9) part way: the import stops with exit 5 and says how to finish;
    the same command against the restarted server (same database) makes exactly 2,000."""

    path = big_file(tmp_path)
    served = start_drained_serve(tmp_path)
    env = isolated_env(tmp_path, CONVRISK_BASE_URL=served.url, CONVRISK_TOKEN=TOKEN)
    remote = Cli("remote", tmp_path, served.db_path, env, serve=served)
    try:
        child = remote.popen("risk", "import", str(path), "-o", "jsonl", CONVRISK_MAX_RETRIES="0")
        try:
            wait_for_rows(remote, 300)
            stop_drained_serve(served, signal.SIGKILL)
            out, err = child.communicate(timeout=SAFETY_TIMEOUT)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait(timeout=SAFETY_TIMEOUT)
        assert child.returncode == 5, err
        assert "Run the same command again to finish" in err
        assert "Could not reach" in err
        assert 0 < remote.count("risk_profiles") < RECORDS
        restarted = start_drained_serve(tmp_path)
        remote.serve = restarted
        remote.env = {**env, "CONVRISK_BASE_URL": restarted.url}
        rerun_finishes_exactly(remote, path, complete_results(out))
    finally:
        remote.close()
        if remote.serve is not None and remote.serve.proc.poll() is None:
            stop_drained_serve(remote.serve)


def test_on_a_terminal_a_progress_bar_and_a_summary(tmp_path: Path) -> None:
    local = local_cli(tmp_path)
    path = jsonl(tmp_path / "p.jsonl", [profile(n) for n in range(600)] + [profile(9, score="x")])
    child, fd = on_a_terminal(local.env, "risk", "import", str(path))
    shown = read_until(fd, b"\x00never").decode()
    os.close(fd)
    assert child.wait(timeout=SAFETY_TIMEOUT) == 1
    assert "[" in shown and "%" in shown  # the bar, drawn while it ran
    assert "\r\nline 600: created rp_" in shown  # what was done, one line per record
    assert "Error: line 601: score must be a number" in shown
    summary = "601 records: 600 created, 0 updated, 0 replayed, 1 failed; "
    assert shown.count(summary) == 1 and shown.count("records/s") == 1  # once
    assert '"status"' not in shown  # no JSON result lines on a terminal


def test_a_local_import_loads_neither_httpx_nor_rich(tmp_path: Path) -> None:
    """The import stays on the light path: no HTTP client for the local database, no rich
    (no terminal: no progress bar), no other command group."""
    local = local_cli(tmp_path)
    path = jsonl(tmp_path / "p.jsonl", [profile(1)])
    absent = {
        "httpx",
        "rich",
        "convrisk.cli.commands.conv",
        "convrisk.cli.commands.config",
        "convrisk.cli.commands.serve",
    }
    call = (
        "from convrisk.cli.app import main\n"
        f"code = main(['risk', 'import', {str(path)!r}, '-o', 'id'])\n"
    )
    assert_loads_none_of(local.env, call, absent)


def test_conversation_records_from_stdin_and_their_mixed_fields(over_serve: Cli) -> None:
    conv = over_serve.store.conversations.create({"group_id": "g_1"})["id"]
    over_serve.store.conversations.update(conv, {"archived_at": 10})
    lines = [
        {"contact_id": "c_new"},
        {"id": conv, "is_muted": True, "archived_at": None, "pinned_message_id": "m_1"},
        {"is_pinned": True},
        {"id": conv, "group_id": "g_2"},
        {"contact_id": "c_x", "group_id": "g_x"},
    ]
    text = "".join(json.dumps(line) + "\n" for line in lines)
    planned = over_serve.run("conv", "import", "-", "--dry-run", "-o", "jsonl", input=text)
    assert planned.returncode == 2
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
    assert over_serve.count("conversations") == 1
    result = over_serve.run("conv", "import", "-", input=text)
    assert result.returncode == 1
    assert [r["status"] for r in results(result.stdout)] == [
        "created",
        "updated",
        "failed",
        "failed",
        "failed",
    ]
    changed = over_serve.store.conversations.retrieve(conv)
    assert (changed["is_muted"], changed["archived_at"], changed["pinned_message_id"]) == (
        True,
        None,
        "m_1",
    )
    assert over_serve.count("conversations") == 2


def test_dry_run_with_stop_on_error_stops_at_the_first_bad_record(
    over_serve: Cli, tmp_path: Path
) -> None:
    path = jsonl(tmp_path / "p.jsonl", [profile(1), profile(2, score="x"), profile(3, score="y")])
    result = over_serve.run("risk", "import", str(path), "--dry-run", "--stop-on-error")
    assert result.returncode == 2
    assert "line 2" in result.stderr and "line 3" not in result.stderr
    assert len(result.stdout.splitlines()) == 1


def test_jq_on_import_results_picks_the_failures_and_counts_by_status(
    over_serve: Cli,
    tmp_path: Path,
) -> None:
    source = tmp_path / "profiles.jsonl"
    source.write_text(
        '{"customer_id": "c1", "profile_type": "moderate", "score": 5}\n'
        '{"customer_id": "c2", "score": 5}\n'
        '{"customer_id": "c3", "profile_type": "aggressive", "score": 70}\n'
    )
    failures = over_serve.run(
        "risk",
        "import",
        str(source),
        "-o",
        "jsonl",
        "--jq",
        'select(.status == "failed") | "line \\(.line): \\(.error.param)"',
    )
    assert failures.returncode == 1
    assert failures.stdout == "line 2: profile_type\n"
    counts = over_serve.run(
        "risk",
        "import",
        str(source),
        "--jq",
        "map(.status) | group_by(.) | map({(.[0]): length}) | add",
    )
    assert counts.returncode == 1
    assert json.loads(counts.stdout) == {"replayed": 2, "failed": 1}
    assert over_serve.count("risk_profiles") == 2  # the second run replayed the first's creates
    plan = over_serve.run(
        "risk", "import", str(source), "--dry-run", "-o", "jsonl", "--jq", ".operation"
    )
    assert plan.returncode == 2 and plan.stdout == "create\ncreate\n"
    bad = over_serve.run("risk", "import", str(source), "--jq", ".[")
    assert bad.returncode == 2 and "--jq does not compile" in bad.stderr
    assert over_serve.count("risk_profiles") == 2
