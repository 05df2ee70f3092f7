"""api_client.raw: PATH checks and --paginate's walk, against answers a hostile or broken
service could give (a page in a circle, an empty page that says more, no page at all)."""

from __future__ import annotations

import json
import math
from typing import Any, ClassVar

import pytest

from convrisk.api_client.errors import InvalidRequestError, NotFoundError, ServiceError
from convrisk.api_client.raw import (
    RawAnswer,
    api_target,
    check_paginate,
    pages,
    with_cursor,
    with_default,
)
from convrisk.api_client.remote.http import HTTPBackend
from tests.loopback import JSONService, on_loopback, running, url_of


def page_answer(ids: list[str], has_more: bool) -> RawAnswer:
    body = {"data": [{"id": i} for i in ids], "has_more": has_more}
    return RawAnswer(200, json.dumps(body).encode())


class Scripted:
    """A `send` that answers from a script, keyed by the starting_after cursor (None first)."""

    def __init__(self, answers: dict[str | None, RawAnswer]) -> None:
        self.answers = answers
        self.sent: list[str] = []

    def __call__(self, method: str, target: str, body: bytes | None) -> RawAnswer:
        assert method == "GET" and body is None
        self.sent.append(target)
        assert len(self.sent) < 50, "the walk did not stop"
        _, _, query = target.partition("starting_after=")
        return self.answers[query.split("&")[0] or None]


def items(send: Scripted, target: str = "/v1/conversations?limit=2") -> list[Any]:
    return [item for page in pages(send, target) for item in page["data"]]


def test_paginate_follows_has_more_from_page_to_page() -> None:
    send = Scripted({None: page_answer(["a", "b"], True), "b": page_answer(["c"], False)})
    assert [item["id"] for item in items(send)] == ["a", "b", "c"]
    assert send.sent == ["/v1/conversations?limit=2", "/v1/conversations?limit=2&starting_after=b"]


def test_a_service_paging_in_a_circle_is_stopped() -> None:
    send = Scripted({None: page_answer(["a"], True), "a": page_answer(["a"], True)})
    with pytest.raises(ServiceError, match="makes no progress"):
        items(send)


def test_an_empty_page_that_says_more_exist_is_stopped() -> None:
    send = Scripted({None: page_answer([], True)})
    with pytest.raises(ServiceError, match="empty page"):
        items(send)


@pytest.mark.parametrize(
    "body",
    [b'{"id": "conv_1"}', b"[1, 2]", b"<html>", b'{"data": [], "has_more": "no"}', b""],
)
def test_an_answer_that_is_not_a_list_page_is_an_error(body: bytes) -> None:
    send = Scripted({None: RawAnswer(200, body)})
    with pytest.raises(ServiceError, match="did not answer with a list page"):
        items(send)


def test_a_last_item_without_an_id_cannot_be_gone_on_from() -> None:
    body = json.dumps({"data": [{"name": "x"}], "has_more": True}).encode()
    with pytest.raises(ServiceError, match="no id to go on from"):
        items(Scripted({None: RawAnswer(200, body)}))


def test_an_error_answer_part_way_is_raised_with_its_status() -> None:
    missing = RawAnswer(404, b'{"error": {"type": "not_found_error", "message": "gone"}}')
    send = Scripted({None: page_answer(["a"], True), "a": missing})
    walk = pages(send, "/v1/conversations")
    assert next(walk)["data"] == [{"id": "a"}]
    with pytest.raises(NotFoundError, match=r"gone \(HTTP 404\)"):
        next(walk)


def test_a_starting_after_in_the_path_is_where_the_walk_starts() -> None:
    send = Scripted({"x": page_answer(["y"], False)})
    assert items(send, "/v1/conversations?starting_after=x") == [{"id": "y"}]


@pytest.mark.parametrize(
    ("path", "target"),
    [
        ("/v1/conversations", "/v1/conversations"),
        ("/v1/conversations?group_id=é", "/v1/conversations?group_id=%C3%A9"),
        ("/v1/conversations?group_id=%C3%A9", "/v1/conversations?group_id=%C3%A9"),
        ("/v1/conversations/conv_ü", "/v1/conversations/conv_%C3%BC"),
        ("/v1/conversations/conv_%C3%BC", "/v1/conversations/conv_%C3%BC"),
        ("/v1/conversations/caf\u00e9\u4e2d", "/v1/conversations/caf%C3%A9%E4%B8%AD"),
        ("/v1/conversations?group_id=%u002e", "/v1/conversations?group_id=%u002e"),
        ("/v1/conversations/%75", "/v1/conversations/%75"),
    ],
)
def test_a_path_is_sent_percent_encoded(path: str, target: str) -> None:
    assert api_target(path) == target


@pytest.mark.parametrize(
    "path",
    [
        "v1/conversations",
        "/v1",
        "/v2/x",
        "/v1/./x",
        "/v1/x/..",
        "/v1/%2e%2E",
        "/v1/conversations/..%2f..%2fadmin",
        "/v1/conversations/.%2E%2Fadmin",
        "/v1/conversations/x%5c..%5cadmin",
        "/v1/conversations/x\\..\\admin",
        "/v1/..;/admin",
        "/v1/%252e%252e/admin",
        "/v1/conversations/..;jsessionid=x/..;/admin",
        "/v1/%25252e%25252e/admin",
        pytest.param("/v1/%252525252525252e", id="encoded-too-many-times"),
        pytest.param("/v1/conversations?group_id=" + "x" * 40_000, id="too-long"),
        "/v1/x#y",
        "/v1/\x1b",
        # Issue 29, finding 8: what a server may decode into a dot, a slash or an end.
        "/v1/%c0%ae%c0%ae/x",
        "/v1/%C0%AE%C0%AE/x",
        "/v1/%e0%80%ae%e0%80%ae/x",
        "/v1/%c0%af",
        "/v1/%25c0%25ae%25c0%25ae/x",
        "/v1/\uff0e\uff0e/x",
        "/v1/%EF%BC%8E%EF%BC%8E/x",
        "/v1/%25EF%25BC%258E./x",
        "/v1/conversations/a\uff0fb",
        "/v1/conversations/a\uff3cb",
        "/v1/\u2024\u2024/x",
        "/v1/\u2025/x",
        "/v1/\ufe52\ufe52/x",
        "/v1/%u002e%u002e/x",
        "/v1/%U002E%U002E/x",
        "/v1/%25u002e%25u002e/x",
        "/v1/conversations/%uff0e",
        "/v1/..%00/x",
        "/v1/conversations/x%00",
        "/v1/conversations/x%2500",
        "/v1/%ed%a0%80/x",
        "/v1/%ff/x",
    ],
)
def test_a_path_outside_v1_is_refused_before_any_request(path: str) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        api_target(path)
    assert not caught.value.answered and caught.value.param == "PATH"


def test_with_cursor_replaces_a_cursor_already_there() -> None:
    assert with_cursor("/v1/c?limit=2&starting_after=a", "b") == "/v1/c?limit=2&starting_after=b"


def test_paginate_is_for_get_and_forwards_only() -> None:
    with pytest.raises(InvalidRequestError, match="not of POST"):
        check_paginate("POST", "/v1/conversations")
    with pytest.raises(InvalidRequestError, match="drop ending_before"):
        check_paginate("GET", "/v1/conversations?ending_before=x")
    check_paginate("GET", "/v1/conversations?limit=3")


def test_a_redirect_answer_is_an_error_naming_it() -> None:
    answer = RawAnswer(302, b"", "Found")
    assert not answer.ok
    error = answer.error()
    assert isinstance(error, ServiceError) and error.status == 302
    assert "HTTP 302 Found" in error.message and "redirects are not followed" in error.message


def test_a_path_read_the_most_decoded_way_is_named_as_leading_outside_v1() -> None:
    for path in ("/v1/..;/admin", "/v1/%252e%252e/admin"):
        with pytest.raises(InvalidRequestError, match=r"leads outside /v1/ .*\(as '/admin'\)"):
            api_target(path)


def test_segment_parameters_that_stay_under_v1_are_sent_as_they_are() -> None:
    target = api_target("/v1/conversations;v=1/conv_1")
    assert target == "/v1/conversations;v=1/conv_1"


@pytest.mark.parametrize(
    "path",
    [
        "/v1/..%20/admin",  # Windows and IIS trim a segment's trailing spaces and dots
        "/v1/.%20/x",
        "/v1/.../x",
        "/v1/..%2e%20%20/x",
        "/v1/%e2%80%8b../x",  # a zero width space, which some servers drop
        "/v1/..%ef%bb%bf/x",  # a BOM
        "/v1/conversations%0d%0aX-Injected:%20y",
        "/v1/conversations/x%09",
        "/v1/conversations/x%250a",
    ],
)
def test_a_path_holding_hidden_characters_or_trimmed_dots_once_decoded_is_refused(
    path: str,
) -> None:
    with pytest.raises(InvalidRequestError):
        api_target(path)


def test_a_percent_encoded_space_inside_an_id_is_still_sent() -> None:
    assert api_target("/v1/conversations/a%20b") == "/v1/conversations/a%20b"


def test_an_id_with_an_encoded_slash_is_still_sent() -> None:
    assert api_target("/v1/conversations/a%2Fb") == "/v1/conversations/a%2Fb"


def test_a_page_with_numbers_json_cannot_hold_is_read_for_the_printer_to_write_as_strings() -> None:
    body = b'{"data": [{"id": "a", "n": 1e400, "m": NaN}], "has_more": false}'
    (item,) = items(Scripted({None: RawAnswer(200, body)}))
    assert item["n"] == math.inf and math.isnan(item["m"])


class _Unavailable(JSONService):
    """Answers every request 503, counting them by method."""

    seen: ClassVar[list[str]] = []

    def _answer(self) -> None:
        self.seen.append(self.command)
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self.send_json(503, {"error": {"type": "api_error", "message": "busy"}})

    do_GET = do_PUT = do_PATCH = do_POST = _answer


@pytest.mark.parametrize(
    ("method", "attempts"), [("GET", 3), ("PUT", 3), ("POST", 3), ("PATCH", 1)]
)
def test_a_method_outside_the_interface_is_never_retried(method: str, attempts: int) -> None:
    _Unavailable.seen = []
    with running(on_loopback(_Unavailable)) as server:
        backend = HTTPBackend(url_of(server), "tok", max_retries=2, sleep=lambda _: None)
        try:
            answer = backend.send(method, "/v1/conversations/x", b"{}" if method != "GET" else None)
        finally:
            backend.close()
    assert answer.status == 503
    assert _Unavailable.seen == [method] * attempts


def test_with_default_adds_a_parameter_only_when_the_query_lacks_it() -> None:
    assert with_default("/v1/c", "limit", "100") == "/v1/c?limit=100"
    assert with_default("/v1/c?muted=true", "limit", "100") == "/v1/c?muted=true&limit=100"
    assert with_default("/v1/c?limit=3", "limit", "100") == "/v1/c?limit=3"
    assert with_default("/v1/c/conv_1", "limit", "100") == "/v1/c/conv_1"


def test_a_redirect_to_a_location_that_is_no_url_says_so() -> None:
    error = RawAnswer(302, b"", "Found", "http://[bad").error()
    assert "a redirect to an invalid Location" in error.message and error.status == 302
