"""TIME, as `--archived-at` and import files take it: ISO 8601, Unix seconds, or `now`."""

from __future__ import annotations

import math
import re
import time
from datetime import UTC, datetime, timedelta

from convrisk.cli.errors import UsageProblem

# TIME (see docs/design/command-line.md, Values): `now`; `@SECONDS`; a plain number of seconds; an
# ISO 8601 calendar date or date-time, extended or basic form, without a zone meaning UTC.
_SECONDS = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
# datetime.fromisoformat reads the ISO forms; it also takes week dates (2024-W18-3) and any
# character between date and time (2024-05-01x12:00), which TIME does not: its date is a
# calendar date, then `T` or a space.
_CALENDAR_DATE = re.compile(r"[0-9]{4}(-?)[0-9]{2}\1[0-9]{2}(?:[T ]|$)")
# A bare whole number of these lengths has the shape of a basic-form date (YYYY is a year in
# ISO 8601's reduced precision): it is refused rather than guessed, whether or not it is a real
# date, because as seconds each of these lengths is a time nobody means (1970-1973, after 5000).
_BASIC_SHAPES = {4: "YYYY", 8: "YYYYMMDD", 12: "YYYYMMDDhhmm", 14: "YYYYMMDDhhmmss"}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
TIME_FORMS = (
    "an ISO 8601 date or date-time (2024-05-01, 2024-05-01T12:00:00Z, 20240501T120000+0200; "
    "no zone means UTC), Unix seconds (1714564800; @SECONDS always means seconds), or now"
)
# What the help of a TIME option says after "Archive at TIME: ".
TIME_HELP = (
    "ISO 8601 (2024-05-01, 2024-05-01T12:00:00+02:00, 20240501T120000Z; no zone means UTC), "
    "Unix seconds (1714564800, or @SECONDS for any number), or now. A bare 4, 8, 12 or 14 "
    "digit number is refused as ambiguous."
)


def _time_problem(problem: str, option: str = "--archived-at") -> UsageProblem:
    return UsageProblem(f"{option}: {problem}", param=option)


def _ambiguous(digits: str, option: str) -> UsageProblem:
    """The error for a bare number shaped like a basic-form date: how to write either meaning."""
    if len(digits) == 4:
        date = f"{digits}-01-01"
        meaning, advice = f"the year {digits}", f"{date} for the start of that year"
    else:
        date = f"{digits[:4]}-{digits[4:6]}-{digits[6:8]}"
        if len(digits) > 8:
            date += f"T{digits[8:10]}:{digits[10:12]}" + (f":{digits[12:]}" if digits[12:] else "")
        kind = "time" if len(digits) > 8 else "date"
        meaning, advice = f"the {kind} {date}", f"{date} for that {kind} (UTC)"
    try:
        datetime.fromisoformat(date)
    except ValueError:
        return _time_problem(
            f"{digits} has the shape of a basic-form ISO date ({_BASIC_SHAPES[len(digits)]}) "
            "but is not a valid one. Write a date as 2024-05-01 or 2024-05-01T12:00:00Z, or "
            f"Unix seconds as @{digits}.",
            option,
        )
    return _time_problem(
        f"{digits} could be {meaning} or Unix seconds. Write {advice}, or @{digits} for Unix "
        "seconds.",
        option,
    )


def _iso_seconds(text: str) -> int | float | None:
    """Unix seconds of an ISO 8601 calendar date or date-time (no zone: UTC), else None."""
    text = text.upper()  # `t` and `z` as well, which fromisoformat refuses
    if not text.isascii() or not _CALENDAR_DATE.match(text):
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    whole = (moment.replace(microsecond=0) - _EPOCH) // timedelta(seconds=1)
    return whole + moment.microsecond / 1_000_000 if moment.microsecond else whole


def parse_time(text: str, option: str = "--archived-at") -> int | float:
    """Unix seconds from TIME: ISO 8601 (no zone means UTC), Unix seconds, `@SECONDS`, or `now`.

    A bare whole number of 4, 8, 12 or 14 digits has the shape of a basic-form date and is a
    usage error that shows how to write either meaning. `option` names the problem.
    """
    value = text.strip()
    if value.lower() == "now":
        return int(time.time())
    seconds: int | float | None
    forced = value.startswith("@")
    number = value[1:] if forced else value
    if _SECONDS.fullmatch(number):
        if not forced and number.isdigit() and len(number) in _BASIC_SHAPES:
            raise _ambiguous(number, option)
        seconds = float(number)
    else:
        seconds = None if forced else _iso_seconds(value)
        if seconds is None:
            raise _time_problem(f"{value!r} is not a time. Give {TIME_FORMS}.", option)
    # Read here, not at the top: `--help` loads this module and must load nothing of the client.
    from convrisk.api_client.defaults import MAX_TIMESTAMP as MAX_TIME

    if not math.isfinite(seconds) or not 0 <= seconds <= MAX_TIME:
        raise _time_problem(
            f"{value!r} is out of range: give a time from 1970 to the end of 9999 "
            f"(Unix seconds 0 to {MAX_TIME}).",
            option,
        )
    return int(seconds) if seconds == int(seconds) else seconds
