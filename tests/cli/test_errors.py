"""The one error boundary: exit codes, one-line messages, JSON errors, --debug and raising."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import Invoke


def test_not_found_is_exit_3_with_one_line(invoke: Invoke) -> None:
    result = invoke("conv", "get", "conv_01ARZ3NDEKTSV4RRFFQ69G5FAV")
    assert result.code == 3
    assert result.stdout == ""
    assert (
        result.stderr.startswith("Error: ") and "conv_01ARZ3NDEKTSV4RRFFQ69G5FAV" in result.stderr
    )
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_json_formats_report_errors_as_one_json_line(invoke: Invoke) -> None:
    for fmt in ("json", "jsonl"):
        result = invoke("risk", "get", "rp_01ARZ3NDEKTSV4RRFFQ69G5FAV", "-o", fmt)
        assert result.code == 3 and result.stdout == ""
        (line,) = result.stderr.splitlines()
        error = json.loads(line)["error"]
        assert error["type"] == "not_found_error"
        assert (
            error["id"] == "rp_01ARZ3NDEKTSV4RRFFQ69G5FAV"
            and "rp_01ARZ3NDEKTSV4RRFFQ69G5FAV" in error["message"]
        )
        assert "status" not in error  # the local database has no HTTP status


def test_usage_errors_are_one_line_exit_2_also_as_json(invoke: Invoke) -> None:
    for args in (
        ("conv", "list", "--bogus"),
        ("conv", "frobnicate"),
        ("conv", "get"),
        ("conv", "list", "-o", "xml"),
        ("risk", "create", "--score", "1"),
    ):
        result = invoke(*args)
        assert result.code == 2, args
        assert result.stdout == ""
        assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1, args
    as_json = invoke("conv", "list", "-o", "json", "--limit", "0")
    assert as_json.code == 2
    error = json.loads(as_json.stderr)["error"]
    assert error["type"] == "usage_error" and error["param"] == "--limit"
    click_error = invoke("conv", "list", "--limit", "many", "-o", "jsonl")
    assert click_error.code == 2
    assert json.loads(click_error.stderr)["error"]["param"] == "--limit"


def test_no_command_shows_help_on_stderr_with_exit_2(invoke: Invoke) -> None:
    result = invoke()
    assert result.code == 2 and result.stdout == ""
    assert "Usage: convrisk" in result.stderr and "conv" in result.stderr


def test_help_and_version_exit_0(invoke: Invoke) -> None:
    assert "Usage: convrisk conv list" in invoke("conv", "list", "--help").ok().stdout
    version = invoke("--version").ok().stdout
    assert version.startswith("convrisk ") and version.strip().split()[1][0].isdigit()


def test_input_the_local_backend_refuses_is_exit_2_as_caught_before_any_request(
    invoke: Invoke,
) -> None:
    # The local backend checks cursors: not an id of this resource. Nothing was sent anywhere,
    # so it is invalid input (2), as on the remote backend; only a service's answer is 1.
    for cursor in ("rp_0123", "x_1"):
        result = invoke("conv", "list", "--starting-after", cursor)
        assert result.code == 2, result.stderr
        assert result.stderr.startswith("Error: ") and "starting_after" in result.stderr


def test_a_broken_database_is_exit_1_without_traceback(invoke: Invoke, tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not sqlite" * 100)
    result = invoke("--db", str(garbage), "conv", "list")
    assert result.code == 1
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert garbage.read_bytes() == b"this is not sqlite" * 100


def test_debug_adds_the_traceback_and_keeps_the_exit_code(invoke: Invoke, tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"x" * 4096)
    result = invoke("--debug", "--db", str(garbage), "conv", "list")
    assert result.code == 1
    assert "Traceback" in result.stderr
    assert result.stderr.rstrip().splitlines()[-1].startswith("Error: ")


def test_debug_logs_the_backend_choice_to_stderr(invoke: Invoke) -> None:
    result = invoke("--debug", "conv", "list", "-o", "json").ok()
    assert result.json() == []
    assert "debug:" in result.stderr and "local" in result.stderr


def test_raise_errors_lets_the_exception_through(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    from convrisk.api_client.errors import NotFoundError

    monkeypatch.setenv("CONVRISK_RAISE_ERRORS", "1")
    with pytest.raises(NotFoundError):
        invoke("conv", "get", "conv_01ARZ3NDEKTSV4RRFFQ69G5FAV")


def test_db_in_a_missing_folder_is_a_usage_error(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("--db", str(tmp_path / "no" / "such.db"), "conv", "list")
    assert result.code == 2 and "does not exist" in result.stderr
    assert not (tmp_path / "no").exists()


def test_errors_follow_the_profiles_output_format(invoke: Invoke) -> None:
    invoke("config", "set", "output", "jsonl").ok()
    result = invoke("conv", "list", "--limit", "0")
    assert result.code == 2
    assert json.loads(result.stderr)["error"]["param"] == "--limit"
    missing = invoke("conv", "get", "conv_01ARZ3NDEKTSV4RRFFQ69G5FAV")
    assert (
        missing.code == 3
        and json.loads(missing.stderr)["error"]["id"] == "conv_01ARZ3NDEKTSV4RRFFQ69G5FAV"
    )


def test_exit_codes_tell_a_check_before_sending_from_an_answer() -> None:
    from convrisk.api_client.errors import (
        APIConnectionError,
        AuthenticationError,
        InvalidRequestError,
        NotFoundError,
        ServiceError,
        error_from_response,
    )
    from convrisk.cli.errors import exit_code

    assert exit_code(InvalidRequestError("limit must be an integer.", param="limit")) == 2
    assert exit_code(error_from_response(400, {"error": {"message": "no"}})) == 1
    assert exit_code(error_from_response(413, None)) == 1
    assert exit_code(NotFoundError("No such conversation.")) == 3
    assert exit_code(error_from_response(404, None)) == 3
    assert exit_code(AuthenticationError("Bad token.", status=401)) == 4
    assert exit_code(APIConnectionError("Could not reach it.")) == 5
    assert exit_code(ServiceError("Unexpected.")) == 1


def test_an_error_line_names_an_id_longer_than_any_by_its_start_only() -> None:
    from convrisk.api_client.resources import MAX_ID_LENGTH
    from convrisk.cli.errors import ErrorInfo

    giant = "conv_" + "x" * 100_000
    line = ErrorInfo("invalid_request_error", "refused.", id=giant).line()
    assert line.startswith("conv_xxx") and line.endswith("...: refused.") and len(line) < 80
    longest = "c" * MAX_ID_LENGTH
    assert ErrorInfo("not_found_error", "gone.", id=longest).line() == f"{longest}: gone."
    over = ErrorInfo("not_found_error", "gone.", id=longest + "c").line()
    assert over.endswith("...: gone.") and len(over) < 80
