"""Global options before or after the command, and help and messages in convrisk's own words."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from convrisk.cli.app import command
from tests.cli.conftest import Invoke
from tests.cli.test_help import walk

Make = Callable[[int], list[str]]


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (["--debug", "conv", "list"], ["conv", "list", "--debug"]),
        (["conv", "--debug", "list"], ["conv", "list", "--debug"]),
        (["--debug", "config", "path"], ["config", "path", "--debug"]),
    ],
)
def test_debug_after_the_command_is_debug_before_it(
    invoke: Invoke, before: list[str], after: list[str]
) -> None:
    first, second = invoke(*before).ok(), invoke(*after).ok()
    assert first.stdout == second.stdout
    assert ("debug: " in first.stderr) == ("debug: " in second.stderr)
    if before[1] == "conv":
        assert "debug: convrisk.cli: profile default" in second.stderr


def test_db_and_profile_after_the_command_mean_what_they_mean_before_it(
    invoke: Invoke, tmp_path: Path, conversations: Make
) -> None:
    conversations(2)  # in the default database
    other = str(tmp_path / "other.db")
    made = invoke("conv", "create", "--contact-id", "c_x", "-o", "id", "--db", other).ok()
    assert invoke("conv", "list", "-o", "id", "--db", other).ok().lines() == [made.stdout.strip()]
    assert invoke("--db", other, "conv", "list", "-o", "id").ok().lines() == [made.stdout.strip()]
    assert len(invoke("conv", "list", "-o", "id").ok().lines()) == 2
    missing = invoke("conv", "list", "--profile", "nope")
    assert missing.code == 2 and "No profile 'nope'" in missing.stderr
    assert invoke("risk", "get", "rp_x", "--base-url", "ftp://x").code == 2


def test_the_last_global_option_given_wins(invoke: Invoke, tmp_path: Path) -> None:
    a, b = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    made = invoke("--db", a, "conv", "create", "--contact-id", "c", "-o", "id", "--db", b).ok()
    assert invoke("conv", "get", made.stdout.strip(), "--db", b).code == 0
    assert invoke("conv", "get", made.stdout.strip(), "--db", a).code == 3


def test_every_command_lists_the_global_options_it_takes(invoke: Invoke) -> None:
    for path, cmd in walk(command()):
        if not path:
            continue
        shown = invoke(*path, "--help").ok().stdout
        section = shown.split("Global options (before or after the command):\n", 1)[1]
        section = section.split("\n\n", 1)[0]
        own = {opt for param in cmd.params for opt in param.opts}
        for option in ("--profile P", "--base-url URL", "--db PATH", "--debug"):
            # Only `config ... --profile` and `serve --db` have an option of that name.
            assert (option in section) == (option.split()[0] not in own), (path, option)


def test_help_shows_arguments_by_their_names(invoke: Invoke) -> None:
    for path, _ in walk(command()):
        shown = invoke(*path, "--help").ok().stdout
        for wrong in ("<list[str]>", "<str>", "<int>", "{ID}", "{KEY}", "{VALUE}", "0<=x"):
            assert wrong not in shown, (path, wrong)
    get = invoke("conv", "get", "--help").ok().stdout
    assert get.startswith("Usage: convrisk conv get [OPTIONS] ID...\n")
    assert re.search(r"^  ID\.\.\.  One or more ids", get, re.M)
    assert (
        invoke("config", "set", "--help")
        .ok()
        .stdout.startswith("Usage: convrisk config set [OPTIONS] KEY [VALUE]\n")
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["conv", "list", "--limit", "abc"], "Error: --limit must be a whole number, not 'abc'."),
        (["conv", "list", "--limit", "1.5"], "Error: --limit must be a whole number, not '1.5'."),
        (["risk", "list", "--limit", "0"], "Error: --limit must be 1 or more, not 0."),
        (["serve", "--port", "http"], "Error: --port must be a whole number, not 'http'."),
        (["serve", "--port", "70000"], "Error: --port must be from 0 to 65535, not 70000."),
        (
            ["risk", "update", "rp_1", "--details", "@"],
            "Error: --details @ needs a file name after the @, as in @details.json.",
        ),
        (
            ["risk", "update", "rp_1", "--details", "@."],
            "Error: --details: . is a folder, not a JSON file.",
        ),
        (
            ["config", "set", "timeout", "-1"],
            "Error: timeout must be a number of seconds from 0.1 to 3600.",
        ),
        (
            ["config", "set", "max_retries", "-3", "--profile", "ci"],
            "Error: max_retries must be a whole number from 0 to 10.",
        ),
        (["config", "set", "page_size"], "Error: Give a VALUE for page_size (or - to read it"),
    ],
)
def test_bad_input_gets_one_line_in_convrisk_words(
    invoke: Invoke, args: list[str], message: str
) -> None:
    result = invoke(*args)
    assert result.code == 2
    assert result.stderr.startswith(message), result.stderr
    assert result.stderr.count("\n") == 1
    assert "Input should be" not in result.stderr


def test_a_json_usage_error_names_the_option(invoke: Invoke) -> None:
    result = invoke("conv", "list", "--limit", "x", "-o", "json")
    assert json.loads(result.stderr)["error"]["param"] == "--limit"


def test_a_details_file_with_a_byte_order_mark_is_read(invoke: Invoke, tmp_path: Path) -> None:
    path = tmp_path / "details.json"
    path.write_bytes(b'\xef\xbb\xbf{"reviewed": true}')
    args = ["risk", "create", "--customer-id", "c", "--profile-type", "t", "--score", "1"]
    made = invoke(*args, "--details", f"@{path}", "-o", "json").ok().json()
    assert made["details"] == {"reviewed": True}
    piped = invoke(*args, "--details", "-", "-o", "json", input='\ufeff{"a": 1}').ok().json()
    assert piped["details"] == {"a": 1}


def test_negative_numbers_after_config_set_key_are_values(
    invoke: Invoke, config_file: Path
) -> None:
    invoke("config", "set", "--profile", "ci", "timeout", "5").ok()
    assert invoke("config", "set", "timeout", "-1", "--profile", "ci").code == 2
    assert "timeout = 5" in config_file.read_text()
    for args in (["timeout", "5", "--bogus"], ["token", "--bogus"], ["db", "-x"]):
        bad_option = invoke("config", "set", *args)
        assert bad_option.code == 2, args  # an unknown option is still an error, never stored
        assert bad_option.stderr.count("\n") == 1
    assert invoke("config", "set", "token", "--bogus").stderr.startswith(
        "Error: No such option: --bogus"
    )
    assert "bogus" not in config_file.read_text() and "-x" not in config_file.read_text()
