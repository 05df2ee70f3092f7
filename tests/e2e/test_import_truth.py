"""Import reports what it did (issue 18, item 1): a record the service answered from an earlier
identical request is `replayed`, never `created`; a dry run says `would_replay`; the counts use
the same words; on a terminal the summary is shown once and the ids of what was done are shown.
The installed convrisk against `convrisk serve` (or the local database, on a terminal); the
two-backend variants run in-process in tests/cli/test_import_truth.py."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from convrisk.local_backend.backend import LocalBackend
from tests.loopback import JSONService, on_loopback, running, url_of

from .both_backends import Cli, isolated_env, local_cli, serving
from .both_backends import over_serve as over_serve  # a fixture: convrisk against its own serve
from .console import run
from .screen import Terminal


def results(stdout: str) -> list[dict[str, Any]]:
    """The JSON-lines results of an import."""
    return [json.loads(line) for line in stdout.splitlines()]


def contacts(cli: Cli) -> list[str]:
    """The contact ids of every stored conversation, sorted."""
    return sorted(str(c.get("contact_id")) for c in cli.store.conversations.list(limit=100)["data"])


def test_tuesdays_file_with_mondays_line_reports_it_replayed(
    over_serve: Cli, tmp_path: Path
) -> None:
    monday = tmp_path / "monday.jsonl"
    monday.write_text('{"contact_id":"c_777"}\n')
    tuesday = tmp_path / "tuesday.jsonl"
    tuesday.write_text('{"contact_id":"c_777"}\n{"contact_id":"c_778"}\n')
    first = over_serve.run("conv", "import", str(monday))
    assert first.returncode == 0, first.stderr
    assert first.stderr == "1 record: 1 created, 0 updated, 0 replayed, 0 failed.\n"
    second = over_serve.run("conv", "import", str(tuesday))
    assert second.returncode == 0, second.stderr
    rows = results(second.stdout)
    assert [(r["line"], r["status"]) for r in rows] == [(1, "replayed"), (2, "created")]
    assert rows[0]["id"] == results(first.stdout)[0]["id"]
    assert second.stderr.startswith("2 records: 1 created, 0 updated, 1 replayed, 0 failed.\n")
    assert "CONVRISK_IMPORT_RUN" in second.stderr  # how to create it again on purpose
    assert contacts(over_serve) == ["c_777", "c_778"]


def test_a_rerun_reports_every_record_replayed_and_writes_nothing(
    over_serve: Cli, tmp_path: Path
) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps({"contact_id": f"c_{n}"}) + "\n" for n in range(300)))
    first = over_serve.run("conv", "import", str(path))
    again = over_serve.run("conv", "import", str(path))
    assert first.returncode == again.returncode == 0, again.stderr
    assert {r["status"] for r in results(first.stdout)} == {"created"}
    assert {r["status"] for r in results(again.stdout)} == {"replayed"}
    assert [r["id"] for r in results(again.stdout)] == [r["id"] for r in results(first.stdout)]
    assert (
        again.stderr.splitlines()[0] == "300 records: 0 created, 0 updated, 300 replayed, 0 failed."
    )
    assert over_serve.count("conversations") == 300


def test_a_dry_run_says_would_replay_where_the_service_can_tell(
    over_serve: Cli, tmp_path: Path
) -> None:
    done = tmp_path / "done.jsonl"
    done.write_text('{"contact_id":"c_1"}\n')
    made = over_serve.run("conv", "import", str(done), "-o", "id")
    assert made.returncode == 0, made.stderr
    path = tmp_path / "more.jsonl"
    path.write_text('{"contact_id":"c_1"}\n{"contact_id":"c_2"}\n')
    plan = over_serve.run("conv", "import", str(path), "--dry-run", "-o", "jsonl")
    assert plan.returncode == 0, plan.stderr
    rows = results(plan.stdout)
    if over_serve.remote:
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
        readable = over_serve.run("conv", "import", str(path), "--dry-run")
        assert readable.stdout.splitlines()[0].startswith(f"would replay {made.stdout.strip()}")
    assert over_serve.count("conversations") == 1


def test_on_a_terminal_the_ids_are_shown_and_the_summary_once(tmp_path: Path) -> None:
    local = local_cli(tmp_path)
    path = tmp_path / "p.jsonl"
    path.write_text('{"contact_id":"c_1"}\n{"contact_id":"c_2"}\n{"group_id":""}\n')
    term = Terminal(local.env, ["conv", "import", str(path)], columns=100)
    assert term.finish() == 1
    shown = term.text()
    ids = [c["id"] for c in sorted(local.store.conversations.list()["data"], key=lambda c: c["id"])]
    # In file order, each record once: the two done, then the failure, then the counts once.
    assert shown[:2] == [f"line 1: created {ids[0]}", f"line 2: created {ids[1]}"]
    assert shown[2].startswith("Error: line 3:")
    summary = [line for line in shown if "records:" in line]
    assert summary == [shown[3]]
    assert shown[3].startswith("3 records: 2 created, 0 updated, 0 replayed, 1 failed; ")
    assert shown[3].endswith(" records/s.")
    again = Terminal(local.env, ["conv", "import", str(path)], columns=100)
    assert again.finish() == 1
    assert f"line 1: replayed {ids[0]}" in again.text()


class ForgedId(JSONService):
    """A hostile service: every create answers an id that carries a line break and a forged
    result line (and, with `replayed`, says it replayed)."""

    replayed = False

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        body = json.dumps({"id": "conv_1\nline 9: created conv_forged\x1b[2J"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if self.replayed:
            self.send_header("Idempotent-Replayed", "true")
        self.end_headers()
        self.wfile.write(body)


class ReplayedForgedId(ForgedId):
    """ForgedId, saying it replayed."""

    replayed = True


def test_an_id_from_the_service_cannot_forge_a_result_line(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text('{"contact_id":"c_1"}\n')
    with running(on_loopback(ForgedId)) as server:
        env = isolated_env(tmp_path, CONVRISK_BASE_URL=url_of(server), CONVRISK_TOKEN="t")
        term = Terminal(env, ["conv", "import", str(path)], columns=120)
        assert term.finish() == 0
    shown = term.text()
    assert shown[0] == "line 1: created conv_1\\nline 9: created conv_forged\\x1b[2J"
    assert not any(line.startswith("line 9") for line in shown)


def test_a_replayed_id_that_cannot_be_read_back_is_a_failure_that_forges_nothing(
    tmp_path: Path,
) -> None:
    # A replayed record is read back to check it is still there (issue 29, item 4): an id that
    # is not one cannot be, so the record is failed, not replayed, and its line is escaped.
    path = tmp_path / "p.jsonl"
    path.write_text('{"contact_id":"c_1"}\n')
    with running(on_loopback(ReplayedForgedId)) as server:
        env = isolated_env(tmp_path, CONVRISK_BASE_URL=url_of(server), CONVRISK_TOKEN="t")
        term = Terminal(env, ["conv", "import", str(path)], columns=200)
        assert term.finish() == 1
    shown = term.text()
    assert shown[0].startswith(
        "Error: line 1: the service replayed conv_1\\nline 9: created conv_forged\\x1b[2J "
    )
    assert "check it is still there failed" in shown[0]
    assert not any(line.startswith("line 9") for line in shown)
    assert not any("replayed conv" in line and "Error" not in line for line in shown)


def test_under_faults_a_first_run_says_created_and_a_rerun_says_replayed(tmp_path: Path) -> None:
    """`serve --faults` drops connections before and after the write: a retry is then answered
    from the stored answer of the call's own lost attempt, which is still this run's create."""
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps({"contact_id": f"c_{n}"}) + "\n" for n in range(40)))
    with serving(tmp_path, "--faults", "0.3", "--seed", "7") as served:
        env = isolated_env(
            tmp_path,
            CONVRISK_BASE_URL=served.url,
            CONVRISK_TOKEN=served.token,
            CONVRISK_MAX_RETRIES="10",
        )
        first = run(env, "conv", "import", str(path))
        # Whole-second stamps leave two seconds of doubt, counted as this run's create (see
        # api_client.remote.http._made_before): a re-run comes later than that.
        time.sleep(2.5)
        again = run(env, "conv", "import", str(path))
    _, log = served.stop()
    assert " fault=drop-after" in log  # answers were lost after the write
    assert first.returncode == again.returncode == 0, again.stderr
    assert first.stderr == "40 records: 40 created, 0 updated, 0 replayed, 0 failed.\n"
    assert again.stderr.startswith("40 records: 0 created, 0 updated, 40 replayed, 0 failed.\n")
    with LocalBackend(served.db_path) as store:
        assert len(store.conversations.list(limit=100)["data"]) == 40
