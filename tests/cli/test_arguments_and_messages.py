"""Help names arguments by their names; bad input gets one line in convrisk's words; a details
file with a byte order mark is read; negative numbers after `config set KEY` are values."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from convrisk.cli.app import command
from tests.cli.conftest import Invoke, walk


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
    assert invoke("config", "set", "timeout", "--bogus").stderr.startswith(
        "Error: No such option: --bogus"
    )
    # It may be a token that starts with -: masked, and the way to give it is named.
    refused = invoke("config", "set", "token", "--bogus").stderr
    assert refused.startswith("Error: No such option: ****") and "bogus" not in refused
    assert "convrisk config set token -- VALUE" in refused
    assert "bogus" not in config_file.read_text() and "-x" not in config_file.read_text()
