"""One page of a list (DESIGN 6.2): its records, their JSON texts and their ids are views of
what was read, each made when it is first asked for, and the readers that make a page from a
service's answer.

A list is read for the view its caller wants (`View`): records to draw a table, JSON text to
write JSON lines (no record parsed or encoded again), ids for `-o id` (no record built). A
view not read is made from one that was (texts and ids from records), or read again from what
the page was made of (the answer's body, the local query) by the `more` it was given. The quick
readers (`quick_json_page`, `quick_id_page`, `load_page`) keep their contract: they give the
page the long way (`check_json_page`) gives, or None (tests/api_client/test_quick_pages.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Generic, Literal, TypeVar

from convrisk.api_client.params import MAX_DETAILS_DEPTH
from convrisk.api_client.records import (
    STRICT_DECODER,
    Record,
    check_depth,
    check_shape,
    edge_validators,
    finite_float,
    finite_text,
    load_json,
    read_json,
    refuse_constant,
)

R = TypeVar("R", bound=Record)

# What a caller reads of a page: its records, their JSON texts (with their ids), or the ids.
View = Literal["records", "json", "ids"]


class Page(Generic[R]):
    """One page of a list, newest first: `has_more`, and the views `records`, `json_texts`
    (each record's `records.json_text`, a non-finite float named: `non_finite`) and `ids`.

    Indexed as the service's JSON, `page["data"]` are the records and `page["has_more"]` the
    flag; `as_dict()` is the page as the service sent it, and a page equals that dict.
    """

    __slots__ = (
        "_edits",
        "_ids",
        "_more",
        "_non_finite",
        "_records",
        "_sent",
        "_texts",
        "has_more",
    )

    def __init__(
        self,
        has_more: bool,
        *,
        records: list[R] | None = None,
        texts: list[str] | None = None,
        ids: list[str] | None = None,
        non_finite: bool = False,
        more: Callable[[View], Page[R]] | None = None,
        sent: Mapping[str, Any] | None = None,
    ) -> None:
        if records is None and ids is None:
            raise ValueError("a page is made of its records or its ids")
        if texts is not None and ids is None:
            raise ValueError("a page of JSON texts holds their ids too")
        self.has_more = has_more
        self._records = records
        self._texts = texts
        self._ids = ids
        self._non_finite = non_finite
        # Reads a view this page was not made with, from what it was made of (None: derive).
        self._more = more
        # The cuts and reversals made since (a view read later is edited alike).
        self._edits: list[int | None] = []
        # The page object as the service sent it, with any member besides these two.
        self._sent = sent

    @property
    def records(self) -> list[R]:
        """The records, as dicts (api_client.records)."""
        if self._records is None:
            if self._more is not None:
                self._records = self._edited(self._more("records").records)
            else:
                assert self._texts is not None, "a page of ids alone cannot give its records"
                self._records = [load_json(text) for text in self._texts]
        return self._records

    @property
    def json_texts(self) -> list[str]:
        """Each record's compact JSON text (`records.json_text`; a NaN or infinite float as its
        name in a string, and `non_finite` then true)."""
        if self._texts is None:
            if self._records is None and self._more is not None:
                page = self._more("json")
                self._texts = self._edited(page.json_texts)
                self._non_finite = page.non_finite
            else:
                made = [finite_text(record) for record in self.records]
                self._texts = [text for text, _ in made]
                self._non_finite = any(named for _, named in made)
        return self._texts

    @property
    def non_finite(self) -> bool:
        """Whether a record's JSON text names a NaN or infinite float (the printer notes it)."""
        self.json_texts  # noqa: B018 (made with the texts)
        return self._non_finite

    @property
    def ids(self) -> list[str]:
        """The records' ids, in the page's order."""
        if self._ids is None:
            self._ids = [record["id"] for record in self.records]
        return self._ids

    @property
    def cursor(self) -> str | None:
        """The last record's id (where the next page starts), None for an empty page."""
        if self._ids is None:  # not every id made for the last one
            records = self.records
            return records[-1]["id"] if records else None
        return self._ids[-1] if self._ids else None

    def __len__(self) -> int:
        """How many records the page holds."""
        if self._ids is not None:
            return len(self._ids)
        return len(self.records)

    def cut(self, size: int) -> None:
        """Keep the first `size` records only (more exist, then)."""
        self._edits.append(size)
        if self._records is not None:
            self._records = self._records[:size]
        if self._texts is not None:
            self._texts = self._texts[:size]
        if self._ids is not None:
            self._ids = self._ids[:size]
        self.has_more = True

    def reverse(self) -> None:
        """Turn the page's order round (a backward walk yields oldest first)."""
        self._edits.append(None)
        for view in (self._records, self._texts, self._ids):
            if view is not None:
                view.reverse()

    def _edited(self, view: list[Any]) -> list[Any]:
        """A view read afterwards, cut and turned as this page was."""
        view = list(view)
        for edit in self._edits:
            if edit is None:
                view.reverse()
            else:
                del view[edit:]
        return view

    # -- the page as the service sends it ---------------------------------------------------------

    def as_dict(self) -> dict[str, Any]:
        """The page as the service sends it: `{"has_more": ..., "data": [records]}`, with the
        other members it sent, in its order."""
        if self._sent is None:
            return {"has_more": self.has_more, "data": self.records}
        mine = {"has_more": self.has_more, "data": self.records}
        return {key: mine.get(key, value) for key, value in self._sent.items()}

    def __getitem__(self, key: Literal["data", "has_more"]) -> Any:
        """`page["data"]` (the records) and `page["has_more"]`, as in the service's JSON."""
        if key == "data":
            return self.records
        if key == "has_more":
            return self.has_more
        raise KeyError(key)

    def __eq__(self, other: object) -> bool:
        """Pages, or a page and a dict of the service's form, are equal when their `as_dict()`
        are: the same records, `has_more` and other members."""
        if isinstance(other, Page):
            return self.as_dict() == other.as_dict()
        if isinstance(other, Mapping):
            return self.as_dict() == dict(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        """What the page holds so far (no view is read for it)."""
        held = {
            name: view
            for name, view in (
                ("records", self._records),
                ("texts", self._texts),
                ("ids", self._ids),
            )
            if view is not None
        }
        return (
            f"Page(has_more={self.has_more!r}, {', '.join(f'{k}={v!r}' for k, v in held.items())})"
        )


class _NotAsPrinted(ValueError):
    """A number whose text is not the one `json_text` prints for its value."""


def _printed_float(text: str) -> float:
    value = finite_float(text)
    if repr(value) != text:
        raise _NotAsPrinted(text)
    return value


# The json module's decoder (its C scanner where built), reading a value from a given position.
_PAGE_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder(
    parse_constant=refuse_constant, parse_float=_printed_float
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
_PRINTED_PAGE = json.JSONDecoder(parse_constant=refuse_constant, parse_float=_printed_float)
# Spaces, escapes: a record's text that has any of them is not its `json_text`.
_NOT_COMPACT = (" ", "\n", "\t", "\r", "\\")


def quick_json_page(
    content: bytes, more: Callable[[View], Page[Any]] | None = None
) -> Page[Any] | None:
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
    ids = [item["id"] for item in items]
    return Page(page["has_more"], texts=texts, ids=ids, more=more, sent=page)


def quick_id_page(
    content: bytes, more: Callable[[View], Page[Any]] | None = None
) -> Page[Any] | None:
    """The ids `check_json_page(*load_page(content))` gives, read without a record's text: for
    a UTF-8 page whose records cannot nest too deep (it holds few brackets). None for any other
    page, or one that is broken: read it the long way, which says what is wrong."""
    text = _utf8_object(content.strip(b" \t\n\r"))
    read = None if text is None else _checked_quickly(text, STRICT_DECODER)
    if text is None or read is None:
        return None
    page, items = read
    # A record holds its own `{`; the page its `{` and `[`: the rest may all be in one record.
    if text.count("{") + text.count("[") - 1 - len(items) > MAX_DETAILS_DEPTH:
        return None
    return Page(page["has_more"], ids=[item["id"] for item in items], more=more, sent=page)


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
        edge_validators()[1].validate_python(page)
    except (ValueError, RecursionError, ValidationError):
        return None
    return page, page["data"]


def check_json_page(
    data: object,
    sent: list[str | None] | None = None,
    more: Callable[[View], Page[Any]] | None = None,
) -> Page[Any]:
    """`check_page` for a page printed as JSON text: each item as its `json_text`.

    The same check and errors as check_page, but an item whose text holds no more brackets
    than the depth limit is not walked for its depth: it cannot nest that deep. `sent` are the
    items' texts as sent, where they are their `json_text` (`load_page`): not encoded again.
    """
    check_shape(edge_validators()[1], data, "")
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
            check_depth(item, f"data.{index}")
        texts.append(text)
    ids = [item["id"] for item in items]
    return Page(data["has_more"], texts=texts, ids=ids, non_finite=non_finite, more=more, sent=data)
