"""`convrisk sandbox fault add|list|clear` in-process against an in-process serve on loopback:
the options become the rule the sandbox keeps, each refusal is exit 2 with one line and nothing
sent, and `sandbox requests` names the rule that fired. The same behaviours run once through
the installed script in tests/e2e/test_sandbox_faults.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.cli.served_in_process import Served, served
from tests.shared_server import SharedServer

from .conftest import Invoke


@pytest.fixture
def serve(
    cli_server: SharedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Served]:
    """The in-process serve over a fresh database, convrisk pointed at it, no rule yet."""
    monkeypatch.setenv("CONVRISK_JOURNAL", "off")
    with served(cli_server, tmp_path / "faults.db", monkeypatch) as running:
        yield running


def rules_of(serve: Served) -> list[dict[str, Any]]:
    """The rules the sandbox holds, straight from its route."""
    headers = {"Authorization": f"Bearer {serve.token}"}
    answer = httpx.get(f"{serve.url}/__sandbox/faults", headers=headers, timeout=10)
    return list(answer.json()["data"])


def test_add_sends_the_rule_the_options_say_and_prints_it(invoke: Invoke, serve: Served) -> None:
    added = invoke(
        "sandbox", "fault", "add", "--method", "post", "--path", "/v1/conversations",
        "--status", "503", "--retry-after", "1", "--times", "2", "--after", "1",
        "--delay", "10", "-o", "json",
    ).ok().json()  # fmt: skip
    assert added == {
        "id": 1,
        "method": "POST",
        "path": "/v1/conversations",
        "status": 503,
        "drop": False,
        "drop_after": False,
        "times": 2,
        "after": 1,
        "delay_ms": 10,
        "retry_after": 1,
        "body_jq": None,
        "seen": 0,
        "fired": 0,
    }
    assert rules_of(serve) == [added]


def test_list_shows_what_each_rule_does_and_how_often_it_fired(
    invoke: Invoke, serve: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "160")
    invoke("sandbox", "fault", "add", "--method", "POST", "--path", "/v1/conversations",
           "--status", "503", "--retry-after", "1").ok()  # fmt: skip
    invoke("sandbox", "fault", "add", "--method", "*", "--path", "/v1/risk-profiles/*",
           "--drop-after", "--after", "2").ok()  # fmt: skip
    created = invoke("conv", "create", "--contact-id", "c_1", "-o", "json")
    assert created.code == 0, created.stderr  # the client retried past the 503
    listed = invoke("sandbox", "fault", "list", "-o", "json").ok().json()
    assert [(r["id"], r["seen"], r["fired"]) for r in listed] == [(1, 1, 1), (2, 0, 0)]
    table = invoke("sandbox", "fault", "list", "-o", "table").ok().lines()
    assert table[0].split() == ["ID", "METHOD", "PATH", "FAULT", "AFTER", "TIMES", "SEEN", "FIRED"]
    assert table[1].split() == ["1", "POST", "/v1/conversations", "503", "retry-after", "1", "0",
                                "1", "1", "1"]  # fmt: skip
    assert table[2].split() == ["2", "*", "/v1/risk-profiles/*", "drop-after", "2", "1", "0", "0"]
    requests = invoke("sandbox", "requests", "-o", "json").ok().json()
    assert [(r["status"], r["fault"], r["fault_rule"]) for r in requests] == [
        (503, "503", 1),
        (200, None, None),
    ]
    assert "503 (503, rule 1)" in invoke("sandbox", "requests", "-o", "table").ok().stdout


def test_clear_removes_every_rule_and_says_how_many(invoke: Invoke, serve: Served) -> None:
    for status in ("500", "503"):
        invoke("sandbox", "fault", "add", "--method", "GET", "--path", "/v1/*",
               "--status", status).ok()  # fmt: skip
    cleared = invoke("sandbox", "fault", "clear").ok()
    assert cleared.stderr.strip() == "Removed 2 fault rules."
    assert rules_of(serve) == []
    assert invoke("sandbox", "fault", "list", "-o", "json").ok().json() == []


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--status", "503", "--times", "0"], "--times"),
        (["--status", "503", "--after", "-1"], "--after"),
        (["--status", "99"], "--status"),
        (["--status", "503", "--drop"], "--drop"),
        (["--drop", "--drop-after"], "--drop-after"),
        (["--delay", "5", "--retry-after", "1"], "--retry-after"),
        (["--delay", "60001"], "--delay"),
        (["--drop", "--body-jq", "."], "--body-jq"),
        (["--body-jq", ".a >"], "--body-jq"),
        (["--times", "3"], "does nothing"),
        (["--path", "/v1/[conv", "--drop"], "never closed"),
        (["--path", "/v1/[]]", "--drop"], "must not begin"),
        (["--method", "PO ST", "--drop"], "--method"),
        (["--method", "A" * 21, "--drop"], "--method"),
        (["--path", "/v1/" + "a" * 2045, "--drop"], "over 2048 characters"),
        (["--status", "500", "--body-jq", "." * 4097], "over 4096 characters"),
    ],
)
def test_bad_flags_exit_2_with_one_line_and_nothing_is_sent(
    invoke: Invoke, serve: Served, args: list[str], named: str
) -> None:
    defaults = {"--method": "POST", "--path": "/v1/conversations"}
    for flag, value in defaults.items():
        if flag not in args:
            args = [flag, value, *args]
    result = invoke("sandbox", "fault", "add", *args)
    assert result.code == 2, result.stderr
    assert named in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert serve.log == []  # nothing reached the sandbox
    assert rules_of(serve) == []


@pytest.mark.parametrize("missing", ["--method", "--path"])
def test_method_and_path_are_needed(invoke: Invoke, serve: Served, missing: str) -> None:
    args = {"--method": "GET", "--path": "/v1/*"}
    del args[missing]
    result = invoke(
        "sandbox", "fault", "add", *[w for pair in args.items() for w in pair], "--drop"
    )
    assert result.code == 2 and missing in result.stderr


def test_the_commands_need_a_sandbox_not_the_local_database(invoke: Invoke) -> None:
    for args in (["add", "--method", "GET", "--path", "/v1/*", "--drop"], ["list"], ["clear"]):
        result = invoke("sandbox", "fault", *args)
        assert result.code == 2 and "convrisk serve" in result.stderr, args
