"""Values out of range or of the wrong kind (dates, scores, cursors, details) are usage errors,
exit 2, named in JSON's and the user's terms; the values at the edges of the range are taken."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.conftest import Invoke


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
# The service keeps +-(2**63 - 1), floats included: the option refuses what it would.
BAD_SCORES += ["-9223372036854775808", "1e300", "9.3e18"]


BAD_SCORES += ["1_000", "١٢", "+5", "0x10", "1.", ".5", "01", " ", "1e999"]


@pytest.mark.parametrize("score", BAD_SCORES)
def test_a_score_that_is_not_a_plain_number_in_range_is_exit_2(invoke: Invoke, score: str) -> None:
    args = ("risk", "create", "--customer-id", "c", "--profile-type", "t", "--score", score)
    result = invoke(*args)
    assert result.code == 2, result.stderr
    assert "--score" in result.stderr
    assert invoke("risk", "list", "-o", "id").ok().stdout == ""


@pytest.mark.parametrize("score", ["9223372036854775807", "-9223372036854775807", "1e3", "-0.5"])
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
