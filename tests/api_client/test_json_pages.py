"""A remote page printed as JSON: each record written as convrisk writes JSON, checked at the edge
as a page of records is, so that the output never depends on how the service formats its JSON."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from convrisk.api_client.errors import ServiceError
from convrisk.api_client.records import json_text

from .conftest import Remote

MakeRemote = Callable[..., Remote]

# Page bodies as services write them: compact or not, escaped or not, numbers in every form.
BODIES = {
    "compact": '{"has_more":false,"data":[{"id":"c1","n":1,"f":0.1},{"id":"c2","d":{"k":[1]}}]}',
    "spaced": '{"has_more": false, "data": [{"id": "c1", "n": 1}, {"id": "c2"}]}',
    "pretty": '{\n  "has_more": false,\n  "data": [\n    {\n      "id": "c1"\n    }\n  ]\n}\n',
    "tabs": '{"has_more":false,"data":[{"id":"c1",\t"n":1}]}',
    "ascii-escaped": '{"has_more":false,"data":[{"id":"c1","t":"caf\\u00e9 \\ud83d\\ude00"}]}',
    "escaped-slash": '{"has_more":false,"data":[{"id":"c1","u":"a\\/b"}]}',
    "control-escapes": '{"has_more":false,"data":[{"id":"c1","t":"\\u001b[2J\\n\\t\\"\\\\"}]}',
    "short-escapes": '{"has_more":false,"data":[{"id":"c1","t":"a\\nb\\tc\\"d\\\\e\\b\\f"}]}',
    "raw-unicode": '{"has_more":false,"data":[{"id":"c1","t":"café 😀 \u2028 \x7f"}]}',
    "lone-surrogate": '{"has_more":false,"data":[{"id":"c1","t":"\\ud800"}]}',
    "exponent": '{"has_more":false,"data":[{"id":"c1","f":1e5,"g":2E-3,"h":1.5e+300}]}',
    "long-fraction": '{"has_more":false,"data":[{"id":"c1","f":1.50,"g":0.1000000000000000055}]}',
    "python-floats": '{"has_more":false,"data":[{"id":"c1","f":1e+300,"g":-0.0,"h":1.5}]}',
    "minus-zero": '{"has_more":false,"data":[{"id":"c1","n":-0,"m":[-0]}]}',
    "big-int": '{"has_more":false,"data":[{"id":"c1","n":123456789012345678901234567890}]}',
    "repeated-key": '{"has_more":false,"data":[{"id":"c1","a":1,"a":2}]}',
    "repeated-nested": '{"has_more":false,"data":[{"id":"c1","d":{"a":1,"a":2}}]}',
    "lookalikes-in-strings": '{"has_more":false,"data":[{"id":"a, b: [c] {d}","e":"1e5,-0]"}]}',
    "data-first": '{"data":[{"id":"c1"}],"has_more":true,"url":"/v1/conversations"}',
    "repeated-data": '{"data":[{"id":"old"}],"has_more":false,"data":[{"id":"c1"}]}',
    "empty": '{"has_more":false,"data":[]}',
    "brackets-in-strings": '{"has_more":false,"data":[{"id":"c1","t":"' + "[{" * 80 + '"}]}',
}


@pytest.mark.parametrize("body", BODIES.values(), ids=BODIES.keys())
def test_json_text_of_a_remote_page_does_not_depend_on_how_the_service_writes_it(
    remote: MakeRemote, body: str
) -> None:
    answer = httpx.Response(
        200, content=body.encode(), headers={"Content-Type": "application/json"}
    )
    r = remote(answer, answer)
    records = r.backend.conversations.list()
    texts = r.backend.conversations.list(view="json")
    assert texts.json_texts == [json_text(record) for record in records["data"]]
    assert texts.ids == [record["id"] for record in records["data"]]
    assert texts.has_more is records["has_more"]


def _nested(levels: int) -> str:
    return '{"k":' * (levels - 1) + "{}" + "}" * (levels - 1)


@pytest.mark.parametrize(("levels", "fits"), [(64, True), (65, False), (300, False)])
def test_a_compact_record_nested_too_deep_is_a_service_error(
    remote: MakeRemote, levels: int, fits: bool
) -> None:
    body = '{"has_more":false,"data":[{"id":"c1"},{"id":"c2","x":' + _nested(levels) + "}]}"
    r = remote(httpx.Response(200, content=body.encode()))
    if fits:
        assert r.backend.conversations.list(view="json").ids == ["c1", "c2"]
        return
    with pytest.raises(ServiceError, match=r"data\.1\.x: nests more than 64 levels deep"):
        r.backend.conversations.list(view="json")


@pytest.mark.parametrize(
    ("body", "text"),
    [
        ('{"has_more":false,"data":[{"id":""}]}', "data.0.id: must be a non-empty string"),
        ('{"has_more":0,"data":[]}', "has_more: must be true or false, not a number"),
        ('{"has_more":false,"data":[{"id":"c"}]} trailing', "a body that is not JSON"),
        ('{"has_more":false,"data":[{"id":"c"},]}', "a body that is not JSON"),
        ("", "an empty body"),
    ],
)
def test_a_broken_page_printed_as_json_is_the_same_service_error(
    remote: MakeRemote, body: str, text: str
) -> None:
    answer = httpx.Response(200, content=body.encode())
    r = remote(answer, answer)
    errors: list[str] = []
    reads: tuple[Callable[[], object], ...] = (
        r.backend.conversations.list,
        functools.partial(r.backend.conversations.list, view="json"),
    )
    for read in reads:
        with pytest.raises(ServiceError) as info:
            read()
        errors.append(str(info.value))
    assert errors[0] == errors[1]
    assert text in errors[0]


@pytest.mark.parametrize("written", ["NaN", "Infinity", "-Infinity", "1e400", "-1e400"])
def test_a_page_holding_a_number_json_cannot_is_read_alike_by_every_list(
    remote: MakeRemote, written: str
) -> None:
    """Not refused (issue 29, finding 7): records and text agree, the text holding the name."""
    body = '{"has_more":false,"data":[{"id":"c1","n":' + written + '},{"id":"c2","n":0.5}]}'
    answer = httpx.Response(200, content=body.encode())
    r = remote(answer, answer, answer)
    records: list[dict[str, Any]] = [dict(item) for item in r.backend.conversations.list()["data"]]
    page = r.backend.conversations.list(view="json")
    assert r.backend.conversations.list(view="ids").ids == ["c1", "c2"] == page.ids
    name = {"NaN": "NaN", "Infinity": "Infinity", "1e400": "Infinity"}.get(written, "-Infinity")
    assert page.json_texts == ['{"id":"c1","n":"' + name + '"}', json_text(records[1])]
    assert page.non_finite is True
    assert repr(records[0]["n"]) == {"NaN": "nan", "Infinity": "inf"}.get(name, "-inf")
