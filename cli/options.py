"""Shared options (Annotated aliases) and the parsers for TIME, JSON details, scores and ids."""

from __future__ import annotations

import json
import math
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, BinaryIO, cast

import typer

from . import complete
from .errors import UsageProblem
from .kinds import DELETIONS, Kind
from .settings import OUTPUT_FORMATS

if TYPE_CHECKING:
    from convrisk.api_client.params import (
        ConversationCreateParams,
        ConversationUpdateParams,
        RiskProfileCreateParams,
        RiskProfileUpdateParams,
    )
    from convrisk.api_client.resources import ResourceName


def _remember_output(ctx: typer.Context, value: str | None) -> str | None:
    """Check -o early (it is eager) so that even usage errors are reported in that format."""
    if value is None:
        return None
    if value not in OUTPUT_FORMATS:
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(OUTPUT_FORMATS)}.")
    from .context import AppContext

    ctx.ensure_object(AppContext).output_flag = value
    return value


Output = Annotated[
    str | None,
    typer.Option(
        "-o",
        "--output",
        metavar="FORMAT",
        help="table, json, jsonl, csv or id. Default: table (env CONVRISK_OUTPUT, key output).",
        callback=_remember_output,
        is_eager=True,
        show_default=False,
        autocompletion=complete.formats,
    ),
]


def fields_option(kind: Kind) -> Any:
    """The --fields option of commands that print `kind` (it names the fields in its help)."""
    known = tuple(column.key for column in kind.columns)

    def remember(ctx: typer.Context, value: str | None) -> str | None:
        """Keep --fields for the printer, which checks it before any request."""
        if value is not None:
            from .context import AppContext
            from .shape import FieldChoice

            ctx.ensure_object(AppContext).fields = FieldChoice(value, known, kind.noun)
        return value

    return typer.Option(
        "--fields",
        metavar="F1,F2,...",
        help=f"Only these fields, in this order, in any format but id: {', '.join(known)}.",
        callback=remember,
        show_default=False,
    )


def _remember_jq(ctx: typer.Context, value: str | None) -> str | None:
    """Keep --jq for the printer, which compiles it before any request."""
    if value is not None:
        from .context import AppContext

        ctx.ensure_object(AppContext).jq = value
    return value


DeletionFields = Annotated[str | None, fields_option(DELETIONS)]
Jq = Annotated[
    str | None,
    typer.Option(
        "--jq",
        metavar="EXPR",
        help="Print the results of this jq program: with -o jsonl run on each record, "
        "streamed; else once over the JSON output. Strings print raw, other values as "
        "compact JSON.",
        callback=_remember_jq,
        show_default=False,
    ),
]
Limit = Annotated[
    str | None,
    typer.Option(
        "--limit",
        metavar="N",
        help="How many items in all (default 10); pages of up to page_size are fetched.",
        show_default=False,
    ),
]
All = Annotated[bool, typer.Option("--all", help="Every item, page after page (streamed).")]
StartingAfter = Annotated[
    str | None,
    typer.Option(
        "--starting-after",
        metavar="ID",
        help="Continue after this id (the cursor of a hint).",
        autocompletion=complete.ids,
    ),
]
EndingBefore = Annotated[
    str | None,
    typer.Option(
        "--ending-before",
        metavar="ID",
        help="Walk back towards the newest: the items just newer than this id, oldest first.",
    ),
]
Yes = Annotated[
    bool, typer.Option("--yes", "-y", help="Delete without asking (needed without a terminal).")
]
DryRun = Annotated[
    bool,
    typer.Option(
        "--dry-run",
        help="Check the input and every id (read-only), print what would be done, change nothing.",
    ),
]
ImportFile = Annotated[
    str,
    typer.Argument(
        metavar="FILE",
        help="JSON lines (one object per line) or CSV with a header row; - reads stdin.",
    ),
]
ImportFormat = Annotated[
    str | None,
    typer.Option(
        "--format",
        metavar="jsonl|csv",
        help="The file's format (default: by its extension, else JSON lines when it starts "
        "with {, else CSV).",
        show_default=False,
    ),
]
StopOnError = Annotated[
    bool,
    typer.Option(
        "--stop-on-error",
        help="Stop at the first record that fails (default: report it and go on).",
    ),
]
Ids = Annotated[
    list[str],
    typer.Argument(
        metavar="ID",
        help="One or more ids, or - to read ids from stdin.",
        autocompletion=complete.ids,
    ),
]
Details = Annotated[
    str | None,
    typer.Option(
        "--details",
        metavar="JSON|@FILE|-",
        help="A JSON object, @file.json, or - to read it from stdin.",
        show_default=False,
    ),
]
Score = Annotated[
    str | None, typer.Option("--score", metavar="X", help="A finite number, e.g. 72 or 72.5.")
]


DEFAULT_LIMIT = 10


def total_wanted(limit: str | None, all_items: bool) -> int | None:
    """The total number of items to fetch: --limit N (default 10), or None for --all."""
    if all_items and limit is not None:
        raise UsageProblem("Give --limit or --all, not both.", param="--limit")
    if all_items:
        return None
    if limit is None:
        return DEFAULT_LIMIT
    number = whole_number(limit, "--limit")
    if number < 1:
        raise UsageProblem(f"--limit must be 1 or more, not {number}.", param="--limit")
    return number


_WHOLE_NUMBER = re.compile(r"[+-]?[0-9]+")


def whole_number(text: str, option: str, low: int | None = None, high: int | None = None) -> int:
    """An option's whole number (ASCII digits), within [low, high] when given."""
    value = text.strip()
    if not _WHOLE_NUMBER.fullmatch(value) or len(value) > 20:
        raise UsageProblem(f"{option} must be a whole number, not {text!r}.", param=option)
    number = int(value)
    if (low is not None and number < low) or (high is not None and number > high):
        raise UsageProblem(f"{option} must be from {low} to {high}, not {number}.", param=option)
    return number


def cursors(starting_after: str | None, ending_before: str | None) -> tuple[str | None, str | None]:
    """--starting-after or --ending-before (not both), neither of them empty."""
    if starting_after is not None and ending_before is not None:
        raise UsageProblem(
            "Give --starting-after or --ending-before, not both.", param="--ending-before"
        )
    return nonempty(starting_after, "--starting-after"), nonempty(ending_before, "--ending-before")


def cursor_option(ending_before: str | None) -> str:
    """The option that continues a listing after its last item printed."""
    return "--starting-after" if ending_before is None else "--ending-before"


def nonempty(value: str | None, option: str) -> str | None:
    """The value, with an error for an empty string (which would match nothing)."""
    if value is not None and not value.strip():
        raise UsageProblem(f"{option} must not be empty.", param=option)
    return value


_JSON_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def parse_score(text: str) -> int | float:
    """A finite number written as in JSON: whole numbers stay integers (72 -> 72, 72.5 -> 72.5).

    Only ASCII digits, no `_` or `+`; an integer must fit in 64 bits (what the store keeps).
    """
    return parse_number(text, "--score")


def parse_number(text: str, name: str) -> int | float:
    """`parse_score`'s rules for any number; `name` (an option or a column) names the problem."""
    value = text.strip()
    if not _JSON_NUMBER.fullmatch(value):
        if value.lower().lstrip("+-") in ("nan", "inf", "infinity"):
            raise UsageProblem(f"{name} must be a finite number, not {text!r}.", param=name)
        raise UsageProblem(f"{name} must be a number like 72 or 72.5, not {text!r}.", param=name)
    number: int | float
    try:
        number = int(value)
    except ValueError:
        number = float(value)
    if isinstance(number, int) and not INT64_MIN <= number <= INT64_MAX:
        raise UsageProblem(
            f"{name} {value} is out of range: a whole number must be from {INT64_MIN} "
            f"to {INT64_MAX}.",
            param=name,
        )
    if isinstance(number, float) and not math.isfinite(number):
        raise UsageProblem(f"{name} must be a finite number, not {text!r}.", param=name)
    return number


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_JSON_KINDS: dict[type, str] = {list: "an array", str: "a string", bool: "a boolean"}
_JSON_KINDS[type(None)] = "null"


_BOM = "\ufeff"


def parse_details(spec: str) -> dict[str, Any]:
    """A JSON object given inline, as `@file.json`, or `-` for stdin."""
    text, source = read_json_argument(spec, "--details", example="details.json")
    return parse_json_object(text, "--details", source)


def read_json_argument(spec: str, name: str, *, example: str = "body.json") -> tuple[str, str]:
    """The text of a JSON argument given inline, as `@file.json`, or `-` for stdin, and where it
    came from (for messages); `name` is the option's."""
    if spec == "-":
        return _bounded_text(sys.stdin.buffer, name, "stdin"), "stdin"
    if not spec.startswith("@"):
        return spec, "the argument"
    if not spec[1:].strip():
        raise UsageProblem(
            f"{name} @ needs a file name after the @, as in @{example}.",
            param=name,
        )
    path = Path(spec[1:]).expanduser()
    if path.is_dir():
        raise UsageProblem(f"{name}: {path} is a folder, not a JSON file.", param=name)
    try:
        with path.open("rb") as file:
            return _bounded_text(file, name, str(path)), str(path)
    except OSError as exc:
        raise UsageProblem(
            f"{name}: cannot read {path}: {exc.strerror or exc}.", param=name
        ) from None


# A JSON argument larger than this is refused (`-d @/dev/zero` would otherwise fill memory);
# the interface takes bodies of at most 1 MiB.
MAX_JSON_ARGUMENT = 64 * 1024 * 1024


def _bounded_text(stream: BinaryIO, name: str, source: str) -> str:
    """At most MAX_JSON_ARGUMENT bytes of `stream` as UTF-8 text, a byte-order mark dropped
    (Windows editors write one; it is not part of the JSON)."""
    data = stream.read(MAX_JSON_ARGUMENT + 1)
    if len(data) > MAX_JSON_ARGUMENT:
        raise UsageProblem(
            f"{name}: {source} is over {MAX_JSON_ARGUMENT // (1024 * 1024)} MiB.", param=name
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UsageProblem(f"{name}: {source} is not UTF-8 text.", param=name) from None


def check_json(text: str, name: str, source: str) -> None:
    """Usage error unless `text` is one JSON value (NaN and Infinity refused)."""
    try:
        json.loads(text, parse_constant=_no_constants)
    except (ValueError, RecursionError) as exc:
        raise UsageProblem(f"{name}: {source} is not valid JSON: {exc}.", param=name) from None


def parse_json_object(text: str, name: str, source: str = "the value") -> dict[str, Any]:
    """A JSON object from text (JSON's NaN and Infinity refused); `name` names the problem."""
    try:
        value = json.loads(text, parse_constant=_no_constants)
    except (ValueError, RecursionError) as exc:
        raise UsageProblem(f"{name}: {source} is not valid JSON: {exc}.", param=name) from None
    if not isinstance(value, dict):
        kind = _JSON_KINDS.get(type(value), "a number")
        raise UsageProblem(f'{name} must be a JSON object like {{"k": 1}}, not {kind}.', param=name)
    return value


MAX_TIME = 253402300799  # 9999-12-31T23:59:59Z

# TIME (see docs/decisions.md, Command line): `now`; `@SECONDS`; a plain number of seconds; an
# ISO 8601 calendar date or date-time, extended or basic form, without a zone meaning UTC.
_SECONDS = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_ISO = re.compile(
    r"(?P<year>[0-9]{4})(?P<dash>-?)(?P<month>[0-9]{2})(?P=dash)(?P<day>[0-9]{2})"
    r"(?:[Tt ](?P<hour>[0-9]{2})"
    r"(?:(?P<colon>:?)(?P<minute>[0-9]{2})"
    r"(?:(?P=colon)(?P<second>[0-9]{2})(?:[.,](?P<fraction>[0-9]+))?)?)?"
    r"(?P<zone>[Zz]|(?P<sign>[+-])(?P<zone_hour>[0-9]{2})(?::?(?P<zone_minute>[0-9]{2}))?)?)?"
)
# A bare whole number of these lengths has the shape of a basic-form date (YYYY is a year in
# ISO 8601's reduced precision): it is refused rather than guessed, whether or not it is a real
# date, because as seconds each of these lengths is a time nobody means (1970-1973, after 5000).
_BASIC_SHAPES = {4: "YYYY", 8: "YYYYMMDD", 12: "YYYYMMDDhhmm", 14: "YYYYMMDDhhmmss"}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
TIME_FORMS = (
    "an ISO 8601 date or date-time (2024-05-01, 2024-05-01T12:00:00Z, 20240501T120000+0200; "
    "no zone means UTC), Unix seconds (1714564800; @SECONDS always means seconds), or now"
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
    """Unix seconds of an ISO 8601 date or date-time in the accepted forms, else None."""
    match = _ISO.fullmatch(text)
    if match is None:
        return None
    part = match.groupdict()
    zone = UTC
    if part["sign"]:
        offset = timedelta(hours=int(part["zone_hour"]), minutes=int(part["zone_minute"] or 0))
        if offset >= timedelta(hours=24) or int(part["zone_minute"] or 0) > 59:
            return None
        zone = timezone(-offset if part["sign"] == "-" else offset)
    try:
        moment = datetime(
            int(part["year"]),
            int(part["month"]),
            int(part["day"]),
            int(part["hour"] or 0),
            int(part["minute"] or 0),
            int(part["second"] or 0),
            tzinfo=zone,
        )
    except ValueError:
        return None
    whole = (moment - _EPOCH) // timedelta(seconds=1)
    fraction = part["fraction"]
    if fraction and int(fraction):
        return whole + float(f"0.{fraction}")
    return whole


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
    if not math.isfinite(seconds) or not 0 <= seconds <= MAX_TIME:
        raise _time_problem(
            f"{value!r} is out of range: give a time from 1970 to the end of 9999 "
            f"(Unix seconds 0 to {MAX_TIME}).",
            option,
        )
    return int(seconds) if seconds == int(seconds) else seconds


@dataclass
class IdList:
    """Ids from the arguments, or read lazily from stdin (one per line, blank lines ignored)."""

    given: list[str]
    read: list[str] | None = None  # the ids from stdin, once read_all() has read them

    def read_all(self) -> list[str]:
        """Every id now: the arguments, or all of stdin's."""
        if not self.from_stdin:
            return self.given
        if self.read is None:
            self.read = list(self._stdin())
        return self.read

    @property
    def from_stdin(self) -> bool:
        """Whether the ids come from stdin (`-`)."""
        return self.given == ["-"]

    @property
    def many(self) -> bool:
        """Whether the answer is a list (several ids, or `-`) rather than one object."""
        return self.from_stdin or len(self.given) > 1

    def __iter__(self) -> Iterator[str]:
        if not self.from_stdin:
            yield from self.given
        elif self.read is not None:
            yield from self.read
        else:
            yield from self._stdin()

    def _stdin(self) -> Iterator[str]:
        for line in sys.stdin:
            if line.strip():
                yield line.strip()


def id_list(ids: list[str]) -> IdList:
    """Check the ID... arguments: `-` must stand alone; no empty ids."""
    if "-" in ids and len(ids) > 1:
        raise UsageProblem("'-' reads the ids from stdin and must be the only ID.", param="ID")
    if any(not item.strip() for item in ids):
        raise UsageProblem("An ID must not be empty.", param="ID")
    return IdList([item.strip() for item in ids])


def check_one_stdin(ids: IdList, details: str | None) -> None:
    """Only one thing can come from stdin."""
    if ids.from_stdin and details == "-":
        raise UsageProblem(
            "Cannot read both the ids and --details from stdin: give one of them inline.",
            param="--details",
        )


def option_name(field: str) -> str:
    """The command-line option of a field: `contact_id` -> `--contact-id`."""
    return "--" + field.replace("_", "-")


def _one_of(listed: list[str]) -> str:
    return listed[0] if len(listed) == 1 else f"{', '.join(listed[:-1])} or {listed[-1]}"


def conversation_party(contact_id: str | None, group_id: str | None) -> ConversationCreateParams:
    """Exactly one of --contact-id and --group-id (an empty value counts as absent)."""
    from convrisk.api_client.resources import CONVERSATIONS

    given = {"contact_id": contact_id, "group_id": group_id}
    stripped = {name: (given[name] or "").strip() for name in CONVERSATIONS.one_of}
    party = {name: value for name, value in stripped.items() if value}
    options = [option_name(name) for name in CONVERSATIONS.one_of]
    if len(party) > 1:
        raise UsageProblem(f"Give {_one_of(options)}, not both.", param=options[-1])
    if not party:
        # The metavar of each option is its first letter: --contact-id C.
        shown = [f"{option} {option[2].upper()}" for option in options]
        raise UsageProblem(f"Give {_one_of(shown)}.", param=options[0])
    return cast("ConversationCreateParams", party)


def more_changes(resource: ResourceName, changes: dict[str, Any], given: dict[str, Any]) -> None:
    """Add to `changes` the fields given by options named after them (`--topic T`): a text
    as it is (an empty one clears a field that can be null), a number, a TIME or a JSON object
    parsed as --score, --archived-at and --details are."""
    from convrisk.api_client.resources import RESOURCES

    for name, text in given.items():
        if text is None:
            continue
        field, option = RESOURCES[resource].field(name), option_name(name)
        if field.type == "string":
            clears = field.nullable and not text.strip()
            value: Any = None if clears else nonempty(text, option)
        elif field.type == "number":
            value = parse_number(text, option)
        elif field.type == "timestamp":
            value = parse_time(text, option)
        else:
            value = parse_details(text)
        changes[name] = value


def conversation_changes(
    pin: bool | None,
    mute: bool | None,
    archive: bool | None,
    archived_at: str | None,
    pinned_message_id: str | None,
    clear_pinned_message: bool,
    **more: str | None,
) -> ConversationUpdateParams:
    """The update of `conv update`: only what was asked for; nothing at all is a usage error.

    `more` are the values of options named after the fields they set (see `more_changes`).
    """
    changes: dict[str, Any] = {}
    if pin is not None:
        changes["is_pinned"] = pin
    if mute is not None:
        changes["is_muted"] = mute
    if archived_at is not None:
        if archive is False:
            raise UsageProblem(
                "Give --unarchive or --archived-at, not both.", param="--archived-at"
            )
        changes["archived_at"] = parse_time(archived_at)
    elif archive is not None:
        changes["archived_at"] = int(time.time()) if archive else None
    if pinned_message_id is not None and clear_pinned_message:
        raise UsageProblem(
            "Give --pinned-message-id or --clear-pinned-message, not both.",
            param="--pinned-message-id",
        )
    if pinned_message_id is not None:
        changes["pinned_message_id"] = nonempty(pinned_message_id, "--pinned-message-id")
    elif clear_pinned_message:
        changes["pinned_message_id"] = None
    more_changes("conversations", changes, more)
    if not changes:
        options = ["--pin/--unpin", "--mute/--unmute", "--archive/--unarchive", "--archived-at"]
        options += ["--pinned-message-id", "--clear-pinned-message"]
        raise UsageProblem(
            f"Nothing to change: give {_one_of(options + [option_name(n) for n in more])}."
        )
    return cast("ConversationUpdateParams", changes)


def risk_profile_changes(
    profile_type: str | None, score: str | None, details: str | None, **more: str | None
) -> RiskProfileUpdateParams:
    """The update of `risk update`: only what was asked for; nothing at all is a usage error.

    `more` are the values of options named after the fields they set (see `more_changes`).
    """
    changes: dict[str, Any] = {}
    if profile_type is not None:
        changes["profile_type"] = profile_type
        nonempty(profile_type, "--profile-type")
    if score is not None:
        changes["score"] = parse_score(score)
    if details is not None:
        changes["details"] = parse_details(details)
    more_changes("risk_profiles", changes, more)
    if not changes:
        options = ["--profile-type", "--score", "--details", *(option_name(n) for n in more)]
        raise UsageProblem(f"Nothing to change: give {_one_of(options)}.")
    return cast("RiskProfileUpdateParams", changes)


def risk_profile_fields(
    customer_id: str, profile_type: str, score: str, details: str | None
) -> RiskProfileCreateParams:
    """The fields of `risk create`; details default to an empty object."""
    return {
        "customer_id": nonempty(customer_id, "--customer-id") or customer_id,
        "profile_type": nonempty(profile_type, "--profile-type") or profile_type,
        "score": parse_score(score),
        "details": {} if details is None else parse_details(details),
    }


def read_secret() -> str:
    """A value read from stdin (`config set token -`), without its line break."""
    text = sys.stdin.read().strip()
    if not text:
        raise UsageProblem("Nothing was read from stdin: pipe the value in.", param="VALUE")
    return text
