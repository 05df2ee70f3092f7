"""A remote page printed as JSON text: the records as sent when the service writes them as
convrisk prints them, and exactly what convrisk prints otherwise (the same bytes either way)."""

from __future__ import annotations

import json

import pytest

from convrisk.api_client.records import check_json_page, json_text, load_json, load_page

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
    assert page["data"] == [json_text(item) for item in load_json(body)["data"]]


def test_a_compact_page_gives_its_records_as_sent() -> None:
    # (A page with a space anywhere, even in a string, is encoded again: still the same text.)
    records = [conversation("conv_2", labels=[1, "x_y"]), conversation("conv_1", score=0.25)]
    body = json.dumps({"has_more": True, "data": records}, separators=(",", ":")).encode()
    data, sent = load_page(body)
    assert sent == [json_text(record) for record in records]
    assert check_json_page(data, sent)["data"] == sent


def test_a_nested_record_is_checked_as_any_other() -> None:
    record = risk_profile("rp_1", details={"a": {"b": [1, 2]}})
    body = json.dumps({"has_more": False, "data": [record]}, separators=(",", ":")).encode()
    data, sent = load_page(body)
    assert check_json_page(data, sent)["data"] == [json_text(record)]


@pytest.mark.parametrize(
    "body",
    [b'{"has_more":false,"data":[{"id":"a","x":NaN}]}', b'{"has_more":false,"data":[1e999]}'],
)
def test_a_page_no_json_can_print_is_refused_as_before(body: bytes) -> None:
    with pytest.raises(ValueError) as before:
        load_json(body)
    with pytest.raises(ValueError) as now:
        load_page(body)
    assert type(now.value) is type(before.value) and str(now.value) == str(before.value)


def test_a_broken_page_is_the_same_error() -> None:
    body = b'{"has_more":false,"data":[{"x":1}]}'
    data, sent = load_page(body)
    with pytest.raises(ValueError, match=r"data\.0\.id: missing"):
        check_json_page(data, sent)
