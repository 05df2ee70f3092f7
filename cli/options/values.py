"""Parsers of the values a user types: whole numbers, --limit and cursors, scores, JSON
arguments (inline, @file or stdin), and ID... lists."""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from convrisk.cli.errors import UsageProblem


def total_wanted(limit: str | None, all_items: bool) -> int | None:
    """The total number of items to fetch: --limit N (default 10), or None for --all."""
    if all_items and limit is not None:
        raise UsageProblem("Give --limit or --all, not both.", param="--limit")
    if all_items:
        return None
    if limit is None:
        from convrisk.api_client.defaults import DEFAULT_LIMIT  # not at import: `config` needs none

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
        within = f"at least {low}" if high is None else f"from {low} to {high}"
        if low is None:
            within = f"at most {high}"
        raise UsageProblem(f"{option} must be {within}, not {number}.", param=option)
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


def parse_score(text: str) -> int | float:
    """A finite number written as in JSON: whole numbers stay integers (72 -> 72, 72.5 -> 72.5).

    Only ASCII digits, no `_` or `+`; within +-(2**63 - 1), floats too (what the service keeps).
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
    if isinstance(number, float) and not math.isfinite(number):
        raise UsageProblem(f"{name} must be a finite number, not {text!r}.", param=name)
    # Read here, not at the top: `--help` loads this module and must load nothing of the client.
    from convrisk.api_client.defaults import MAX_NUMBER, MIN_NUMBER

    if not MIN_NUMBER <= number <= MAX_NUMBER:
        raise UsageProblem(
            f"{name} {value} is out of range: a number must be from {MIN_NUMBER} to {MAX_NUMBER}.",
            param=name,
        )
    return number


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


# What a JSON value is, for messages ("not an array"); any other is a number.
JSON_KINDS: dict[type, str] = {list: "an array", str: "a string", bool: "a boolean"}
JSON_KINDS[type(None)] = "null"


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
        kind = JSON_KINDS.get(type(value), "a number")
        raise UsageProblem(f'{name} must be a JSON object like {{"k": 1}}, not {kind}.', param=name)
    return value


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
        """Each id on stdin, read a line at a time in bounded memory: of a line too long for
        an id only its start is kept (longer than any id, so that the id checks refuse it)."""
        # Not at import: `config` needs none of the client.
        from convrisk.api_client.resources import MAX_ID_LENGTH

        # The bytes of the longest id's line: 4 bytes per character in UTF-8, and a CRLF.
        cap = 4 * MAX_ID_LENGTH + 2
        stream = sys.stdin.buffer
        while line := stream.readline(cap):
            text = line.decode("utf-8", "surrogateescape")
            if line.endswith(b"\n") or len(line) < cap:
                if text.strip():
                    yield text.strip()
                continue
            _skip_line(stream)
            # Over the cap in bytes is over it in characters (4 bytes at most each), spaces too.
            stripped = text.strip()
            yield stripped if len(stripped) > MAX_ID_LENGTH else text


_SKIP_CHUNK = 64 * 1024


def _skip_line(stream: BinaryIO) -> None:
    """Read past the rest of a line, a chunk at a time (a 200 MiB line is never held)."""
    while chunk := stream.readline(_SKIP_CHUNK):
        if chunk.endswith(b"\n"):
            return


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


def read_secret() -> str:
    """A value read from stdin (`config set token -`), without its line break."""
    text = sys.stdin.read().strip()
    if not text:
        raise UsageProblem("Nothing was read from stdin: pipe the value in.", param="VALUE")
    return text
