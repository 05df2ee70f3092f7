"""Records as the service sends them: plain dicts, typed with TypedDict (DESIGN 4.1).

A record is the service's JSON object, kept as it came: a missing field stays missing, an extra
one stays, a value of an unexpected type is not coerced. The types below say what the interface
documents; the local backend and `convrisk serve` give exactly that. From a remote service only
what the client relies on is checked at the edge (`check_record`, `check_page`): `id` a non-empty
string (to page and to print ids), `has_more` a boolean and `data` a list of objects (to page),
and no value nested deeper than `MAX_DETAILS_DEPTH` (to print it). Tables interpret values
tolerantly; JSON output prints the dict as it is.

pydantic's core checks a remote answer (DESIGN 4.1): `edge_validators()` builds two small
`pydantic_core` schema validators of what the client relies on (the same check as pydantic
models, without importing pydantic itself), built only when a remote
answer arrives, and used only to check: the object returned is the one the service sent, never
the validator's output. A local command builds no validator at all.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping
from typing import Any, Generic, NamedTuple, Required, TypedDict, TypeVar

from convrisk.api_client.params import MAX_DETAILS_DEPTH, exceeds_depth, is_encodable


class Record(TypedDict, total=False):
    """What every record has for sure: its id (a non-empty string)."""

    id: Required[str]


class Deleted(TypedDict):
    """The answer to a delete: `{"id": ..., "deleted": true}`."""

    id: str
    deleted: bool


R = TypeVar("R", bound=Record)


# The header on an answer replayed for a repeated Idempotency-Key (Stripe's name); value `true`.
REPLAYED_HEADER = "Idempotent-Replayed"


class Created(NamedTuple, Generic[R]):
    """One create's answer and whether the service replayed it: `replayed` is True when it
    answered an earlier identical request (same Idempotency-Key) and wrote nothing new."""

    record: R
    replayed: bool
    # The record's `json_text`, when the backend encoded it already (a new local object): who
    # writes the record as JSON (the journal) takes it as it is instead of encoding it again.
    text: str | None = None


class Change(NamedTuple, Generic[R]):
    """An update's record before it (the state the write was computed from; None when a
    remote service could not be asked for it) and after it."""

    before: R | None
    after: R


class Removal(NamedTuple, Generic[R]):
    """A delete's record as it was just before (None as for Change), and the answer."""

    before: R | None
    answer: Deleted


def differs(current: Mapping[str, Any], expected: Mapping[str, Any]) -> list[str]:
    """The names of `expected` whose values `current` does not hold (a field missing from a
    record is null)."""
    return [name for name, value in expected.items() if current.get(name) != value]


class NotANumber(ValueError):
    """JSON text holds NaN, Infinity or a number too large for a float: no JSON number can."""


def refuse_constant(name: str) -> object:
    raise NotANumber(f"{name} is not a JSON number")


def finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise NotANumber(f"{text} is too large a number to print")
    return value


# Built once: json.loads and json.dumps with options build a decoder or encoder on every call.
STRICT_DECODER = json.JSONDecoder(parse_constant=refuse_constant, parse_float=finite_float)
# Python's own reading: NaN, Infinity and -Infinity as floats, 1e400 as inf.
_ANY_NUMBER_DECODER = json.JSONDecoder()
# allow_nan=False: a text it makes is always JSON (RFC 8259); a non-finite float raises.
_COMPACT_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def load_json(text: str | bytes) -> Any:
    """Parse JSON text strictly: NaN and Infinity (which Python's parser accepts) and numbers
    that overflow a float raise NotANumber, so every value read can be printed as JSON again."""
    # As json.loads reads its argument, with a decoder built once.
    if not isinstance(text, str):
        text = text.decode(json.detect_encoding(text), "surrogatepass")
    elif text.startswith("\ufeff"):
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    return STRICT_DECODER.decode(text)


def read_json(text: str | bytes) -> Any:
    """`load_json` for a remote answer: NaN, Infinity, -Infinity and numbers too large for a
    float are read as the floats nan and inf (printed as the strings "NaN", "Infinity" and
    "-Infinity": `finite_text`, cli/cells.finite_json), not refused."""
    if not isinstance(text, str):
        text = text.decode(json.detect_encoding(text), "surrogatepass")
    elif text.startswith("\ufeff"):
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    return _ANY_NUMBER_DECODER.decode(text)


def non_finite_name(value: float) -> str:
    """The string a non-finite float is printed as in JSON: "NaN", "Infinity", "-Infinity"."""
    return "NaN" if value != value else "Infinity" if value > 0 else "-Infinity"


def with_finite_names(value: object) -> tuple[object, bool]:
    """`value` (JSON data) with each NaN or infinite float replaced by its name as a string
    (`non_finite_name`), and whether there was any: JSON text of it is always RFC 8259."""
    found: list[bool] = []

    def walk(item: object) -> object:
        if isinstance(item, float):
            if math.isfinite(item):
                return item
            found.append(True)
            return non_finite_name(item)
        if isinstance(item, dict):
            return {key: walk(inner) for key, inner in item.items()}
        if isinstance(item, list | tuple):
            return [walk(inner) for inner in item]
        return item

    return walk(value), bool(found)


def json_text(record: Mapping[str, Any]) -> str:
    """A record's compact JSON text, non-ASCII kept: what `-o jsonl` prints before escaping.
    A record holding a NaN or infinite float raises ValueError (see `finite_text`)."""
    return _COMPACT_ENCODER.encode(record)


def finite_text(record: Mapping[str, Any]) -> tuple[str, bool]:
    """`json_text`, a NaN or infinite float written as its name in a string
    (`with_finite_names`), and whether the record held one."""
    try:
        return _COMPACT_ENCODER.encode(record), False
    except ValueError:
        named, found = with_finite_names(record)
        return _COMPACT_ENCODER.encode(named), found


class ShapeError(ValueError):
    """A remote answer does not have the shape the client relies on; says where and what."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where}: {problem}")
        self.where = where
        self.problem = problem


@functools.cache
def edge_validators() -> tuple[Any, Any]:
    """The validators of a record and a page, as far as the client relies on them."""
    from pydantic_core import SchemaValidator
    from pydantic_core import core_schema as cs

    # A record: an id that is a non-empty string (other fields are not the client's).
    record = cs.typed_dict_schema(
        {"id": cs.typed_dict_field(cs.str_schema(strict=True, min_length=1))},
        extra_behavior="ignore",
    )
    # A page: has_more true or false, data an array of records.
    page = cs.typed_dict_schema(
        {
            "has_more": cs.typed_dict_field(cs.bool_schema(strict=True)),
            "data": cs.typed_dict_field(cs.list_schema(record, strict=True)),
        },
        extra_behavior="ignore",
    )
    return SchemaValidator(record), SchemaValidator(page)


# What each field the client relies on must be, for messages.
_WANTED = {"id": "a non-empty string", "has_more": "true or false", "data": "an array"}


def check_shape(validator: Any, data: object, where: str) -> None:
    """Validate `data` with a pydantic_core validator; the first problem as a ShapeError."""
    from pydantic_core import ValidationError

    if not isinstance(data, dict):
        raise ShapeError(where or "the body", f"a JSON object was expected, not {_kind(data)}")
    try:
        validator.validate_python(data)
    except ValidationError as exc:
        loc = [str(part) for part in exc.errors(include_url=False)[0]["loc"]]
        parent: object = data
        for part in loc[:-1]:
            parent = parent[int(part)] if isinstance(parent, list) else parent[part]  # type: ignore[index]
        name = loc[-1]
        at = _join(where, ".".join(loc))
        if isinstance(parent, list):  # an item of `data` that is not an object
            item = parent[int(name)]
            raise ShapeError(at, f"a JSON object was expected, not {_kind(item)}") from None
        assert isinstance(parent, dict)
        raise ShapeError(at, _wrong(parent, name, _WANTED.get(name, "valid"))) from None


def check_depth(record: dict[str, Any], where: str) -> None:
    for name, value in record.items():
        if isinstance(value, dict | list) and exceeds_depth(value, MAX_DETAILS_DEPTH):
            raise ShapeError(
                _join(where, str(name)), f"nests more than {MAX_DETAILS_DEPTH} levels deep"
            )


def check_record(data: object) -> dict[str, Any]:
    """`data` itself if it is a record the client can use; else ShapeError naming the field."""
    check_shape(edge_validators()[0], data, "")
    assert isinstance(data, dict)
    check_depth(data, "")
    return data


def check_page(data: object) -> dict[str, Any]:
    """`data` itself if it is a page the client can use (every item checked); else ShapeError."""
    check_shape(edge_validators()[1], data, "")
    assert isinstance(data, dict)
    for index, item in enumerate(data["data"]):
        check_depth(item, f"data.{index}")
    return data


def _wrong(data: dict[str, Any], name: str, wanted: str) -> str:
    """What is wrong with field `name` of `data`: missing, or of the wrong kind."""
    if name not in data:
        return "missing"
    value = data[name]
    if isinstance(value, str) and value and not is_encodable(value):
        # pydantic_core refuses a string it cannot read as Unicode (a lone surrogate).
        return f"must be {wanted}, not a string that is not valid Unicode (a lone surrogate)"
    shown = "an empty string" if value == "" else _kind(value)
    return f"must be {wanted}, not {shown}"


def _join(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def _kind(value: object) -> str:
    """A JSON value's kind, for messages: a string, a number, an array..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
