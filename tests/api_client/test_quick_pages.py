"""A page read the quick way (convrisk's own compact form, read in a few passes over the page):
the same records' texts, ids and has_more as the long way, or no answer at all, whatever the
service sends; and convrisk's own pages (serve's) are read the quick way."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from convrisk.api_client.page import (
    Page,
    check_json_page,
    load_page,
    quick_id_page,
    quick_json_page,
)

from .conftest import conversation, risk_profile
from .test_json_pages import BODIES
from .test_page_text import ODD

# Pieces of a record, as services spell them: each may or may not be convrisk's own form.
VALUES = [
    "1",
    "-1",
    "-0",
    "0",
    "1.5",
    "1.50",
    "-0.0",
    "1e5",
    "1E+2",
    "0.1",
    "123456789012345678901234567890",
    "true",
    "false",
    "null",
    "NaN",
    "Infinity",
    "1e999",
    '"a"',
    '""',
    '"café 😀"',
    '"\x7f\u2028"',
    '"a:b"',
    '":"',
    '"},{"',
    '"]"',
    '"["',
    '"{"',
    '"-0,"',
    '"a\\"b"',
    '"\\u00e9"',
    '"a b"',
    "[1]",
    "[]",
    '{"k":1}',
    "{}",
    '{"k":1,"k":2}',
]
KEYS = ["id", "a", "b", "a", ":", "x y", "é"]


def _record(rng: random.Random) -> str:
    id = rng.choice(['"conv_1"', '"conv_2"', '""', "1", '"a,b"'])
    fields = [f'"id":{id}'] if rng.random() < 0.95 else []
    for _ in range(rng.randrange(4)):
        fields.append(f'"{rng.choice(KEYS)}":{rng.choice(VALUES)}')
    rng.shuffle(fields)
    return "{" + ",".join(fields) + "}"


def _page(rng: random.Random) -> bytes:
    records = [_record(rng) for _ in range(rng.randrange(4))]
    members = [f'"has_more":{rng.choice(["true", "false", "0"])}', f'"data":[{",".join(records)}]']
    if rng.random() < 0.2:
        members.append(f'"url":{rng.choice(VALUES)}')
    rng.shuffle(members)
    return ("{" + ",".join(members) + "}").encode()


def _texts(page: Page[Any]) -> dict[str, Any]:
    """A page's JSON text view: has_more, each record's text, the ids, whether one is named."""
    return {
        "has_more": page.has_more,
        "data": page.json_texts,
        "ids": page.ids,
        "non_finite": page.non_finite,
    }


def _ids(page: Page[Any] | None) -> dict[str, Any] | None:
    """A page's id view: has_more and the ids (None for no page)."""
    return None if page is None else {"has_more": page.has_more, "data": page.ids}


def _quick(body: bytes) -> dict[str, Any] | None:
    """The quick way's JSON text view of a page, or None where it gives no page."""
    page = quick_json_page(body)
    return None if page is None else _texts(page)


def _long_way(body: bytes) -> dict[str, Any] | None:
    """What the long way gives: its page, or None where it refuses the page."""
    try:
        data, texts = load_page(body)
        return _texts(check_json_page(data, texts))
    except (ValueError, RecursionError):
        return None


PAGES = [
    *ODD,
    *(body.encode() for body in BODIES.values()),
    *(_page(random.Random(seed)) for seed in range(3000)),
]


@pytest.mark.parametrize("body", PAGES)
def test_a_page_read_the_quick_way_is_the_page_read_the_long_way(body: bytes) -> None:
    long_way = _long_way(body)
    quick = _quick(body)
    if quick is not None:
        assert long_way == quick
    ids = _ids(quick_id_page(body))
    if ids is not None:
        assert long_way is not None
        assert ids == {"has_more": long_way["has_more"], "data": long_way["ids"]}


def test_random_pages_take_both_ways() -> None:
    # The comparison above means something only if both outcomes happen often.
    quick = [quick_json_page(body) is not None for body in PAGES]
    assert 100 < sum(quick) < len(PAGES) - 100


def _compact(records: list[dict[str, object]], has_more: bool = True) -> bytes:
    body = {"has_more": has_more, "data": records}
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


def test_convrisks_own_page_of_conversations_is_read_the_quick_way() -> None:
    records = [conversation(f"conv_{n}", contact_id="ct_é", score=0.25) for n in range(100)]
    body = _compact(records)
    page = _quick(body)
    assert page is not None
    assert page["data"][0] == json.dumps(records[0], separators=(",", ":"), ensure_ascii=False)
    assert page == _long_way(body)
    assert _ids(quick_id_page(body)) == {
        "has_more": True,
        "data": [f"conv_{n}" for n in range(100)],
    }


def test_an_empty_page_is_read_the_quick_way() -> None:
    assert _quick(b'{"has_more":false,"data":[]}') == {
        "has_more": False,
        "data": [],
        "ids": [],
        "non_finite": False,
    }


def test_nested_records_give_their_ids_the_quick_way_and_their_text_the_long_way() -> None:
    body = _compact([risk_profile(f"rp_{n}") for n in range(3)], has_more=False)
    assert quick_json_page(body) is None
    assert _ids(quick_id_page(body)) == {"has_more": False, "data": ["rp_0", "rp_1", "rp_2"]}


def test_a_page_with_many_nested_records_gives_its_ids_the_long_way() -> None:
    # Too many brackets to be sure that no record nests too deep without walking it.
    body = _compact([risk_profile(f"rp_{n}") for n in range(100)], has_more=False)
    assert quick_id_page(body) is None
    assert _long_way(body) is not None
