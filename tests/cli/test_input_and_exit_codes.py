"""The variants of tests/e2e/test_input_and_exit_codes.py in-process: every `--archived-at` form
and every cursor on the local database and over HTTP (`either`), and a wrong token stopping each
kind of command after one request to an in-process serve."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import REMOTE_TOKEN, Backends, Invoke, Result
from tests.cli.run_with_env import Runs
from tests.cli.served_in_process import served
from tests.shared_server import SharedServer

NOON = 1714564800  # 2024-05-01T12:00:00Z
WRONG_TOKEN = "wrong-token-5b2f9e0c"


def as_json(either: Backends, *args: str) -> Any:
    """Run a command with `-o json`, which must succeed; its parsed stdout."""
    return either.invoke(*args, "-o", "json").ok().json()


def requests_in(log: list[str]) -> list[str]:
    """The API requests a serve log records, one entry per request."""
    return re.findall(r"^.*\b(?:GET|POST|PUT|DELETE)\b.*/v1/.*$", "\n".join(log), re.M)


def test_archived_at_forms_are_stored_as_the_right_unix_seconds(either: Backends) -> None:
    conv = as_json(either, "conv", "create", "--contact-id", "c_time")
    for text, seconds in (
        ("20240501T120000Z", NOON),
        ("2024-05-01T14:00:00+02:00", NOON),
        ("20240501T100000-0200", NOON),
        ("2024-05-01", NOON - 12 * 3600),
        ("2024-05-01T12:00:00.25Z", NOON + 0.25),
        ("@20240501", 20240501),
        ("1714564800", NOON),
    ):
        as_json(either, "conv", "update", conv["id"], "--archived-at", text)
        assert as_json(either, "conv", "get", conv["id"])["archived_at"] == seconds, text


@pytest.mark.parametrize("number", ["20240501", "202405011200"])
def test_an_ambiguous_archived_at_is_exit_2_and_changes_nothing(
    either: Backends, number: str
) -> None:
    conv = as_json(either, "conv", "create", "--contact-id", "c_ambiguous")
    result = either.invoke("conv", "update", conv["id"], "--archived-at", number, "--pin")
    assert result.code == 2, result.stderr
    assert result.stdout == "" and result.stderr.count("\n") == 1
    assert "2024-05-01" in result.stderr and f"@{number}" in result.stderr
    assert as_json(either, "conv", "get", conv["id"]) == conv


def test_archived_at_now_is_the_current_time(either: Backends) -> None:
    conv = as_json(either, "conv", "create", "--contact-id", "c_now")
    updated = as_json(either, "conv", "update", conv["id"], "--archived-at", "now")
    assert isinstance(updated["archived_at"], int)
    assert abs(updated["archived_at"] - updated["created_at"]) < 600


@pytest.mark.parametrize(
    ("args", "param"),
    [
        (("conv", "list", "--starting-after", "rp_x"), "starting_after"),
        (("risk", "list", "--starting-after", "conv_x"), "starting_after"),
    ],
)
def test_a_cursor_of_the_other_resource_is_exit_2_on_both_backends(
    either: Backends, args: tuple[str, ...], param: str
) -> None:
    result = either.invoke(*args)
    assert result.code == 2, result.stderr
    assert result.stdout == "" and result.stderr.count("\n") == 1
    assert param in result.stderr and "HTTP" not in result.stderr
    error = json.loads(either.invoke(*args, "-o", "json").stderr)["error"]
    assert error["param"] == param and "status" not in error


def test_details_nested_too_deep_are_exit_2_on_both_backends_and_create_nothing(
    either: Backends, tmp_path: Path
) -> None:
    deep: dict[str, Any] = {}
    for _ in range(70):
        deep = {"a": deep}
    details = tmp_path / "deep.json"
    details.write_text(json.dumps(deep))
    customer = f"cus_deep_{either.name}"
    result = either.invoke(
        "risk", "create", "--customer-id", customer, "--profile-type", "t", "--score", "1",
        "--details", f"@{details}",
    )  # fmt: skip
    assert result.code == 2, result.stderr
    assert "64 levels" in result.stderr and "HTTP" not in result.stderr
    assert as_json(either, "risk", "list", "--customer-id", customer) == []


@pytest.mark.parametrize(
    ("args", "stdin"),
    [
        (("conv", "update", "-", "--mute"), "nope1\nnope2\n"),
        (("conv", "get", "nope1", "nope2", "nope3"), None),
        (("risk", "update", "nope1", "nope2", "--score", "5"), None),
        (("risk", "delete", "-", "--yes"), "nope1\nnope2\n"),
    ],
)
def test_a_wrong_token_stops_at_once_names_its_source_and_blames_no_id(
    cli_server: SharedServer,
    invoke: Invoke,
    db_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: tuple[str, ...],
    stdin: str | None,
) -> None:
    with served(cli_server, db_path, monkeypatch) as serve:
        result: Result = Runs(invoke, monkeypatch).run(
            *args, stdin=stdin, CONVRISK_TOKEN=WRONG_TOKEN
        )
    assert result.code == 4, result.stderr
    assert result.stdout in ("", "[]\n")
    (line,) = result.stderr.splitlines()
    assert line.startswith("Error: ") and "CONVRISK_TOKEN" in line and "token" in line
    assert "nope" not in line
    assert WRONG_TOKEN not in result.stderr and REMOTE_TOKEN not in result.stderr
    assert len(requests_in(serve.log)) == 1, serve.log
