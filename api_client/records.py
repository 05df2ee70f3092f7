"""Records as the service sends them: plain dicts, typed with TypedDict (DESIGN 4.1).

A record is the service's JSON object, kept as it came: a missing field stays missing, an extra
one stays, a value of an unexpected type is not coerced. The types below say what the interface
documents; the local backend and `convrisk serve` give exactly that. From a remote service only
what the client relies on is checked at the edge (`check_record`, `check_page`): `id` a non-empty
string (to page and to print ids), `has_more` a boolean and `data` a list of objects (to page),
and no value nested deeper than `MAX_DETAILS_DEPTH` (to print it). Tables interpret values
tolerantly; JSON output prints the dict as it is.

pydantic's core checks a remote answer (DESIGN 4.1): `_edge()` builds two small
`pydantic_core` schema validators of what the client relies on (the same check as pydantic
models, without importing pydantic itself), built only when a remote
answer arrives, and used only to check: the object returned is the one the service sent, never
the validator's output. A local command builds no validator at all.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Mapping
from typing import Any, Generic, NamedTuple, NotRequired, Required, TypedDict, TypeVar

from convrisk.api_client.params import MAX_DETAILS_DEPTH, exceeds_depth, is_encodable


class Record(TypedDict, total=False):
    """What every record has for sure: its id (a non-empty string)."""

    id: Required[str]


class Deleted(TypedDict):
    """The answer to a delete: `{"id": ..., "deleted": true}`."""

    id: str
    deleted: bool


R = TypeVar("R", bound=Record)


class Page(TypedDict, Generic[R]):
    """One page of a list, as the service sends it: `{"has_more": bool, "data": [...]}`."""

    has_more: bool
    data: list[R]


class JsonPage(TypedDict):
    """One page of a list as JSON text: each record's compact JSON (see `json_text`) and its id.

    `data[i]` is byte for byte `json_text()` of the record the same `list` call would return,
    so a sink can write it as it is; `ids[i]` is that record's id (for the next cursor). A
    record holding a NaN or infinite float is its `finite_text`, and the page says
    `non_finite: True` (the printer notes it).
    """

    has_more: bool
    data: list[str]
    ids: list[str]
    non_finite: NotRequired[bool]


class IdPage(TypedDict):
    """One page of a list as its records' ids alone (`-o id` needs no more): `data[i]` is the
    id of the record the same `list` call would return at `i`."""

    has_more: bool
    data: list[str]


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


def _refuse_constant(name: str) -> object:
    raise NotANumber(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise NotANumber(f"{text} is too large a number to print")
    return value


# Built once: json.loads and json.dumps with options build a decoder or encoder on every call.
_STRICT_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite_float)
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
    return _STRICT_DECODER.decode(text)


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


class _NotAsPrinted(ValueError):
    """A number whose text is not the one `json_text` prints for its value."""


def _printed_float(text: str) -> float:
    value = _finite_float(text)
    if repr(value) != text:
        raise _NotAsPrinted(text)
    return value


# The json module's decoder (its C scanner where built), reading a value from a given position.
_PAGE_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder(
    parse_constant=_refuse_constant, parse_float=_printed_float
).raw_decode
# Characters that a compact JSON text printed by `json_text` has outside its strings only as
# these (whitespace), or that may spell a value in another way (escapes, `-0` for 0).
_NOT_PRINTED_AS_SENT = (" ", "\n", "\t", "\r", "\\", "-0")


def load_page(content: bytes) -> tuple[Any, list[str | None] | None]:
    """`read_json` of a list's body, and each item of its `data` as the text sent where that
    is the item's `json_text` (None where it may not be, or for all when the body is not read
    this way): a page from a service that writes compact JSON is not encoded again.

    An item's text is kept only when it holds no NaN, Infinity or number too large for a float;
    a body this reading does not take is read by read_json, with its errors.
    """
    text = content.decode(json.detect_encoding(content), "surrogatepass").strip(" \t\n\r")
    if text.startswith("{") and not any(mark in text for mark in _NOT_PRINTED_AS_SENT):
        try:
            read = _page_as_sent(text)
        except (ValueError, StopIteration, IndexError, RecursionError):
            read = None
        if read is not None:
            return read
    return read_json(content), None


def _page_as_sent(text: str) -> tuple[dict[str, Any], list[str | None] | None] | None:
    """A page object (no whitespace, no escapes) and its items' texts, read with the scanner
    of the json module; None if the text is not one object."""
    page: dict[str, Any] = {}
    texts: list[str | None] | None = None
    at = 1
    for _ in range(len(text)):  # one turn per member of the object
        if text[at] != '"':
            return None
        key, at = _PAGE_SCAN(text, at)
        if text[at] != ":":
            return None
        at += 1
        if key == "data":
            texts = None
            if text[at] == "[":
                page[key], texts, at = _items_as_sent(text, at + 1)
            else:
                page[key], at = _PAGE_SCAN(text, at)
        else:
            page[key], at = _PAGE_SCAN(text, at)
        if text[at] == "}":
            return (page, texts) if at + 1 == len(text) else None
        if text[at] != ",":
            return None
        at += 1
    return None


def _items_as_sent(text: str, at: int) -> tuple[list[Any], list[str | None], int]:
    """The items of an array starting at `at` (after its `[`), their texts, and where it ends.

    An item's text is kept when it is its `json_text`: an object with no object inside (a
    nested one could repeat a key, which reads as its last value only) and no repeated key."""
    items: list[Any] = []
    texts: list[str | None] = []
    if text[at] == "]":
        return items, texts, at + 1
    for _ in range(len(text)):  # one turn per item
        start = at
        item, at = _PAGE_SCAN(text, at)
        sent = text[start:at]
        same = isinstance(item, dict) and sent.count("{") == 1 and sent.count('":') == len(item)
        items.append(item)
        texts.append(sent if same else None)
        if text[at] == "]":
            return items, texts, at + 1
        if text[at] != ",":
            raise ValueError("not an array")
        at += 1
    raise ValueError("not an array")


# The page decoders of the quick reads: each float as printed (records reused as sent), or any
# finite float (ids only). Both refuse what `load_json` refuses.
_PRINTED_PAGE = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_printed_float)
# Spaces, escapes: a record's text that has any of them is not its `json_text`.
_NOT_COMPACT = (" ", "\n", "\t", "\r", "\\")


def quick_json_page(content: bytes) -> JsonPage | None:
    """`check_json_page(*load_page(content))` in a few passes of C over the whole page, for a
    page in convrisk's own form: compact UTF-8, records of scalars only (no nested object or
    array, no bracket in a string), no repeated key, numbers as Python prints them. None for
    any other page, or one that is broken: read it the long way, which says what is wrong.

    Such a page's records are its text between `[` and `]`, split at `},{` (no `{` is in a
    string), each byte for byte its `json_text`: nothing is encoded again, nothing walked.
    """
    text = _utf8_object(content)
    if text is None or any(mark in text for mark in _NOT_COMPACT) or _minus_zero(text):
        return None
    read = _checked_quickly(text, _PRINTED_PAGE)
    if read is None:
        return None
    page, items = read
    count = len(items)
    start, end = text.find("["), text.find("]")
    # Only the page's `[` and `]` (a search runs faster than a count), only its and the records'
    # `{`: records of scalars, and no bracket in a string.
    if text.find("[", start + 1) >= 0 or text.find("]", end + 1) >= 0:
        return None
    if text.count("{") != count + 1:
        return None
    keys = len(page) + sum(map(len, items))
    # Each key is a string and a colon; with no backslash every `"` ends or starts a string, so
    # fewer colons than keys cannot be, and as many means no key is repeated.
    if text.count(":") != keys and text.count('":') != keys:
        return None
    texts = text[start + 1 : end].replace("},{", "}\n{").split("\n") if count else []
    if len(texts) != count:
        return None
    return {"has_more": page["has_more"], "data": texts, "ids": [item["id"] for item in items]}


def quick_id_page(content: bytes) -> IdPage | None:
    """The ids `check_json_page(*load_page(content))` gives, read without a record's text: for
    a UTF-8 page whose records cannot nest too deep (it holds few brackets). None for any other
    page, or one that is broken: read it the long way, which says what is wrong."""
    text = _utf8_object(content.strip(b" \t\n\r"))
    read = None if text is None else _checked_quickly(text, _STRICT_DECODER)
    if text is None or read is None:
        return None
    page, items = read
    # A record holds its own `{`; the page its `{` and `[`: the rest may all be in one record.
    if text.count("{") + text.count("[") - 1 - len(items) > MAX_DETAILS_DEPTH:
        return None
    return {"has_more": page["has_more"], "data": [item["id"] for item in items]}


def _utf8_object(content: bytes) -> str | None:
    """A body that is one JSON object in UTF-8 without a BOM, as text; else None."""
    if content[:1] != b"{" or content[-1:] != b"}" or json.detect_encoding(content) != "utf-8":
        return None
    try:
        return content.decode()
    except UnicodeDecodeError:
        return None


def _minus_zero(text: str) -> bool:
    """Whether the text may hold the number -0 (printed as 0)."""
    return "-" in text and ("-0," in text or "-0}" in text or "-0]" in text)


def _checked_quickly(
    text: str, decoder: json.JSONDecoder
) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    """The page and its items, if `text` reads as a page that passes the edge check; else None."""
    from pydantic_core import ValidationError

    try:
        page = decoder.decode(text)
        _edge()[1].validate_python(page)
    except (ValueError, RecursionError, ValidationError):
        return None
    return page, page["data"]


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
def _edge() -> tuple[Any, Any]:
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


def _checked(validator: Any, data: object, where: str) -> None:
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


def _not_too_deep(record: dict[str, Any], where: str) -> None:
    for name, value in record.items():
        if isinstance(value, dict | list) and exceeds_depth(value, MAX_DETAILS_DEPTH):
            raise ShapeError(
                _join(where, str(name)), f"nests more than {MAX_DETAILS_DEPTH} levels deep"
            )


def check_record(data: object) -> dict[str, Any]:
    """`data` itself if it is a record the client can use; else ShapeError naming the field."""
    _checked(_edge()[0], data, "")
    assert isinstance(data, dict)
    _not_too_deep(data, "")
    return data


def check_page(data: object) -> dict[str, Any]:
    """`data` itself if it is a page the client can use (every item checked); else ShapeError."""
    _checked(_edge()[1], data, "")
    assert isinstance(data, dict)
    for index, item in enumerate(data["data"]):
        _not_too_deep(item, f"data.{index}")
    return data


def check_json_page(data: object, sent: list[str | None] | None = None) -> JsonPage:
    """`check_page` for a page printed as JSON text: each item as its `json_text`.

    The same check and errors as check_page, but an item whose text holds no more brackets
    than the depth limit is not walked for its depth: it cannot nest that deep. `sent` are the
    items' texts as sent, where they are their `json_text` (`load_page`): not encoded again.
    """
    _checked(_edge()[1], data, "")
    assert isinstance(data, dict)
    items = data["data"]
    texts: list[str] = []
    non_finite = False
    for index, item in enumerate(items):
        text = sent[index] if sent is not None else None
        if text is None:
            try:
                text, named = finite_text(item)
            except RecursionError:  # nested far deeper than the limit
                text, named = "[" * (MAX_DETAILS_DEPTH + 1), False
            non_finite = non_finite or named
        if text.count("{") + text.count("[") > MAX_DETAILS_DEPTH:
            _not_too_deep(item, f"data.{index}")
        texts.append(text)
    page: JsonPage = {
        "has_more": data["has_more"],
        "data": texts,
        "ids": [item["id"] for item in items],
    }
    if non_finite:
        page["non_finite"] = True
    return page


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
