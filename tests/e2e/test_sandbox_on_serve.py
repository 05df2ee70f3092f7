"""`convrisk sandbox requests|verify|reset` through the installed script against a real
`convrisk serve` (one per module; each test resets it first)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .both_backends import Serve, isolated_env, serve
from .console import run

__all__ = ["serve"]


@pytest.fixture
def sandbox_env(serve: Serve, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The environment of a client of `serve`, the sandbox reset and four requests recorded:
    a create, a list, a get of a malformed id and a create without a token."""
    home = tmp_path_factory.mktemp("client")
    env = {
        **isolated_env(home),
        "CONVRISK_BASE_URL": serve.url,
        "CONVRISK_TOKEN": serve.token,
    }
    reset = run(env, "sandbox", "reset")
    assert reset.returncode == 0, reset.stderr
    auth = {"Authorization": f"Bearer {serve.token}"}
    with httpx.Client(base_url=serve.url, timeout=10) as client:
        client.post("/v1/conversations", json={"contact_id": "c_1"}, headers=auth)
        client.get("/v1/conversations", params={"limit": "5"}, headers=auth)
        client.get("/v1/conversations/conv_missing", headers=auth)
        client.post("/v1/conversations", json={"contact_id": "c_2"})
    yield env


def test_requests_shows_what_serve_received_oldest_first(sandbox_env: dict[str, str]) -> None:
    result = run(sandbox_env, "sandbox", "requests", "-o", "json")
    assert result.returncode == 0, result.stderr
    seen = [(r["method"], r["path"], r["query"], r["status"]) for r in json.loads(result.stdout)]
    assert seen == [
        ("POST", "/v1/conversations", "", 200),
        ("GET", "/v1/conversations", "limit=5", 200),
        ("GET", "/v1/conversations/conv_missing", "", 400),
        ("POST", "/v1/conversations", "", 401),
    ]
    refused = run(sandbox_env, "sandbox", "requests", "--status", "401", "-o", "jsonl")
    assert [json.loads(line)["status"] for line in refused.stdout.splitlines()] == [401]
    gets = run(
        sandbox_env, "sandbox", "requests", "--method", "get", "--path", "/v1/*/*", "-o", "id"
    )
    assert gets.stdout.split() == [str(json.loads(result.stdout)[2]["seq"])]


def test_the_token_never_shows_in_the_journal(serve: Serve, sandbox_env: dict[str, str]) -> None:
    result = run(sandbox_env, "sandbox", "requests", "-o", "json")
    assert serve.token not in result.stdout


def test_verify_on_serve_holds_and_fails_with_near_misses(sandbox_env: dict[str, str]) -> None:
    holds = run(
        sandbox_env,
        "sandbox",
        "verify",
        "--method",
        "POST",
        "--path",
        "/v1/conversations",
        "--count",
        "1",  # serve keeps no body of the request it refused for its token
        "--body-jq",
        '.contact_id | startswith("c_")',
    )
    assert holds.returncode == 0, holds.stderr
    both = ["--method", "POST", "--path", "/v1/conversations", "--count", "2"]
    assert run(sandbox_env, "sandbox", "verify", *both).returncode == 0
    fails = run(
        sandbox_env, "sandbox", "verify", "--method", "DELETE", "--path", "/v1/conversations/*"
    )
    assert fails.returncode == 1
    assert any(
        line.endswith("GET /v1/conversations/conv_missing -> 400: another method")
        for line in fails.stderr.splitlines()
    ), fails.stderr


def test_reset_on_serve_empties_the_store_and_the_journal(sandbox_env: dict[str, str]) -> None:
    assert json.loads(run(sandbox_env, "conv", "list", "-o", "json").stdout) != []
    reset = run(sandbox_env, "sandbox", "reset")
    assert reset.returncode == 0, reset.stderr
    assert json.loads(run(sandbox_env, "conv", "list", "-o", "json").stdout) == []
    listed = run(sandbox_env, "sandbox", "requests", "-o", "json")
    # Only the list just made: admin requests are not recorded.
    assert [(r["method"], r["path"]) for r in json.loads(listed.stdout)] == [
        ("GET", "/v1/conversations")
    ]


def test_admin_routes_without_the_right_token_are_exit_4(sandbox_env: dict[str, str]) -> None:
    wrong = {**sandbox_env, "CONVRISK_TOKEN": "x" * 30}
    for args in (["requests"], ["reset"]):
        result = run(wrong, "sandbox", *args)
        assert result.returncode == 4, result.stderr


def test_snapshot_and_restore_on_serve_bring_back_ids_and_times(
    sandbox_env: dict[str, str], tmp_path: Path
) -> None:
    risk = ["--customer-id", "cus_1", "--profile-type", "moderate", "--score", "5"]
    assert run(sandbox_env, "risk", "create", *risk).returncode == 0
    before = run(sandbox_env, "conv", "list", "--all", "-o", "jsonl").stdout
    risks_before = run(sandbox_env, "risk", "list", "--all", "-o", "jsonl").stdout
    file = tmp_path / "seed.jsonl"
    taken = run(sandbox_env, "sandbox", "snapshot", str(file))
    assert taken.returncode == 0, taken.stderr
    assert taken.stderr.strip() == f"2 records written to {file}."
    lines = [json.loads(line) for line in file.read_text().splitlines()]
    assert [line["resource"] for line in lines] == [
        "conversations",
        "risk_profiles",
    ]
    assert run(sandbox_env, "sandbox", "reset").returncode == 0
    assert run(sandbox_env, "conv", "list", "-o", "id").stdout == ""
    restored = run(sandbox_env, "sandbox", "restore", str(file))
    assert restored.returncode == 0, restored.stderr
    assert restored.stderr.strip() == "Restored 1 conversation and 1 risk profile."
    assert run(sandbox_env, "conv", "list", "--all", "-o", "jsonl").stdout == before
    assert run(sandbox_env, "risk", "list", "--all", "-o", "jsonl").stdout == risks_before
    piped = run(sandbox_env, "sandbox", "snapshot", "-")
    assert piped.stdout == file.read_text()


def test_a_snapshot_serve_refuses_changes_nothing(
    sandbox_env: dict[str, str], tmp_path: Path
) -> None:
    before = run(sandbox_env, "conv", "list", "--all", "-o", "jsonl").stdout
    file = tmp_path / "twice.jsonl"
    assert run(sandbox_env, "sandbox", "snapshot", str(file)).returncode == 0
    first = file.read_text().splitlines()[0]
    file.write_text(f"{first}\n{first}\n")
    refused = run(sandbox_env, "sandbox", "restore", str(file))
    assert refused.returncode == 1
    assert len(refused.stderr.strip().splitlines()) == 1
    assert "line 2" in refused.stderr, refused.stderr
    assert run(sandbox_env, "conv", "list", "--all", "-o", "jsonl").stdout == before
