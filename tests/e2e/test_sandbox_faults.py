"""`convrisk sandbox fault add|list|clear` through the installed script against a real `convrisk
serve` subprocess (one per module, reset before each test; one of its own for --faults/--seed):
faults aimed where a test wants them, the journal naming the rule, reset starting over."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from .both_backends import Serve, isolated_env, serve, serving
from .console import run

__all__ = ["serve"]

CONV = "/v1/conversations"


@pytest.fixture
def env(serve: Serve, tmp_path: Path) -> dict[str, str]:
    """The environment of a client of the module's serve, which is reset first."""
    home = tmp_path / "client"
    home.mkdir()
    env = {**isolated_env(home), "CONVRISK_BASE_URL": serve.url, "CONVRISK_TOKEN": serve.token}
    reset = run(env, "sandbox", "reset")
    assert reset.returncode == 0, reset.stderr
    return env


@pytest.fixture
def app(serve: Serve) -> Iterator[httpx.Client]:
    """The application under test: plain httpx, no retries, so each fault is seen as sent."""
    headers = {"Authorization": f"Bearer {serve.token}"}
    with httpx.Client(base_url=serve.url, headers=headers, timeout=10) as client:
        yield client


def convrisk(env: dict[str, str], *args: str) -> Any:
    """Run convrisk, which must succeed; its stdout as JSON when there is any."""
    result = run(env, *args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout) if result.stdout.strip() else None


def fault(env: dict[str, str], *args: str) -> dict[str, Any]:
    """`sandbox fault add` with these options: the rule added."""
    return dict(convrisk(env, "sandbox", "fault", "add", *args, "-o", "json"))


def create(app: httpx.Client, contact: str) -> int | None:
    """One create on a connection of its own: its status, None when the connection was lost."""
    try:
        with httpx.Client(base_url=app.base_url, headers=app.headers, timeout=10) as once:
            return once.post(CONV, json={"contact_id": contact}).status_code
    except (httpx.RemoteProtocolError, httpx.ReadError):
        return None


def contacts(env: dict[str, str]) -> list[str]:
    """The contact ids serve holds, oldest first."""
    listed = convrisk(env, "conv", "list", "--all", "-o", "json")
    return sorted((row["contact_id"] for row in listed), key=str)


def test_the_next_create_answers_503_once_with_retry_after_then_succeeds(
    env: dict[str, str], app: httpx.Client
) -> None:
    rule = fault(env, "--method", "POST", "--path", CONV, "--status", "503", "--retry-after", "1")
    refused = app.post(CONV, json={"contact_id": "c_1"})
    assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
    assert f"sandbox fault rule {rule['id']}" in refused.json()["error"]["message"]
    assert app.post(CONV, json={"contact_id": "c_1"}).status_code == 200
    assert contacts(env) == ["c_1"]
    (listed,) = convrisk(env, "sandbox", "fault", "list", "-o", "json")
    assert (listed["seen"], listed["fired"]) == (1, 1)
    # The journal names the rule that fired, in JSON and in the table.
    journal = convrisk(env, "sandbox", "requests", "--method", "POST", "-o", "json")
    assert [(r["status"], r["fault"], r["fault_rule"]) for r in journal] == [
        (503, "503", rule["id"]),
        (200, None, None),
    ]
    table = run({**env, "COLUMNS": "160"}, "sandbox", "requests", "-o", "table").stdout
    assert f"503 (503, rule {rule['id']})" in table


def test_convrisks_own_client_retries_past_an_aimed_503(env: dict[str, str]) -> None:
    fault(env, "--method", "POST", "--path", CONV, "--status", "503", "--retry-after", "0")
    created = convrisk(env, "conv", "create", "--contact-id", "c_9", "-o", "json")
    assert created["contact_id"] == "c_9"
    journal = convrisk(env, "sandbox", "requests", "-o", "json")
    assert [r["status"] for r in journal if r["method"] == "POST"] == [503, 200]


def test_after_2_lets_two_through(env: dict[str, str], app: httpx.Client) -> None:
    fault(env, "--method", "post", "--path", CONV, "--status", "500", "--after", "2")
    assert [create(app, f"c_{n}") for n in range(4)] == [200, 200, 500, 200]
    assert contacts(env) == ["c_0", "c_1", "c_3"]


def test_drop_loses_nothing_and_drop_after_creates_the_record(
    env: dict[str, str], app: httpx.Client
) -> None:
    fault(env, "--method", "POST", "--path", CONV, "--drop")
    assert create(app, "dropped") is None
    assert contacts(env) == []  # closed before the operation: the record is absent
    fault(env, "--method", "POST", "--path", CONV, "--drop-after")
    assert create(app, "kept") is None
    assert contacts(env) == ["kept"]  # done, then the answer lost
    journal = convrisk(env, "sandbox", "requests", "--method", "POST", "-o", "json")
    assert [(r["status"], r["fault"], r["fault_rule"]) for r in journal] == [
        (None, "drop", 1),
        (200, "drop-after", 2),
    ]


def test_a_rule_that_never_matches_lists_fired_0_and_overlapping_rules_go_in_order(
    env: dict[str, str], app: httpx.Client
) -> None:
    fault(env, "--method", "DELETE", "--path", "/v1/risk-profiles/*", "--status", "500")
    fault(env, "--method", "POST", "--path", CONV, "--status", "503", "--after", "1")
    fault(env, "--method", "*", "--path", "/v1/*", "--status", "429", "--times", "2")
    assert [create(app, f"c_{n}") for n in range(4)] == [429, 503, 429, 200]
    listed = convrisk(env, "sandbox", "fault", "list", "-o", "json")
    assert [(r["id"], r["seen"], r["fired"]) for r in listed] == [(1, 0, 0), (2, 2, 1), (3, 2, 2)]
    table = run(env, "sandbox", "fault", "list", "-o", "csv").stdout.splitlines()
    assert table[0].split(",")[-2:] == ["seen", "fired"]
    assert table[1].endswith(",0,0")
    cleared = run(env, "sandbox", "fault", "clear")
    assert cleared.returncode == 0 and cleared.stderr.strip() == "Removed 3 fault rules."
    assert create(app, "c_4") == 200


def test_reset_clears_the_rules_and_rewinds_the_seeded_faults(tmp_path: Path) -> None:
    (tmp_path / "seeded").mkdir()
    with serving(tmp_path / "seeded", "--faults", "0.5", "--seed", "7") as seeded:
        env = {
            **isolated_env(tmp_path / "client"),
            "CONVRISK_BASE_URL": seeded.url,
            "CONVRISK_TOKEN": seeded.token,
        }
        headers = {"Authorization": f"Bearer {seeded.token}"}

        def faults_seen(count: int) -> list[str | None]:
            for _ in range(count):
                try:
                    with httpx.Client(base_url=seeded.url, headers=headers, timeout=10) as once:
                        once.get(CONV)
                except (httpx.RemoteProtocolError, httpx.ReadError):
                    pass
            journal = convrisk(env, "sandbox", "requests", "-o", "json")
            return [entry["fault"] for entry in journal]

        fault(env, "--method", "GET", "--path", "/v1/nothing", "--status", "500")
        first = faults_seen(12)
        assert any(first) and None in first
        convrisk(env, "sandbox", "reset")
        assert convrisk(env, "sandbox", "fault", "list", "-o", "json") == []
        assert faults_seen(12) == first  # the same faults for the same requests


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--status", "503", "--times", "0"], "--times must be from 1"),
        (["--status", "503", "--path", "/v1/[conv"], "is never closed"),
        (["--body-jq", ".a >"], "--body-jq does not compile"),
    ],
)
def test_times_0_a_bad_glob_or_a_bad_jq_program_exit_2_with_one_line(
    env: dict[str, str], args: list[str], says: str
) -> None:
    if "--path" not in args:
        args = ["--path", CONV, *args]
    result = run(env, "sandbox", "fault", "add", "--method", "POST", *args)
    assert result.returncode == 2, result.stderr
    assert says in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert convrisk(env, "sandbox", "fault", "list", "-o", "json") == []
