"""The journal of writes through the installed script, against `convrisk serve` (or on the local
database where the process is the point): what each write records, never a token, and a journal
that cannot be written (the write still happens). The two-backend variants run in-process in
tests/cli/test_journal.py."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

from .both_backends import Cli, isolated_env, remote_cli
from .both_backends import Serve as Served
from .both_backends import on_local as on_local  # a fixture: convrisk on a local database
from .both_backends import over_serve as over_serve  # a fixture: convrisk against its own serve
from .both_backends import serve as serve  # a fixture: one serve for the module
from .console import CONVRISK, SAFETY_TIMEOUT, assert_loads_none_of

# A token that a record may carry too (a careless user pasted it into a field).
LEAKED = "tok-Leak3d-8c1f2a"


def journal_file(cli: Cli) -> Path:
    """Where convrisk run with this Cli's environment keeps its journal."""
    return Path(cli.env["XDG_STATE_HOME"]) / "convrisk" / "journal.jsonl"


def entries(path: Path) -> list[dict[str, Any]]:
    """Every line of a journal, each of which must be one JSON object."""
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def ok(cli: Cli, *args: str, input: str | None = None, **env: str) -> str:
    """Run convrisk, which must succeed; its stdout."""
    result = cli.run(*args, input=input, **env)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_each_kind_of_write_records_before_after_and_outcome(over_serve: Cli) -> None:
    path = journal_file(over_serve)
    conv = ok(over_serve, "conv", "create", "--contact-id", "c_1", "-o", "id").strip()
    ok(over_serve, "conv", "update", conv, "--mute", "-o", "id")
    ok(over_serve, "conv", "delete", conv, "--yes", "-o", "id")
    risk = ok(
        over_serve, "risk", "create", "--customer-id", "cus_1", "--profile-type", "moderate",
        "--score", "40", "-o", "id",
    ).strip()  # fmt: skip
    lines = "".join(json.dumps({"contact_id": f"c_{n}"}) + "\n" for n in range(3))
    imported = [
        json.loads(line) for line in ok(over_serve, "conv", "import", "-", input=lines).split()
    ]
    posted = json.loads(
        ok(over_serve, "api", "/v1/risk-profiles/" + risk, "-X", "PUT", "-d", '{"score": 7}')
    )
    ok(over_serve, "api", "-X", "DELETE", f"/v1/risk-profiles/{risk}")
    ok(over_serve, "conv", "list")  # a read: nothing journaled

    made, updated, deleted, risk_made, *batch, put, api_delete = entries(path)
    assert (made["operation"], made["id"], made["before"]) == ("create", conv, None)
    assert made["after"]["contact_id"] == "c_1" and made["outcome"]["status"] == "ok"
    assert made["argv"][:3] == ["convrisk", "conv", "create"]
    assert made["backend"] == over_serve.name and made["profile"] == "default"
    assert made["target"] == (over_serve.serve.url if over_serve.serve else str(over_serve.db_path))
    assert updated["before"]["is_muted"] is False and updated["after"]["is_muted"] is True
    assert (deleted["operation"], deleted["after"]) == ("delete", None)
    assert deleted["before"]["is_muted"] is True
    assert (risk_made["resource"], risk_made["id"]) == ("risk_profiles", risk)
    # An import: one entry per record, one run, each with the key that makes a re-run replay.
    assert [e["id"] for e in batch] == [r["id"] for r in imported]
    assert len({e["run"] for e in batch}) == 1 and all(e["idempotency_key"] for e in batch)
    assert (put["operation"], put["method"], put["id"], put["after"]) == (
        "api",
        "PUT",
        risk,
        posted,
    )
    assert put["outcome"] == {"status": "ok", "http_status": 200}
    assert (api_delete["method"], api_delete["resource"], api_delete["id"]) == (
        "DELETE", "risk_profiles", risk,
    )  # fmt: skip
    assert len({e["run"] for e in (made, updated, deleted)}) == 3
    assert len({e["entry"] for e in entries(path)}) == len(entries(path))


def test_remote_creates_journal_the_idempotency_key_they_sent(tmp_path: Path) -> None:
    import httpx

    made = remote_cli(tmp_path)
    assert made.serve is not None
    try:
        conv = ok(made, "conv", "create", "--contact-id", "c_k", "-o", "id").strip()
        body = json.dumps({"contact_id": "c_api"})
        sent = json.loads(ok(made, "api", "-X", "POST", "/v1/conversations", "-d", body))
        created, posted = entries(journal_file(made))
        # Each key is the one the service got: the same request with it is answered as a replay.
        for entry, record, contact in ((created, conv, "c_k"), (posted, sent["id"], "c_api")):
            key = entry["idempotency_key"]
            assert key, entry
            again = httpx.post(
                made.serve.url + "/v1/conversations",
                json={"contact_id": contact},
                headers={"Authorization": f"Bearer {made.serve.token}", "Idempotency-Key": key},
            )
            assert again.status_code == 200 and again.json()["id"] == record
    finally:
        made.close()
        code, log = made.serve.stop()
    assert code == 0, log


def test_an_import_run_again_is_journaled_as_replayed(over_serve: Cli) -> None:
    lines = json.dumps({"contact_id": "c_9"}) + "\n"
    ok(over_serve, "conv", "import", "-", input=lines)
    ok(over_serve, "conv", "import", "-", input=lines)
    first, again = entries(journal_file(over_serve))
    assert first["outcome"]["status"] == "ok" and again["outcome"]["status"] == "replayed"
    assert first["id"] == again["id"] and first["run"] != again["run"]


def test_no_form_of_the_token_is_ever_journaled(over_serve: Cli) -> None:
    """After every kind of write, with the token in the environment and in the data written
    (a field, a path, a body): the journal holds none of it, as it is or encoded."""
    env = {"CONVRISK_TOKEN": over_serve.env.get("CONVRISK_TOKEN", LEAKED)}
    token = env["CONVRISK_TOKEN"]
    conv = ok(over_serve, "conv", "create", "--contact-id", token, "-o", "id", **env).strip()
    ok(over_serve, "conv", "update", conv, "--pinned-message-id", token, **env)
    ok(over_serve, "conv", "import", "-", input=json.dumps({"group_id": token}) + "\n", **env)
    ok(over_serve, "api", "/v1/conversations", "-d", json.dumps({"contact_id": token}), **env)
    refused = ["conv", "update", f"conv_{token}", "--mute"]
    over_serve.run(*refused, **env)  # refused, with the id echoed
    ok(over_serve, "conv", "delete", conv, "--yes", **env)
    text = journal_file(over_serve).read_text("utf-8")
    assert len(text.splitlines()) >= 5
    for form in (token, token.replace("-", "\\u002d"), token.replace("-", "%2D")):
        assert form not in text
    assert "***" in text


def test_a_failed_write_is_journaled_and_a_refused_one_is_not(over_serve: Cli) -> None:
    missing = "conv_01HVZ8Q2K4M6P8R0T2V4X6Z8B0"
    result = over_serve.run("conv", "update", missing, "--mute")
    assert result.returncode == 3, result.stderr
    (failed,) = entries(journal_file(over_serve))
    assert (failed["operation"], failed["id"], failed["before"]) == ("update", missing, None)
    assert failed["outcome"]["status"] == "failed" and missing in failed["outcome"]["error"]
    # An id of another shape: refused before anything is done locally (no entry); sent to a
    # remote service, which refuses it (an entry, with its HTTP status).
    refused = over_serve.run("conv", "update", "not-an-id", "--mute")
    assert refused.returncode == (1 if over_serve.remote else 2), refused.stderr
    after = entries(journal_file(over_serve))[1:]
    if over_serve.remote:
        assert [e["outcome"]["http_status"] for e in after] == [400]
    else:
        assert after == []


def test_with_the_journal_off_nothing_is_written(over_serve: Cli) -> None:
    ok(over_serve, "conv", "create", "--contact-id", "c_1", CONVRISK_JOURNAL="off")
    assert not journal_file(over_serve).parent.exists()


def test_a_journal_that_cannot_be_written_warns_once_and_the_writes_happen(
    over_serve: Cli, tmp_path: Path
) -> None:
    # A symlink in the journal's place; a directory, or a file where its folder would be, and
    # the local database, in-process in tests/cli/test_journal.py.
    path = tmp_path / "j" / "journal.jsonl"
    path.parent.mkdir()
    (tmp_path / "elsewhere").write_text("")
    path.symlink_to(tmp_path / "elsewhere")
    made = over_serve.run(
        "conv", "create", "--contact-id", "c_1", "-o", "id", CONVRISK_JOURNAL=str(path)
    )
    assert made.returncode == 0, made.stderr
    assert made.stdout.startswith("conv_")
    (warning,) = made.stderr.splitlines()
    assert warning.startswith("Warning: The journal was not written") and str(path) in warning
    ids = [made.stdout.strip(), ok(over_serve, "conv", "create", "--contact-id", "c_2", "-o", "id")]
    both = over_serve.run(
        "conv", "update", *[i.strip() for i in ids], "--mute", "-o", "id",
        CONVRISK_JOURNAL=str(path),
    )  # fmt: skip
    assert both.returncode == 0 and len(both.stdout.split()) == 2
    assert len(both.stderr.splitlines()) == 1  # one warning for the command, not one per write
    assert over_serve.count("conversations") == 2
    assert (tmp_path / "elsewhere").read_text() == ""


def test_a_full_disk_leaves_no_half_line_and_the_write_stands(
    on_local: Cli, tmp_path: Path
) -> None:
    """The file size limit stands in for a full disk: the append fails (EFBIG), the journal is
    cut back to where it was, the create is done, one warning. A limit set on the process
    itself, so here only: on the local database, where the same process writes the database
    under it too; both backends, with the append made to fail in-process, in
    tests/cli/test_journal.py."""
    path = tmp_path / "journal.jsonl"
    ok(on_local, "conv", "create", "--contact-id", "c_0", CONVRISK_JOURNAL=str(path))
    # A journal larger than the database's files, so that only the journal meets the limit.
    path.write_bytes(path.read_bytes() * 4000)
    before = path.read_bytes()
    limit = len(before) + 100  # room for part of a line, not for all of it

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    result = subprocess.run(
        [str(CONVRISK), "conv", "create", "--contact-id", "c_1", "-o", "id"],
        env={**on_local.env, "CONVRISK_JOURNAL": str(path)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=SAFETY_TIMEOUT,
        preexec_fn=small_files,
    )
    assert result.returncode == 0, result.stderr
    (warning,) = result.stderr.splitlines()
    assert "The journal was not written" in warning and "too large" in warning.lower()
    assert path.read_bytes() == before
    assert on_local.store.conversations.retrieve(result.stdout.strip())["contact_id"] == "c_1"


def test_a_remote_write_loads_no_sqlite(serve: Served, tmp_path: Path) -> None:
    """The journal's folder is made without the local backend's database module."""
    env = isolated_env(tmp_path, CONVRISK_BASE_URL=serve.url, CONVRISK_TOKEN=serve.token)
    args = ["conv", "create", "--contact-id", "c", "-o", "id"]
    call = f"from convrisk.cli.app import main\ncode = main({args!r})\n"
    assert_loads_none_of(
        env, call, {"sqlite3", "_sqlite3", "convrisk.local_backend.store.database"}
    )
    assert len(entries(tmp_path / "state" / "convrisk" / "journal.jsonl")) == 1


def test_the_journal_is_private(over_serve: Cli) -> None:
    ok(over_serve, "conv", "create", "--contact-id", "c_1")
    path = journal_file(over_serve)
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700
    assert sys.platform != "win32" and os.stat(path).st_uid == os.geteuid()


def test_a_killed_import_loses_at_most_the_batch_in_flight(over_serve: Cli) -> None:
    """The journal is appended batch by batch as an import goes: killed at any point, every
    line it holds names a record that exists (but the last, which a kill in the middle of its
    write may cut short), and at most one batch (256 records) was written without its lines.
    A SIGKILL needs the real process: here only, against serve."""
    import signal
    import time

    count = 20_000
    records = "".join(json.dumps({"contact_id": f"c_{n}"}) + "\n" for n in range(count))
    source = over_serve.home / "records.jsonl"
    source.write_text(records)
    path = journal_file(over_serve)
    proc = over_serve.popen("conv", "import", str(source))
    deadline = time.monotonic() + SAFETY_TIMEOUT
    while proc.poll() is None and time.monotonic() < deadline:
        if path.exists() and path.stat().st_size > 0:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=SAFETY_TIMEOUT)
    from convrisk.cli.journal.entries import Problem, read

    read_back = list(read(path))
    cut = [item for item in read_back if isinstance(item, Problem)]
    assert cut in ([], [Problem(path, len(read_back), "cut short (no end of line), skipped")])
    journaled = [entry["id"] for entry in read_back if not isinstance(entry, Problem)]
    stored = {record["id"] for record in _every(over_serve.store.conversations)}
    assert journaled and set(journaled) <= stored and len(set(journaled)) == len(journaled)
    assert len(stored) - len(journaled) <= 256, (len(stored), len(journaled))
    print(f"killed after {len(stored)} of {count} records, {len(journaled)} journaled")


def _every(resource: Any) -> list[dict[str, Any]]:
    """Every record of a resource of the local store, page by page."""
    found: list[dict[str, Any]] = []
    cursor = None
    for _ in range(10_000):
        page = resource.list(limit=100, starting_after=cursor)
        found += page["data"]
        if not page["has_more"]:
            return found
        cursor = page["data"][-1]["id"]
    raise AssertionError("more pages than records")
