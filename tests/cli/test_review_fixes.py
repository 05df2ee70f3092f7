"""Defects found by an independent review: each test failed before its fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import Invoke

# -- 1. config show with settings from the environment alone ------------------------------------


def test_config_show_works_with_no_config_file(invoke: Invoke) -> None:
    result = invoke("config", "show").ok()
    assert "timeout" in result.stdout and "(default)" in result.stdout


def test_config_show_takes_env_settings_and_masks_the_token(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "tok_from_env_0123456789abcdef"
    monkeypatch.setenv("CONVRISK_BASE_URL", "https://api.example.com")
    monkeypatch.setenv("CONVRISK_TOKEN", token)
    result = invoke("config", "show").ok()
    assert "remote https://api.example.com" in result.stdout
    assert token not in result.stdout + result.stderr and "****cdef" in result.stdout


def test_config_show_works_when_the_file_has_no_default_table(
    invoke: Invoke, config_file: Path
) -> None:
    invoke("config", "set", "--profile", "staging", "timeout", "5").ok()
    assert "default" not in config_file.read_text()
    assert invoke("config", "show").ok()
    assert invoke("--profile", "default", "config", "show").ok()


def test_config_show_names_where_a_missing_profile_came_from(invoke: Invoke) -> None:
    result = invoke("config", "show", "--profile", "nope")
    assert result.code == 2 and "config show --profile" in result.stderr
    assert "(from --profile)" not in result.stderr


# -- 2. a base_url with user info ---------------------------------------------------------------


@pytest.mark.parametrize(
    "url", ["http://u:pw@127.0.0.1:1", "http://u@127.0.0.1:1/x", "http://127.0.0.1:1/?q=pw"]
)
def test_a_base_url_with_user_info_or_query_is_a_usage_error_never_shown(
    invoke: Invoke, url: str
) -> None:
    result = invoke("--base-url", url, "conv", "list")
    assert result.code == 2, result.stderr
    assert "pw" not in result.stderr and "HTTP" not in result.stderr
    assert result.stdout == ""


def test_a_bad_base_url_in_the_environment_is_a_usage_error(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONVRISK_BASE_URL", "https://u:s3cr3t@api.example.com/v1")
    result = invoke("conv", "list", "-o", "json")
    assert result.code == 2 and "s3cr3t" not in result.stderr
    assert '"status"' not in result.stderr and "https://api.example.com/v1" in result.stderr


def test_an_error_building_the_backend_is_a_settings_problem(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    from convrisk.api_client import http
    from convrisk.api_client.errors import InvalidRequestError

    def refuse(*args: object, **kwargs: object) -> None:
        raise InvalidRequestError("base_url is not usable.", param="base_url")

    monkeypatch.setattr(http, "HTTPBackend", refuse)
    result = invoke("--base-url", "http://127.0.0.1:1", "conv", "list", "-o", "json")
    assert result.code == 2
    assert '"status"' not in result.stderr and "base_url is not usable." in result.stderr


def test_a_client_side_refusal_in_remote_mode_names_no_http_status() -> None:
    from convrisk.api_client.errors import InvalidRequestError
    from convrisk.cli.output import describe_error

    before = describe_error(InvalidRequestError("limit must be 1 to 100."), remote=True)
    assert before.status is None and "HTTP" not in str(before)
    answered = InvalidRequestError("Bad limit (HTTP 400)", status=400)
    assert describe_error(answered, remote=True).status == 400


# -- 3. bad input that reached the backend ------------------------------------------------------


@pytest.mark.parametrize("when", ["1e30", "253402300800", "-1", "nan"])
def test_archived_at_out_of_range_is_exit_2(invoke: Invoke, when: str) -> None:
    (conv,) = [invoke("conv", "create", "--contact-id", "c", "-o", "id").ok().stdout.strip()]
    result = invoke("conv", "update", conv, "--archived-at", when)
    assert result.code == 2 and "--archived-at" in result.stderr


@pytest.mark.parametrize("when", ["@253402300799", "9999-12-31T23:59:59Z"])
def test_archived_at_at_the_end_of_9999_is_accepted(invoke: Invoke, when: str) -> None:
    # A bare 12-digit number has the shape of a basic-form date-time: `@` says it is seconds.
    conv = invoke("conv", "create", "--contact-id", "c", "-o", "id").ok().stdout.strip()
    updated = invoke("conv", "update", conv, "--archived-at", when, "-o", "json").ok()
    assert updated.json()["archived_at"] == 253402300799


BAD_SCORES = ["99999999999999999999999999", "9223372036854775808", "-9223372036854775809"]
BAD_SCORES += ["1_000", "١٢", "+5", "0x10", "1.", ".5", "01", " ", "1e999"]


@pytest.mark.parametrize("score", BAD_SCORES)
def test_a_score_that_is_not_a_plain_number_in_range_is_exit_2(invoke: Invoke, score: str) -> None:
    args = ("risk", "create", "--customer-id", "c", "--profile-type", "t", "--score", score)
    result = invoke(*args)
    assert result.code == 2, result.stderr
    assert "--score" in result.stderr
    assert invoke("risk", "list", "-o", "id").ok().stdout == ""


@pytest.mark.parametrize("score", ["9223372036854775807", "-9223372036854775808", "1e3", "-0.5"])
def test_plain_numbers_in_range_are_scores(invoke: Invoke, score: str) -> None:
    args = ("risk", "create", "--customer-id", "c", "--profile-type", "t", "--score", score)
    invoke(*args, "-o", "json").ok()


@pytest.mark.parametrize("kind", ["conv", "risk"])
@pytest.mark.parametrize("cursor", ["", "  "])
def test_an_empty_starting_after_is_exit_2(
    invoke: Invoke, kind: str, cursor: str, db_path: Path
) -> None:
    result = invoke(kind, "list", "--starting-after", cursor)
    assert result.code == 2 and "--starting-after" in result.stderr
    remote = invoke("--base-url", "http://127.0.0.1:1", kind, "list", "--starting-after", cursor)
    assert remote.code == 2  # before any request: nothing listens there


# -- 5. flags come first ------------------------------------------------------------------------


def test_a_bad_output_in_the_environment_is_irrelevant_with_o(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONVRISK_OUTPUT", "yaml")
    assert invoke("conv", "list", "-o", "id").ok().stdout == ""
    assert invoke("conv", "list").code == 2  # in effect without -o


def test_a_bad_base_url_in_the_environment_is_irrelevant_with_db(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CONVRISK_BASE_URL", "not a url")
    assert invoke("--db", str(tmp_path / "x.db"), "conv", "list", "-o", "id").ok()


def test_a_bad_base_url_in_the_profile_is_irrelevant_with_base_url_flag(
    invoke: Invoke, config_file: Path
) -> None:
    config_file.parent.mkdir(parents=True)
    config_file.write_text('[default]\nbase_url = "ftp://x"\noutput = "yaml"\n')
    result = invoke("--base-url", "http://127.0.0.1:1", "config", "show")
    assert result.code == 2 and "output" in result.stderr  # output is still in effect
    config_file.write_text('[default]\nbase_url = "ftp://x"\n')
    assert (
        "remote http://127.0.0.1:1"
        in invoke("--base-url", "http://127.0.0.1:1", "config", "show").ok().stdout
    )


# -- 6. config get / unset of an unknown profile; an unset key ----------------------------------


@pytest.mark.parametrize("command", ["get", "unset"])
def test_config_get_and_unset_of_an_unknown_profile_are_exit_2(
    invoke: Invoke, command: str
) -> None:
    result = invoke("config", command, "--profile", "nope", "base_url")
    assert result.code == 2 and "nope" in result.stderr
    assert invoke("config", command, "--profile", "default", "base_url").code in (0, 1)


def test_config_get_of_an_unset_key_is_exit_1_with_nothing_on_stdout(invoke: Invoke) -> None:
    result = invoke("config", "get", "timeout")
    assert result.code == 1 and result.stdout == ""


# -- 7. messages in the user's terms ------------------------------------------------------------


@pytest.mark.parametrize(
    ("details", "kind"),
    [("1", "a number"), ("null", "null"), ('"s"', "a string"), ("true", "a boolean")],
)
def test_details_of_the_wrong_type_are_named_as_json_types(
    invoke: Invoke, details: str, kind: str
) -> None:
    args = ("risk", "create", "--customer-id", "c", "--profile-type", "t", "--score", "1")
    result = invoke(*args, "--details", details)
    assert result.code == 2 and result.stderr.rstrip().endswith(f"not {kind}.")
    assert "int" not in result.stderr and "NoneType" not in result.stderr


def test_a_config_error_names_the_key_once(invoke: Invoke) -> None:
    result = invoke("config", "set", "timeout", "0")
    assert result.code == 2
    assert result.stderr.count("timeout") == 1, result.stderr


def test_progress_says_one_conversation(
    invoke: Invoke, terminal: object, backend: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    from convrisk.cli.output import Printer
    from convrisk.cli.resource_kinds import CONVERSATIONS

    shown: list[str] = []
    monkeypatch.setattr(Printer, "progress", lambda self, text: shown.append(text))

    from convrisk.api_client.records import Conversation, Page

    # A remote record with fields the interface does not list.
    item: Any = {
        "id": "conv_1",
        "object": "conversation",
        "contact_id": "c",
        "group_id": None,
        "is_pinned": False,
        "is_muted": False,
        "archived_at": None,
        "pinned_message_id": None,
        "created_at": 1,
        "updated_at": 1,
    }
    first: Page[Conversation] = {"has_more": True, "data": [item]}
    second: Page[Conversation] = {"has_more": False, "data": [item]}
    Printer("id", env={}).pages(CONVERSATIONS, [first, second], hint_more=False)
    assert shown == ["1 conversation..."]


# -- 8. no lone header when every id failed -----------------------------------------------------


@pytest.mark.parametrize("fmt", ["table", "csv"])
def test_get_of_only_failing_ids_prints_no_header(invoke: Invoke, fmt: str) -> None:
    result = invoke("conv", "get", "a", "b", "c", "-o", fmt)
    assert result.code == 3 and result.stdout == ""
    assert invoke("conv", "list", "-o", fmt).ok().stdout != ""  # an empty list keeps its header


def test_a_bad_value_in_the_config_file_names_the_key_once(
    invoke: Invoke, config_file: Path
) -> None:
    config_file.parent.mkdir(parents=True)
    config_file.write_text("[default]\ntimeout = 0\n")
    result = invoke("conv", "list")
    assert result.code == 2 and "[default]" in result.stderr
    assert result.stderr.count("timeout") == 1, result.stderr
