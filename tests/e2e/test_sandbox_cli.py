"""`convrisk sandbox` through the installed script, against a sandbox's admin routes on
127.0.0.1 (a stand-in that keeps the interface: tests/e2e/fake_sandbox.py). Each behaviour runs
once here; the variants of its refusals run in-process in tests/cli/test_sandbox_cli.py, under
the same test names."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.loopback import JSONService, on_loopback, running, url_of

from .console import run
from .fake_sandbox import TOKEN, FakeSandbox, entry

JOURNAL = [
    entry(1, "POST", "/v1/conversations", 201, body='{"contact_id":"c_1"}'),
    entry(2, "GET", "/v1/conversations", 200, query="limit=10"),
    entry(3, "PUT", "/v1/conversations/conv_1", 200, body='{"is_muted":true}'),
    entry(4, "POST", "/v1/risk-profiles", 400, body='{"score":"high"}'),
    entry(5, "GET", "/v1/conversations/conv_404", 404),
]


@pytest.fixture
def sandbox() -> Iterator[type[FakeSandbox]]:
    """A fresh stand-in sandbox with JOURNAL recorded."""
    handler = FakeSandbox.fresh(JOURNAL)
    with running(on_loopback(handler)) as server:
        handler.url = url_of(server)  # type: ignore[attr-defined]
        yield handler


def _env(env: dict[str, str], sandbox: type[FakeSandbox]) -> dict[str, str]:
    url: str = sandbox.url  # type: ignore[attr-defined]
    return {**env, "CONVRISK_BASE_URL": url, "CONVRISK_TOKEN": TOKEN, "CONVRISK_JOURNAL": "off"}


def test_requests_lists_what_the_sandbox_received_with_its_filters(
    env: dict[str, str], sandbox: type[FakeSandbox]
) -> None:
    everything = run(_env(env, sandbox), "sandbox", "requests", "-o", "json")
    assert everything.returncode == 0, everything.stderr
    assert [r["seq"] for r in json.loads(everything.stdout)] == [1, 2, 3, 4, 5]
    posts = run(
        _env(env, sandbox), "sandbox", "requests", "--method", "post", "--path", "/v1/*", "-o", "id"
    )
    assert posts.stdout.split() == ["1", "4"]
    not_found = run(_env(env, sandbox), "sandbox", "requests", "--status", "404", "-o", "jsonl")
    assert [json.loads(line)["path"] for line in not_found.stdout.splitlines()] == [
        "/v1/conversations/conv_404"
    ]


def test_requests_refuses_bad_filters_before_sending(
    env: dict[str, str], sandbox: type[FakeSandbox]
) -> None:
    result = run(
        _env(env, sandbox), "sandbox", "requests", "--status", "99"
    )  # every one: in-process
    assert result.returncode == 2
    assert "--status" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert sandbox.seen == []


def test_verify_holds_with_exit_0(env: dict[str, str], sandbox: type[FakeSandbox]) -> None:
    result = run(
        _env(env, sandbox),
        "sandbox",
        "verify",
        "--method",
        "POST",
        "--path",
        "/v1/conversations",
        "--count",
        "1",
    )
    assert result.returncode == 0, result.stderr
    assert "Verified: 1 request POST /v1/conversations (expected exactly 1)" in result.stdout


def test_verify_that_fails_is_exit_1_with_the_near_misses(
    env: dict[str, str], sandbox: type[FakeSandbox]
) -> None:
    result = run(
        _env(env, sandbox),
        "sandbox",
        "verify",
        "--method",
        "DELETE",
        "--path",
        "/v1/conversations/*",
    )
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert "Near misses, the closest first:" in lines
    assert "  #3 PUT /v1/conversations/conv_1 -> 200: another method" in lines
    assert "  #5 GET /v1/conversations/conv_404 -> 404: another method" in lines
    assert lines[-1] == (
        "Error: Expected at least 1 DELETE /v1/conversations/*; the sandbox received 0."
    )
    other_path = run(
        _env(env, sandbox), "sandbox", "verify", "--method", "POST", "--path", "/v1/risk-profile"
    )
    assert other_path.returncode == 1
    assert "  #4 POST /v1/risk-profiles -> 400: another path" in other_path.stderr.splitlines()


def test_verify_count_too_many_names_the_matches(
    env: dict[str, str], sandbox: type[FakeSandbox]
) -> None:
    result = run(
        _env(env, sandbox), "sandbox", "verify", "--method", "GET", "--path", "*", "--count", "1"
    )
    assert result.returncode == 1
    assert "Matched: #2, #5" in result.stderr
    assert "Expected exactly 1 GET *; the sandbox received 2." in result.stderr


def test_verify_body_jq_checks_the_bodies(env: dict[str, str], sandbox: type[FakeSandbox]) -> None:
    args = ["sandbox", "verify", "--method", "POST", "--path", "/v1/*"]
    holds = run(_env(env, sandbox), *args, "--body-jq", '.contact_id == "c_1"', "--count", "1")
    assert holds.returncode == 0, holds.stderr
    refused = run(_env(env, sandbox), *args, "--body-jq", '.contact_id == "c_2"')
    assert refused.returncode == 1
    assert "  #1 POST /v1/conversations -> 201: --body-jq is false on its body" in (
        refused.stderr.splitlines()
    )


def test_verify_refuses_bad_input_with_exit_2_before_sending(
    env: dict[str, str], sandbox: type[FakeSandbox]
) -> None:
    # Options that cannot go together; every bad input in-process.
    args = ["--method", "POST", "--path", "/v1/*", "--count", "1", "--at-least", "1"]
    result = run(_env(env, sandbox), "sandbox", "verify", *args)
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert sandbox.seen == []


class NotASandbox(JSONService):
    """A service without admin routes: 404 for everything."""

    def do_GET(self) -> None:
        """No such route."""
        self.send_json(404, {"error": {"type": "invalid_request_error", "message": "Nope."}})

    do_POST = do_GET


def test_a_target_that_is_no_sandbox_is_exit_2_in_one_line(env: dict[str, str]) -> None:
    args = ["snapshot", "-"]  # reset and requests as well, in-process
    with running(on_loopback(NotASandbox)) as server:
        remote = {**env, "CONVRISK_BASE_URL": url_of(server), "CONVRISK_TOKEN": TOKEN}
        result = run(remote, "sandbox", *args)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"Error: The service is not a convrisk sandbox: /__sandbox/{args[0]} has no admin route "
        "(it answered 404 Not Found). `convrisk sandbox` talks to `convrisk serve`."
    ]


def test_the_local_backend_has_no_sandbox(env: dict[str, str]) -> None:
    result = run(env, "sandbox", "reset")  # requests and verify as well, in-process
    assert result.returncode == 2
    assert "talks to a running `convrisk serve`" in result.stderr


def test_a_wrong_token_is_exit_4(env: dict[str, str], sandbox: type[FakeSandbox]) -> None:
    result = run({**_env(env, sandbox), "CONVRISK_TOKEN": "x" * 30}, "sandbox", "requests")
    assert result.returncode == 4


RECORDS: list[dict[str, Any]] = [
    {"resource": "conversations", "id": "conv_1", "contact_id": "c_1"},
    {"resource": "risk_profiles", "id": "rp_1", "customer_id": "cus_1", "score": 5},
]


def test_reset_empties_the_sandbox(env: dict[str, str], sandbox: type[FakeSandbox]) -> None:
    sandbox.records[:] = RECORDS
    result = run(_env(env, sandbox), "sandbox", "reset")
    assert result.returncode == 0, result.stderr
    assert sandbox.journal == [] and sandbox.records == []
    assert [(method, path) for method, path, _ in sandbox.seen] == [("POST", "/__sandbox/reset")]


def test_snapshot_and_restore_carry_the_records_across(
    env: dict[str, str], sandbox: type[FakeSandbox], tmp_path: Path
) -> None:
    sandbox.records[:] = RECORDS
    file = tmp_path / "seed.jsonl"
    taken = run(_env(env, sandbox), "sandbox", "snapshot", str(file))
    assert taken.returncode == 0, taken.stderr
    assert [json.loads(line) for line in file.read_text().splitlines()] == RECORDS
    piped = run(_env(env, sandbox), "sandbox", "snapshot", "-")
    assert piped.stdout == file.read_text()
    sandbox.records.clear()
    restored = run(_env(env, sandbox), "sandbox", "restore", str(file))
    assert restored.returncode == 0, restored.stderr
    assert "Restored 1 conversation and 1 risk profile." in restored.stderr
    assert sandbox.records == RECORDS
    from_stdin = run(_env(env, sandbox), "sandbox", "restore", "-", input=file.read_text())
    assert from_stdin.returncode == 0, from_stdin.stderr


def test_restore_refuses_what_is_no_snapshot_and_sends_nothing(
    env: dict[str, str], sandbox: type[FakeSandbox], tmp_path: Path
) -> None:
    sandbox.records[:] = RECORDS
    file = tmp_path / "bad.jsonl"
    file.write_bytes(b'{"resource": "conversations", "id": "c"}\nnot json\n')  # others: in-process
    result = run(_env(env, sandbox), "sandbox", "restore", str(file))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"Error: {file}: line 2 is not JSON: it is not a snapshot; nothing was sent."
    ]
    assert sandbox.seen == [] and sandbox.records == RECORDS


def test_a_failed_snapshot_leaves_the_file_as_it_was(env: dict[str, str], tmp_path: Path) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    file = folder / "seed.jsonl"
    file.write_text("old\n")
    with running(on_loopback(NotASandbox)) as server:
        remote = {**env, "CONVRISK_BASE_URL": url_of(server), "CONVRISK_TOKEN": TOKEN}
        result = run(remote, "sandbox", "snapshot", str(file))
    assert result.returncode == 2
    assert file.read_text() == "old\n"
    assert [p.name for p in folder.iterdir()] == ["seed.jsonl"]


def test_text_from_the_journal_is_escaped_in_near_misses(env: dict[str, str]) -> None:
    handler = FakeSandbox.fresh([entry(1, "GET", "/v1/\x1b[2J\x1b]0;owned\x07x\nError: forged")])
    with running(on_loopback(handler)) as server:
        remote = {**env, "CONVRISK_BASE_URL": url_of(server), "CONVRISK_TOKEN": TOKEN}
        result = run(remote, "sandbox", "verify", "--method", "POST", "--path", "/v1/*")
    assert result.returncode == 1
    assert "\x1b" not in result.stderr and "\x07" not in result.stderr
    assert [line for line in result.stderr.splitlines() if line.startswith("Error:")] == [
        "Error: Expected at least 1 POST /v1/*; the sandbox received 0."
    ]


def test_requests_on_a_terminal_is_a_table_with_data_escaped(env: dict[str, str]) -> None:
    from .screen import on_screen

    journal = [
        entry(1, "POST", "/v1/conversations", 200, body='{"contact_id":"c_1"}'),
        entry(2, "GET", "/v1/\x1b[2Jgone", None, fault="drop"),
    ]
    handler = FakeSandbox.fresh(journal)
    with running(on_loopback(handler)) as server:
        remote = {**env, "CONVRISK_BASE_URL": url_of(server), "CONVRISK_TOKEN": TOKEN}
        lines = [line.rstrip() for line in on_screen(remote, "sandbox", "requests", columns=100)]
    shown = [line for line in lines if line]
    assert shown[0].split() == ["SEQ", "TIME", "METHOD", "PATH", "STATUS", "MS", "BODY"]
    assert shown[1].split() == [
        "1",
        "2026-11-25T07:00:00.000Z",
        "POST",
        "/v1/conversations",
        "200",
        "1.5",
        '{"contact_id":"c_1"}',
    ]
    assert shown[2].split() == [
        "2",
        "2026-11-25T07:00:00.000Z",
        "GET",
        "/v1/\\x1b[2Jgone",
        "-",
        "(drop)",
        "1.5",
    ]


def test_restore_refuses_a_file_over_the_cap_without_reading_it_all(
    env: dict[str, str], sandbox: type[FakeSandbox], tmp_path: Path
) -> None:
    from convrisk.api_client.sandbox import MAX_SNAPSHOT_BYTES

    file = tmp_path / "huge.jsonl"
    with file.open("wb") as out:
        out.truncate(MAX_SNAPSHOT_BYTES + 1)
    result = run(_env(env, sandbox), "sandbox", "restore", str(file))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"Error: {file} is over 64 MiB, the most a snapshot may hold; nothing was sent."
    ]
    assert sandbox.seen == []


def test_requests_says_how_many_the_journal_dropped(
    env: dict[str, str], sandbox: type[FakeSandbox]
) -> None:
    sandbox.dropped = 12_345
    result = run(_env(env, sandbox), "sandbox", "requests", "-o", "id")
    assert result.returncode == 0
    assert result.stdout.split() == ["1", "2", "3", "4", "5"]
    assert result.stderr.splitlines() == [
        "The journal dropped its 12,345 oldest requests (it keeps the most recent); they are "
        "not listed."
    ]


def test_reset_and_restore_keep_the_profiles_guards(
    env: dict[str, str], sandbox: type[FakeSandbox], tmp_path: Path
) -> None:
    # The mark of a protected profile, from the environment; a read-only one too, in-process.
    mark, refusal = "CONVRISK_PROTECTED", "is protected: refusing to"
    file = tmp_path / "seed.jsonl"
    file.write_text(json.dumps(RECORDS[0]) + "\n")
    guarded = {**_env(env, sandbox), mark: "1"}
    for args in (["reset"], ["restore", str(file)]):
        result = run(guarded, "sandbox", *args)
        assert result.returncode == 2, result.stderr
        assert refusal in result.stderr
    assert sandbox.seen == []
    passed = run({**_env(env, sandbox), "CONVRISK_PROTECTED": "1"}, "sandbox", "reset", "--yes")
    assert passed.returncode == 0, passed.stderr
