"""`conv update --archived-at TIME`: every accepted form is stored as the right Unix seconds, and
a bare number that could also be a basic-form ISO date is refused rather than guessed."""

from __future__ import annotations

import time

import pytest

from convrisk.cli.errors import UsageProblem
from convrisk.cli.options.times import parse_time
from tests.cli.conftest import Invoke

NOON = 1714564800  # 2024-05-01T12:00:00Z
MIDNIGHT = 1714521600  # 2024-05-01T00:00:00Z

FORMS = [
    # ISO 8601 extended form
    ("2024-05-01", MIDNIGHT),
    ("2024-05-01T12:00:00Z", NOON),
    ("2024-05-01t12:00:00z", NOON),
    ("2024-05-01 12:00:00Z", NOON),
    ("2024-05-01T12:00Z", NOON),
    ("2024-05-01T12Z", NOON),
    ("2024-05-01T12:00:00", NOON),  # no zone: UTC
    ("2024-05-01T12:00:00+02:00", NOON - 7200),
    ("2024-05-01T12:00:00-0530", NOON + 5 * 3600 + 1800),
    ("2024-05-01T12:00:00+02", NOON - 7200),
    ("2024-05-01T12:00:00.5Z", NOON + 0.5),
    ("2024-05-01T12:00:00,25Z", NOON + 0.25),
    ("2024-05-01T12:00:00.000Z", NOON),  # a zero fraction stays a whole number
    # ISO 8601 basic form
    ("20240501T120000Z", NOON),
    ("20240501T1200Z", NOON),
    ("20240501T12", NOON),
    ("20240501T120000+0200", NOON - 7200),
    ("20240501T120000.5Z", NOON + 0.5),
    # Unix seconds
    ("1714564800", NOON),
    ("1714564800.5", NOON + 0.5),
    ("@1714564800", NOON),
    ("@20240501", 20240501),  # @ forces seconds, as GNU date does
    ("@2024", 2024),
    ("@0", 0),
    ("0", 0),
    ("1.7e9", 1_700_000_000),
    ("123456789", 123456789),  # 9 digits: no basic-form date has that length
    (" 2024-05-01T12:00:00Z ", NOON),
]


@pytest.mark.parametrize(("text", "seconds"), FORMS)
def test_each_time_form_means_these_unix_seconds(text: str, seconds: float) -> None:
    value = parse_time(text)
    assert value == seconds
    assert isinstance(value, int) == (seconds == int(seconds))


AMBIGUOUS = [
    ("20240501", "2024-05-01", "@20240501"),
    ("202405011200", "2024-05-01T12:00", "@202405011200"),
    ("20240501120000", "2024-05-01T12:00:00", "@20240501120000"),
    ("2024", "2024-01-01", "@2024"),
    ("19700101", "1970-01-01", "@19700101"),
]


@pytest.mark.parametrize(("text", "date", "seconds"), AMBIGUOUS)
def test_a_number_that_reads_as_a_basic_form_date_is_refused_with_both_spellings(
    text: str, date: str, seconds: str
) -> None:
    with pytest.raises(UsageProblem) as caught:
        parse_time(text)
    message = caught.value.message
    assert caught.value.param == "--archived-at"
    assert date in message and seconds in message, message


@pytest.mark.parametrize("text", ["20241301", "20240230", "202405012500", "00000000"])
def test_a_number_of_a_basic_form_length_that_is_no_date_is_refused_too(text: str) -> None:
    # 8, 12 and 14 digits are the lengths of basic-form dates: a typo in one is not seconds.
    with pytest.raises(UsageProblem) as caught:
        parse_time(text)
    assert f"@{text}" in caught.value.message and "YYYY" in caught.value.message


@pytest.mark.parametrize(
    "text",
    [
        "yesterday",
        "2024-05",
        "2024-5-1",
        "2024-0501",
        "2024-05-01T",
        "2024-05-01Z",
        "2024-05-01T12:00:00+2",
        "2024-05-01x12:00",
        "2024-W18-3",  # a week date: TIME takes calendar dates only
        "2024-02-30",
        "2024-05-01T24:00:00Z",
        "2024-05-01T12:00:00+24:00",
        "@",
        "@now",
        "@1e",
        "+5",
        "1_000",
        "nan",
        "inf",
        "\u0661\u0662\u0663",
        "",
    ],
)
def test_what_is_not_a_time_is_a_usage_error_naming_the_forms(text: str) -> None:
    with pytest.raises(UsageProblem) as caught:
        parse_time(text)
    assert caught.value.param == "--archived-at"
    assert "2024-05-01" in caught.value.message


@pytest.mark.parametrize(
    "text",
    [
        "1969-12-31T23:59:59Z",
        "-1",
        "@-1",
        "@253402300800",
        "253402300800.0",
        "1970-01-01T00:30:00+01:00",
    ],
)
def test_times_outside_1970_to_9999_are_out_of_range(text: str) -> None:
    with pytest.raises(UsageProblem, match="out of range"):
        parse_time(text)


def test_now_is_the_current_second() -> None:
    before = int(time.time())
    value = parse_time("now")
    assert isinstance(value, int) and before <= value <= int(time.time())
    assert before <= parse_time("NOW") <= int(time.time())


# -- through the command line, read back from the database -------------------------------------


@pytest.fixture
def conv_id(invoke: Invoke) -> str:
    return str(invoke("conv", "create", "--contact-id", "c_1", "-o", "id").ok().stdout.strip())


def archived_at(invoke: Invoke, conv_id: str) -> object:
    return invoke("conv", "get", conv_id, "-o", "json").ok().json()["archived_at"]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("2024-05-01", MIDNIGHT),
        ("20240501T120000Z", NOON),
        ("2024-05-01T14:00:00+02:00", NOON),
        ("20240501T140000.5+0200", NOON + 0.5),
        ("@20240501", 20240501),
        ("1714564800", NOON),
    ],
)
def test_update_stores_each_form_as_unix_seconds(
    invoke: Invoke, conv_id: str, text: str, seconds: float
) -> None:
    invoke("conv", "update", conv_id, "--archived-at", text, "-o", "json").ok()
    assert archived_at(invoke, conv_id) == seconds


@pytest.mark.parametrize("text", ["20240501", "202405011200", "20240501120000", "2024"])
def test_update_with_an_ambiguous_number_is_exit_2_and_changes_nothing(
    invoke: Invoke, conv_id: str, text: str
) -> None:
    result = invoke("conv", "update", conv_id, "--archived-at", text, "--mute")
    assert result.code == 2 and result.stdout == ""
    assert result.stderr.startswith("Error: --archived-at: ") and result.stderr.count("\n") == 1
    assert f"@{text}" in result.stderr
    shown = invoke("conv", "get", conv_id, "-o", "json").ok().json()
    assert shown["archived_at"] is None and shown["is_muted"] is False


def test_update_with_now_stores_the_current_second(invoke: Invoke, conv_id: str) -> None:
    before = int(time.time())
    invoke("conv", "update", conv_id, "--archived-at", "now").ok()
    stored = archived_at(invoke, conv_id)
    assert isinstance(stored, int) and before <= stored <= int(time.time())


def test_the_help_of_archived_at_names_the_forms(invoke: Invoke) -> None:
    text = " ".join(invoke("conv", "update", "--help").ok().stdout.split())
    for form in ("2024-05-01", "20240501T120000Z", "@SECONDS", "now", "UTC"):
        assert form in text, form
