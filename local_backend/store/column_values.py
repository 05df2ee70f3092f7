"""How values become SQLite column values and back: the types a column keeps as given, its
declared default, the input checks the database needs beyond api_client.params, and the checks
of a row read back."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

from convrisk.api_client.errors import InvalidRequestError
from convrisk.api_client.params import MAX_DETAILS_DEPTH, check_text, exceeds_depth
from convrisk.api_client.records import load_json

INT64 = (-(2**63), 2**63 - 1)
_INPUT_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


# -- how SQLite stores a value -------------------------------------------------------------------

# A column default that is no plain literal: the value stored is not known without reading it.
UNKNOWN = object()


def affinity_of(declared: str) -> str:
    """A column's type affinity from its declared type, by SQLite's rules (datatype3.html, 3.1)."""
    upper = (declared or "").upper()
    if "INT" in upper:
        return "INTEGER"
    if any(word in upper for word in ("CHAR", "CLOB", "TEXT")):
        return "TEXT"
    if not upper or "BLOB" in upper:
        return "BLOB"
    if any(word in upper for word in ("REAL", "FLOA", "DOUB")):
        return "REAL"
    return "NUMERIC"


def literal(default: str | None, affinity: str) -> object:
    """The value a column's declared default (as PRAGMA table_info gives it) stores: NULL, or an
    integer in a column that keeps one as it is; `UNKNOWN` for anything else (text, a real, an
    expression, an integer that SQLite turns into text or a real)."""
    if default is None or default.upper() == "NULL":
        return None
    text = default.strip("()")
    digits = text.removeprefix("-")
    # ASCII only: str.isdigit takes other scripts' digits ("²"), which SQLite reads as a name.
    if not (digits.isascii() and digits.isdigit()) or int not in KEPT.get(affinity, ()):
        return UNKNOWN
    value = int(text)
    low, high = INT64
    return value if low <= value <= high else UNKNOWN  # a larger one is stored as a real


# By affinity: the types of value a column stores as they are, so that reading it back gives
# the same value (TEXT turns a number into text, INTEGER a whole float into an integer...).
KEPT: dict[str, frozenset[type]] = {
    "TEXT": frozenset({str, type(None)}),
    "INTEGER": frozenset({int, type(None)}),
    "NUMERIC": frozenset({int, type(None)}),
    "REAL": frozenset({float, type(None)}),
    "BLOB": frozenset({str, int, float, type(None)}),
}


# -- input checks the database needs beyond api_client.params ----------------------------------


def check_storable_number(value: object, param: str) -> None:
    """Refuse an integer that does not fit SQLite's 64 bits (it could not be stored exactly)."""
    if isinstance(value, int) and not isinstance(value, bool):
        low, high = INT64
        if not low <= value <= high:
            raise InvalidRequestError(
                f"{param} is too large: integers must lie between {low} and {high}.", param=param
            )
    elif isinstance(value, float) and not math.isfinite(value):
        raise InvalidRequestError(f"{param} must be a finite number.", param=param)


def json_text(value: object, param: str) -> str:
    """The JSON text of a value taken from the caller, or InvalidRequestError naming `param`."""
    try:
        text = _INPUT_ENCODER.encode(value)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidRequestError(f"{param} must be valid JSON: {exc}.", param=param) from exc
    check_text(text, param)
    return text


# -- reading rows back ---------------------------------------------------------------------------


def check_readable(values: Iterable[object]) -> None:
    """Refuse column values that no JSON can carry (ValueError): a BLOB, a non-finite number.

    Only a file written by hand holds them; convrisk refuses them on the way in.
    """
    for value in values:
        if isinstance(value, bytes):
            raise ValueError("a column holds bytes (a BLOB), which JSON cannot carry")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"a column holds {value}, which is not a JSON number")


def load_json_object(text: str, param: str) -> dict[str, Any]:
    """The object in a JSON text column, at most MAX_DETAILS_DEPTH levels deep (else ValueError).

    Strict JSON: NaN, Infinity and numbers too large for a float are refused, as no JSON output
    could carry them.
    """
    value = load_json(text)
    if not isinstance(value, dict):
        raise ValueError(f"{param} is not a JSON object")
    if exceeds_depth(value, MAX_DETAILS_DEPTH):
        raise ValueError(f"{param} nests more than {MAX_DETAILS_DEPTH} levels deep")
    return value
