"""The installed `convrisk` against a real `convrisk serve`: input caught before any request is
exit 2, `--archived-at` never guesses, and a refused token or an unreachable service stops a run
of several ids without blaming an id. Each behaviour runs once here; its variants (the local
database, every form and command) run in-process in tests/cli/test_input_and_exit_codes.py."""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .both_backends import TOKEN, Serve, isolated_env, serve, serving, start_serve  # noqa: F401
from .console import CONVRISK, run

NOON = 1714564800  # 2024-05-01T12:00:00Z
WRONG_TOKEN = "wrong-token-5b2f9e0c"


@dataclass
class Leg:
    """The CLI on one backend: the local database under `home`, or a serve URL."""

    name: str
    home: Path
    url: str | None = None

    def run(
        self, *args: str, stdin: str | None = None, **env: str
    ) -> subprocess.CompletedProcess[str]:
        """Run `convrisk ARGS`; never raises on a non-zero exit."""
        extra = dict(env)
        if self.url is not None:
            extra = {"CONVRISK_BASE_URL": self.url, "CONVRISK_TOKEN": TOKEN, **extra}
        return run(isolated_env(self.home, **extra), *args, input=stdin)

    def json(self, *args: str) -> Any:
        """Run a command with `-o json`, which must succeed; its parsed stdout."""
        result = self.run(*args, "-o", "json")
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)


@pytest.fixture
def leg(serve: Serve, tmp_path: Path) -> Leg:  # noqa: F811
    """The CLI against the module's `convrisk serve`."""
    return Leg("remote", tmp_path, serve.url)


def requests_in(log: str) -> list[str]:
    """The API requests a serve log records, one entry per request."""
    return re.findall(r"^.*\b(?:GET|POST|PUT|DELETE)\b.*/v1/.*$", log, re.M)


# -- --archived-at -----------------------------------------------------------------------------


def test_archived_at_forms_are_stored_as_the_right_unix_seconds(leg: Leg) -> None:
    # Two forms here; every form, on both backends, in tests/cli/test_input_and_exit_codes.py.
    conv = leg.json("conv", "create", "--contact-id", "c_time")
    for text, seconds in (("2024-05-01T14:00:00+02:00", NOON), ("@20240501", 20240501)):
        leg.json("conv", "update", conv["id"], "--archived-at", text)
        assert leg.json("conv", "get", conv["id"])["archived_at"] == seconds, text


def test_an_ambiguous_archived_at_is_exit_2_and_changes_nothing(leg: Leg) -> None:
    number = "202405011200"  # and 20240501, in-process
    conv = leg.json("conv", "create", "--contact-id", "c_ambiguous")
    result = leg.run("conv", "update", conv["id"], "--archived-at", number, "--pin")
    assert result.returncode == 2, result.stderr
    assert result.stdout == "" and result.stderr.count("\n") == 1
    assert "2024-05-01" in result.stderr and f"@{number}" in result.stderr
    assert leg.json("conv", "get", conv["id"]) == conv


def test_archived_at_now_is_the_current_time(leg: Leg) -> None:
    conv = leg.json("conv", "create", "--contact-id", "c_now")
    updated = leg.json("conv", "update", conv["id"], "--archived-at", "now")
    assert isinstance(updated["archived_at"], int)
    assert abs(updated["archived_at"] - updated["created_at"]) < 600


# -- exit 2 for input caught before any request, on both backends ------------------------------


def test_a_cursor_of_the_other_resource_is_exit_2_on_both_backends(leg: Leg) -> None:
    # The local backend, and `conv list --starting-after rp_x`: in-process.
    args, param = ("risk", "list", "--starting-after", "conv_x"), "starting_after"
    result = leg.run(*args)
    assert result.returncode == 2, result.stderr
    assert result.stdout == "" and result.stderr.count("\n") == 1
    assert param in result.stderr and "HTTP" not in result.stderr
    as_json = json.loads(leg.run(*args, "-o", "json").stderr)["error"]
    assert as_json["param"] == param and "status" not in as_json


def test_details_nested_too_deep_are_exit_2_on_both_backends_and_create_nothing(
    leg: Leg, tmp_path: Path
) -> None:
    deep: dict[str, Any] = {}
    for _ in range(70):
        deep = {"a": deep}
    details = tmp_path / "deep.json"
    details.write_text(json.dumps(deep))
    customer = f"cus_deep_{leg.name}"
    result = leg.run(
        "risk", "create", "--customer-id", customer, "--profile-type", "t", "--score", "1",
        "--details", f"@{details}",
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "64 levels" in result.stderr and "HTTP" not in result.stderr
    assert leg.json("risk", "list", "--customer-id", customer) == []


def test_remote_nested_details_send_no_request(tmp_path: Path) -> None:
    deep: dict[str, Any] = {}
    for _ in range(70):
        deep = {"a": deep}
    with serving(tmp_path) as served:
        result = Leg("remote", tmp_path, served.url).run(
            "risk", "create", "--customer-id", "c", "--profile-type", "t", "--score", "1",
            "--details", json.dumps(deep),
        )  # fmt: skip
        code, log = served.stop()
    assert code == 0, log
    assert result.returncode == 2, result.stderr
    assert requests_in(log) == []


def test_a_400_answered_by_the_service_stays_exit_1(serve: Serve, tmp_path: Path) -> None:  # noqa: F811
    # A cursor of no known form: a foreign service's ids may look like that, so only the
    # service can refuse it, and its refusal is an answer (exit 1, with the status).
    result = Leg("remote", tmp_path, serve.url).run("conv", "list", "--starting-after", "x_1")
    assert result.returncode == 1, result.stderr
    assert "starting_after" in result.stderr and "(HTTP 400)" in result.stderr


# -- a refused token or an unreachable service stops several ids --------------------------------


def test_a_wrong_token_stops_at_once_names_its_source_and_blames_no_id(tmp_path: Path) -> None:
    # Ids from stdin here; the other commands, and ids as arguments, in-process.
    args, stdin = ("conv", "update", "-", "--mute"), "nope1\nnope2\n"
    with serving(tmp_path) as served:
        result = Leg("remote", tmp_path, served.url).run(
            *args, stdin=stdin, CONVRISK_TOKEN=WRONG_TOKEN
        )
        code, log = served.stop()
    assert code == 0, log
    assert result.returncode == 4, result.stderr
    assert result.stdout in ("", "[]\n")
    (line,) = result.stderr.splitlines()
    assert line.startswith("Error: ") and "CONVRISK_TOKEN" in line and "token" in line
    assert "nope" not in line
    assert WRONG_TOKEN not in result.stderr and TOKEN not in result.stderr
    assert len(requests_in(log)) == 1, log


def test_a_wrong_token_from_a_profile_names_the_profile(serve: Serve, tmp_path: Path) -> None:  # noqa: F811
    leg = Leg("remote", tmp_path, serve.url)
    config = {"CONVRISK_CONFIG": str(tmp_path / "convrisk.toml")}
    for key, value in (("base_url", serve.url), ("token", WRONG_TOKEN)):
        made = subprocess.run(
            [CONVRISK, "config", "set", "--profile", "ops", key, value],
            capture_output=True,
            text=True,
            timeout=60,
            env=isolated_env(tmp_path, **config),
        )
        assert made.returncode == 0, made.stderr
    result = subprocess.run(
        [CONVRISK, "--profile", "ops", "conv", "get", "nope1", "nope2", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        env=isolated_env(leg.home, **config),
    )
    assert result.returncode == 4, result.stderr
    (line,) = result.stderr.splitlines()
    error = json.loads(line)["error"]
    assert error["type"] == "authentication_error" and error["status"] == 401
    assert "id" not in error and "nope" not in error["message"]
    assert "profile ops" in error["message"] and WRONG_TOKEN not in line


def test_an_unreachable_service_stops_several_ids_without_blaming_one(tmp_path: Path) -> None:
    stopped = start_serve(tmp_path)
    code, _ = stopped.stop()
    assert code == 0
    result = Leg("remote", tmp_path, stopped.url).run(
        "conv", "update", "-", "--mute", stdin="nope1\nnope2\nnope3\n", CONVRISK_MAX_RETRIES="0"
    )
    assert result.returncode == 5, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("Error: ") and "nope" not in line
