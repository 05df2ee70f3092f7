"""`--dry-run` on create, update and delete: the installed convrisk against a `convrisk serve`
subprocess checks the input and every id, prints the operations it would perform, and writes
nothing. Each runs on both backends in-process too (tests/cli/test_dry_run.py)."""

from __future__ import annotations

import json

from convrisk.api_client.record_types import Conversation, RiskProfile

from .both_backends import Cli
from .both_backends import over_serve as over_serve  # a fixture: convrisk against its own serve

MISSING_CONV = "conv_00000000000000000000000000"
MISSING_RP = "rp_00000000000000000000000000"


def snapshot(cli: Cli) -> list[Conversation | RiskProfile]:
    """Every object of both resources, as stored."""
    conversations: list[Conversation | RiskProfile] = [
        *cli.store.conversations.list(limit=100)["data"]
    ]
    return [*conversations, *cli.store.risk_profiles.list(limit=100)["data"]]


def test_create_dry_run_prints_the_planned_create_and_writes_nothing(over_serve: Cli) -> None:
    result = over_serve.run("conv", "create", "--contact-id", "c_1", "--dry-run", "-o", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "dry_run": True,
        "operation": "create",
        "id": None,
        "body": {"contact_id": "c_1"},
    }
    risk = over_serve.run(
        "risk", "create", "--customer-id", "cus_1", "--profile-type", "moderate",
        "--score", "72.5", "--details", '{"a": [1]}', "--dry-run", "-o", "jsonl",
    )  # fmt: skip
    assert json.loads(risk.stdout)["body"] == {
        "customer_id": "cus_1",
        "profile_type": "moderate",
        "score": 72.5,
        "details": {"a": [1]},
    }
    readable = over_serve.run("conv", "create", "--group-id", "g_1", "--dry-run")
    assert readable.stdout == 'would create a conversation: {"group_id":"g_1"}\n'
    assert snapshot(over_serve) == []


def test_create_dry_run_with_bad_input_is_exit_2(over_serve: Cli) -> None:
    both = over_serve.run("conv", "create", "--contact-id", "c", "--group-id", "g", "--dry-run")
    assert both.returncode == 2 and "not both" in both.stderr
    bad = over_serve.run(
        "risk", "create", "--customer-id", "c", "--profile-type", "t", "--score", "x",
        "--dry-run",
    )  # fmt: skip
    assert bad.returncode == 2 and "--score" in bad.stderr
    assert snapshot(over_serve) == []


def test_update_dry_run_checks_every_id_and_changes_nothing(over_serve: Cli) -> None:
    first = over_serve.store.conversations.create({"contact_id": "c_1"})
    second = over_serve.store.conversations.create({"group_id": "g_1"})
    before = snapshot(over_serve)
    result = over_serve.run(
        "conv", "update", "-", "--mute", "--clear-pinned-message", "--dry-run", "-o", "jsonl",
        input=f"{first['id']}\n{second['id']}\n",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    body = {"is_muted": True, "pinned_message_id": None}
    assert [json.loads(line) for line in result.stdout.splitlines()] == [
        {"dry_run": True, "operation": "update", "id": first["id"], "body": body},
        {"dry_run": True, "operation": "update", "id": second["id"], "body": body},
    ]
    assert snapshot(over_serve) == before


def test_update_dry_run_with_a_missing_id_is_exit_3_naming_it(over_serve: Cli) -> None:
    rp = over_serve.store.risk_profiles.create(
        {"customer_id": "cus", "profile_type": "moderate", "score": 1, "details": {}}
    )
    result = over_serve.run("risk", "update", rp["id"], MISSING_RP, "--score", "99", "--dry-run")
    assert result.returncode == 3
    assert result.stdout == f'would update {rp["id"]}: {{"score":99}}\n'
    assert MISSING_RP in result.stderr
    assert over_serve.store.risk_profiles.retrieve(rp["id"]) == rp


def test_delete_dry_run_needs_no_confirmation_and_deletes_nothing(over_serve: Cli) -> None:
    made = [over_serve.store.conversations.create({"contact_id": f"c_{n}"})["id"] for n in range(3)]
    result = over_serve.run("conv", "delete", *made, "--dry-run", "-o", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [
        {"dry_run": True, "operation": "delete", "id": id, "body": {}} for id in made
    ]
    table = over_serve.run("conv", "delete", made[0], MISSING_CONV, "--dry-run")
    assert table.returncode == 3
    assert table.stdout == f"would delete {made[0]}\n"
    assert f"No such conversation: {MISSING_CONV}" in table.stderr
    assert over_serve.count("conversations") == 3


def test_dry_run_formats_csv_and_id(over_serve: Cli) -> None:
    rp = over_serve.store.risk_profiles.create(
        {"customer_id": "cus", "profile_type": "moderate", "score": 1, "details": {}}
    )["id"]
    csv = over_serve.run("risk", "update", rp, "--details", '{"k": "v"}', "--dry-run", "-o", "csv")
    assert csv.stdout == (
        f'dry_run,operation,id,body\ntrue,update,{rp},"{{""details"":{{""k"":""v""}}}}"\n'
    )
    ids = over_serve.run("risk", "delete", rp, "--dry-run", "-o", "id")
    assert ids.stdout == f"{rp}\n"
    assert over_serve.count("risk_profiles") == 1
