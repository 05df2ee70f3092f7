"""A remote page printed as JSON text: the records as sent when the service writes them as
convrisk prints them, and exactly what convrisk prints otherwise (the same bytes either way)."""

from __future__ import annotations

import json
import math

import pytest

from convrisk.api_client.page import check_json_page, load_page
from convrisk.api_client.records import json_text, load_json, read_json

from .conftest import conversation, risk_profile

ODD = [
    b'{"has_more":false,"data":[{"id":"a","x":1.50}]}',  # a number spelt otherwise
    b'{"has_more":false,"data":[{"id":"a","x":1e5,"y":-0}]}',
    b'{"has_more":false,"data":[{"id":"a","x":1,"x":2}]}',  # a repeated key: the last counts
    b'{"has_more":false,"data":[{"id":"a","d":{"k":1,"k":2}}]}',
    b'{"has_more":false,"data":[{"id":"a","x":[1,{"k":1,"k":3}]}]}',
    b'{"has_more":false,"data":[{"id":"\\u00e9\\/"}]}',  # escapes convrisk does not print
    b'{"has_more":false, "data":[ {"id":"a"} ]}\n',  # whitespace
    b'{"has_more":false,"data":[{"id":"a"}],"data":[{"id":"b","y":0.1}]}',
    b'\xef\xbb\xbf{"has_more":false,"data":[{"id":"a"}]}',
    '{"has_more":false,"data":[{"id":"é€😀","n":"\\u0000"}]}'.encode("utf-16"),
]


@pytest.mark.parametrize("body", ODD)
def test_a_page_sent_in_another_spelling_prints_as_convrisk_prints_it(body: bytes) -> None:
    data, sent = load_page(body)
    assert data == load_json(body)
    page = check_json_page(data, sent)
    assert page.json_texts == [json_text(item) for item in load_json(body)["data"]]


def test_a_compact_page_gives_its_records_as_sent() -> None:
    # (A page with a space anywhere, even in a string, is encoded again: still the same text.)
    records = [conversation("conv_2", labels=[1, "x_y"]), conversation("conv_1", score=0.25)]
    body = json.dumps({"has_more": True, "data": records}, separators=(",", ":")).encode()
    data, sent = load_page(body)
    assert sent == [json_text(record) for record in records]
    assert check_json_page(data, sent).json_texts == sent


def test_a_nested_record_is_checked_as_any_other() -> None:
    record = risk_profile("rp_1", details={"a": {"b": [1, 2]}})
    body = json.dumps({"has_more": False, "data": [record]}, separators=(",", ":")).encode()
    data, sent = load_page(body)
    assert check_json_page(data, sent).json_texts == [json_text(record)]


@pytest.mark.parametrize(
    "body",
    [b'{"has_more":false,"data":[{"id":"a","x":NaN}]}', b'{"has_more":false,"data":[1e999]}'],
)
def test_a_page_no_json_number_can_hold_is_read_with_floats_not_sent_on(body: bytes) -> None:
    with pytest.raises(ValueError, match=r"not a JSON number|too large a number"):
        load_json(body)  # the strict reader (the local store's) still refuses it
    data, sent = load_page(body)
    assert sent is None  # not the text printed: NaN and 1e999 are printed as strings
    (item,) = data["data"]
    value = item["x"] if isinstance(item, dict) else item
    assert isinstance(value, float) and not math.isfinite(value)
    assert json.dumps(data) == json.dumps(read_json(body))


def test_a_record_holding_one_is_printed_with_its_name_and_the_page_says_so() -> None:
    body = b'{"has_more":false,"data":[{"id":"a","x":-1e400,"d":[NaN]},{"id":"b","x":1.5}]}'
    page = check_json_page(*load_page(body))
    assert page.json_texts == ['{"id":"a","x":"-Infinity","d":["NaN"]}', '{"id":"b","x":1.5}']
    assert page.ids == ["a", "b"] and page.non_finite is True
    assert not check_json_page(*load_page(b'{"has_more":false,"data":[]}')).non_finite


def test_a_broken_page_is_the_same_error() -> None:
    body = b'{"has_more":false,"data":[{"x":1}]}'
    data, sent = load_page(body)
    with pytest.raises(ValueError, match=r"data\.0\.id: missing"):
        check_json_page(data, sent)
