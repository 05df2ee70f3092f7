"""Cell formatting: a value as the text of a table, TSV or CSV cell, safe on a terminal, and its
width in screen cells; cutting and folding by screen cells.

Every line a person reads goes through `shown()` (api_client.text.printable) so that no control
character from data reaches the terminal (DESIGN 4.2); JSON goes through `printable_json()`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Literal

CellKind = Literal["text", "bool", "time", "json", "number"]

# A timestamp above this is taken to be in milliseconds (10**11 seconds is the year 5138).
MILLISECONDS_ABOVE = 10**11
# A time as tables, TSV and CSV show it: UTC, said with `Z` (RFC 3339, which allows the space;
# `--archived-at` and Python's fromisoformat read it back).
DATE_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}Z")
DATE_WIDTH = len("2024-05-01")


def format_timestamp(value: object) -> str:
    """`YYYY-MM-DD HH:MM:SSZ` (UTC) from Unix seconds or milliseconds; other values as text."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "" if value is None else str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return finite_name(value)
    seconds = value / 1000 if abs(value) > MILLISECONDS_ABOVE else value
    try:
        return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%SZ")
    except (OverflowError, OSError, ValueError):
        return str(value)


def format_cell(value: object, kind: CellKind) -> str:
    """A value as text for tables, TSV and CSV."""
    if value is None:
        return ""
    if kind == "time":
        return format_timestamp(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list) or kind == "json":
        return finite_json(value, separators=(",", ":"))
    if isinstance(value, float) and not math.isfinite(value):
        return finite_name(value)
    return str(value)


def finite_name(value: float) -> str:
    """A NaN or infinite float (from a service or a journal) as the text JSON output gives it,
    "NaN", "Infinity" or "-Infinity"; whoever `tell_non_finite` named is told."""
    if _told is not None:
        _told()
    return "NaN" if value != value else "Infinity" if value > 0 else "-Infinity"


def date_only(cell: str) -> str:
    """A `YYYY-MM-DD HH:MM:SSZ` cell as its date; any other cell as it is."""
    return cell[:DATE_WIDTH] if DATE_TIME.fullmatch(cell) else cell


def shown(text: str, *, escape_backslash: bool = False, keep_newlines: bool = False) -> str:
    """`text` safe for a terminal: one line (api_client.text.safe_line), or with
    `keep_newlines` several (safe_lines); `escape_backslash` as printable()'s."""
    # Plain ASCII has nothing to escape: the common case costs no call, and `config` and `--help`
    # import nothing of api_client.
    if text.isascii() and text.isprintable() and not (escape_backslash and "\\" in text):
        return text
    from convrisk.api_client import text as safe

    if escape_backslash:
        return safe.printable(text, escape_backslash=True, keep_newlines=keep_newlines)
    return safe.safe_lines(text) if keep_newlines else safe.safe_line(text)


def shown_keeping_layout(text: str) -> str:
    """`text` for a terminal: control characters escaped, except newlines and tabs."""
    if text.isascii() and text.isprintable():
        return text
    return "\t".join(shown(part, keep_newlines=True) for part in text.split("\t"))


def json_text(value: object, **options: Any) -> str:
    """JSON text of a value as the service sent it, safe on a terminal and encodable as UTF-8."""
    try:
        return printable_json(_encoder(options).encode(value))
    except ValueError:
        return printable_json(finite_json(value, **options))


# Told when `finite_json` printed a non-finite number as a string (the printer: one note on
# stderr); set by each Printer.
_told: Callable[[], None] | None = None


def tell_non_finite(tell: Callable[[], None] | None) -> None:
    """Who is told when a number JSON cannot hold is printed as a string (cli/output/printer.py)."""
    global _told
    _told = tell


# The encoders of the options used, built once each: json.dumps with options builds one a call.
_ENCODERS: dict[tuple[tuple[str, Any], ...], json.JSONEncoder] = {}


def _encoder(options: dict[str, Any]) -> json.JSONEncoder:
    """The encoder of `json.dumps(..., ensure_ascii=False, allow_nan=False, **options)`."""
    key = tuple(sorted(options.items()))
    encoder = _ENCODERS.get(key)
    if encoder is None:
        encoder = _ENCODERS[key] = json.JSONEncoder(ensure_ascii=False, allow_nan=False, **options)
    return encoder


def finite_json(value: object, **options: Any) -> str:
    """`json.dumps(value, ensure_ascii=False, **options)`, always valid JSON (RFC 8259): a
    float that is NaN or infinite (`1e400` read from a journal) is written as the string
    "NaN", "Infinity" or "-Infinity", and whoever `tell_non_finite` named is told."""
    encoder = _encoder(options)
    try:
        # allow_nan=False costs nothing: the encoder checks each float as it writes it.
        return encoder.encode(value)
    except ValueError:
        from convrisk.api_client.records import with_finite_names

        named, found = with_finite_names(value)
        text = encoder.encode(named)
        if found and _told is not None:
            _told()
        return text


def printable_json(text: str) -> str:
    """JSON text (from `json.dumps(..., ensure_ascii=False)`) safe on a terminal: printable_json."""
    from convrisk.api_client.text import printable_json as safe

    return safe(text)


# A spreadsheet runs a cell starting with one of these as a formula (OWASP, CSV injection).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"


def csv_cell(text: str) -> str:
    """A CSV cell: controls escaped, and a would-be formula prefixed with `'` (not a number)."""
    text = shown(text)
    if text.startswith(_FORMULA_START) and re.fullmatch(_PLAIN_NUMBER, text) is None:
        return "'" + text
    return text


def tsv_line(cells: list[str]) -> str:
    """Fields joined by tabs, each printable(..., escape_backslash=True), and a newline."""
    whole = "".join(cells)
    # One check for the whole row: most rows are plain ASCII with nothing to escape.
    if not (whole.isascii() and whole.isprintable() and "\\" not in whole):
        from convrisk.api_client.text import printable

        if printable(whole, escape_backslash=True) != whole:  # something to escape
            cells = [printable(cell, escape_backslash=True) for cell in cells]
    return "\t".join(cells) + "\n"


def _char_width(char: str) -> int:
    import unicodedata

    if unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def cell_width(text: str) -> int:
    """How many terminal cells `text` (already printable) takes: wide characters take two."""
    if text.isascii():
        return len(text)
    return sum(_char_width(char) for char in text)


def cut(text: str, width: int) -> str:
    """`text` in at most `width` cells: cut with `…` when it is wider."""
    if cell_width(text) <= width:
        return text
    kept: list[str] = []
    used = 0
    for char in text:
        size = _char_width(char)
        if used + size > width - 1:
            break
        kept.append(char)
        used += size
    return "".join(kept) + "…"


def pad(text: str, width: int) -> str:
    """`text` followed by spaces up to `width` cells."""
    return text + " " * max(0, width - cell_width(text))


def fold(text: str, width: int) -> list[str]:
    """`text` as lines of at most `width` cells (a long value folded, nothing lost)."""
    if cell_width(text) <= width:
        return [text]
    lines: list[str] = []
    line: list[str] = []
    used = 0
    for char in text:
        size = _char_width(char)
        if used + size > width and line:
            lines.append("".join(line))
            line, used = [], 0
        line.append(char)
        used += size
    lines.append("".join(line))
    return lines
