"""Tolerance of a remote service that answers differently where the interface is silent (1.3)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from convrisk.api_client.errors import (
    AuthenticationError,
    InvalidRequestError,
    NotFoundError,
    ServiceError,
)
from convrisk.api_client.records import Deleted
from tests.through_httpx import ThroughHttpx

from .conftest import Remote, conversation, risk_profile

MakeRemote = Callable[..., Remote]


def test_millisecond_and_float_timestamps_are_kept_as_sent(remote: MakeRemote) -> None:
    r = remote(
        httpx.Response(200, json=conversation(created_at=1_700_000_000_123, archived_at=1.7e9)),
        httpx.Response(200, json=risk_profile(created_at=1700000000.25, updated_at=1700000001.5)),
    )
    conv = r.backend.conversations.retrieve("conv_01")
    assert conv["created_at"] == 1_700_000_000_123
    assert conv["archived_at"] == 1.7e9
    prof = r.backend.risk_profiles.retrieve("rp_01")
    assert prof["created_at"] == 1700000000.25


def test_extra_fields_are_kept_in_the_json_output(remote: MakeRemote) -> None:
    extra: dict[str, Any] = {"object": "conversation", "unread_count": 3, "labels": ["vip"]}
    r = remote(
        httpx.Response(
            200,
            json={
                "object": "list",
                "url": "/v1/conversations",
                "has_more": False,
                "data": [conversation(**extra)],
            },
        ),
    )
    page = r.backend.conversations.list()
    dumped: dict[str, Any] = dict(page["data"][0])
    assert {k: dumped[k] for k in extra} == extra
    assert page.as_dict()["url"] == "/v1/conversations"


@pytest.mark.parametrize(
    "answer",
    [
        httpx.Response(204),
        httpx.Response(200),
        httpx.Response(200, json={"id": "conv_01", "deleted": True}),
        httpx.Response(200, json={"deleted": True}),
        httpx.Response(200, json={"id": "conv_01", "object": "conversation", "deleted": True}),
    ],
)
def test_a_delete_answer_without_a_body_or_saying_deleted_is_the_id_deleted(
    remote: MakeRemote, answer: httpx.Response
) -> None:
    r = remote(answer)
    result = r.backend.conversations.delete("conv_01")
    assert result == Deleted(id="conv_01", deleted=True)
    assert result == {"id": "conv_01", "deleted": True}


@pytest.mark.parametrize(
    ("answer", "text"),
    [
        (httpx.Response(200, json={"id": "conv_01", "deleted": False}), "(deleted: false)"),
        (httpx.Response(200, json={}), "(deleted: absent)"),
        (httpx.Response(200, json=conversation()), "(deleted: absent)"),
        (httpx.Response(200, json={"id": "conv_02", "deleted": True}), 'object ("conv_02")'),
        (httpx.Response(200, json={"deleted": "yes"}), '(deleted: "yes")'),
        (httpx.Response(202), "HTTP 202 to the delete of 'conv_01' with no body"),
        (httpx.Response(202, text="Accepted"), "a body that is not a JSON object"),
        (
            httpx.Response(200, text="<html>deleted</html>", headers={"Content-Type": "text/html"}),
            "a body that is not a JSON object",
        ),
    ],
)
def test_a_2xx_delete_answer_that_does_not_say_deleted_is_a_service_error(
    remote: MakeRemote, answer: httpx.Response, text: str
) -> None:
    r = remote(answer)
    with pytest.raises(ServiceError) as info:
        r.backend.conversations.delete("conv_01")
    assert text in info.value.message
    assert info.value.status == answer.status_code and len(r.requests) == 1


@pytest.mark.parametrize(
    ("answer", "error", "text"),
    [
        (
            httpx.Response(404, json={"message": "Conversation not found"}),
            NotFoundError,
            "Conversation not found (HTTP 404)",
        ),
        (
            httpx.Response(400, json={"error": "bad limit"}),
            InvalidRequestError,
            "bad limit (HTTP 400)",
        ),
        (
            httpx.Response(401, json={"errors": [{"detail": "expired"}]}),
            AuthenticationError,
            "HTTP 401 Unauthorized",
        ),
        (httpx.Response(404), NotFoundError, "HTTP 404 Not Found with no error message"),
        (httpx.Response(403, text="nope"), AuthenticationError, "HTTP 403 Forbidden"),
        (httpx.Response(418, json=[1, 2]), InvalidRequestError, "HTTP 418"),
        (
            httpx.Response(400, json={"error": {"type": "not_found_error", "message": "x"}}),
            NotFoundError,
            "x (HTTP 400)",
        ),
        (
            httpx.Response(404, json={"error": {"type": "invalid_request_error", "message": "y"}}),
            InvalidRequestError,
            "y (HTTP 404)",
        ),
    ],
)
def test_error_bodies_of_another_shape_or_none(
    remote: MakeRemote, answer: httpx.Response, error: type[Exception], text: str
) -> None:
    r = remote(answer)
    with pytest.raises(error) as info:
        r.backend.conversations.retrieve("conv_01")
    assert text in str(info.value)
    assert getattr(info.value, "status", None) == answer.status_code


def test_an_html_error_page_is_a_service_error_with_the_status(remote: MakeRemote) -> None:
    html = "<html><body><h1>502 Bad Gateway</h1><hr>nginx</body></html>"
    r = remote(*[httpx.Response(502, text=html, headers={"Content-Type": "text/html"})] * 3)
    with pytest.raises(ServiceError) as info:
        r.backend.conversations.list()
    assert info.value.status == 502
    assert str(info.value).startswith("The service answered HTTP 502 Bad Gateway")
    assert "<html>" not in str(info.value)


@pytest.mark.parametrize(
    ("answer", "text"),
    [
        (httpx.Response(200), "HTTP 200 with an empty body"),
        (httpx.Response(200, text="   "), "HTTP 200 with an empty body"),
        (httpx.Response(200, text="{'id': 'conv_01'"), "HTTP 200 with a body that is not JSON"),
        (
            httpx.Response(200, text="<html>ok</html>", headers={"Content-Type": "text/html"}),
            "not JSON (text/html)",
        ),
        (httpx.Response(201, content=b"\xff\xfe\x00garbage"), "HTTP 201 with a body that is not"),
    ],
)
def test_an_unreadable_success_is_a_clear_service_error(
    remote: MakeRemote, answer: httpx.Response, text: str
) -> None:
    r = remote(answer)
    with pytest.raises(ServiceError) as info:
        r.backend.conversations.create({"contact_id": "ct_1"})
    assert text in str(info.value)
    assert info.value.status == answer.status_code
    assert len(r.requests) == 1


@pytest.mark.parametrize(
    ("body", "text"),
    [
        ({"created_at": 1}, "id: missing"),
        ({"id": 7, "created_at": 1}, "id: must be a non-empty string, not a number"),
        ({"id": "", "created_at": 1}, "id: must be a non-empty string, not an empty string"),
        ({"id": None}, "id: must be a non-empty string, not null"),
        ([conversation()], "a JSON object was expected, not an array"),
        ("conv_01", "a JSON object was expected, not a string"),
    ],
)
def test_a_200_without_what_the_client_relies_on_is_a_service_error(
    remote: MakeRemote, body: object, text: str
) -> None:
    r = remote(httpx.Response(200, json=body))
    with pytest.raises(ServiceError) as info:
        r.backend.conversations.retrieve("conv_01")
    assert "HTTP 200 with a conversation that does not fit" in str(info.value)
    assert text in str(info.value)


@pytest.mark.parametrize(
    ("read", "body", "where"),
    [
        ("retrieve", b'{"id": "conv_\\ud800"}', "id"),
        ("list", b'{"has_more": false, "data": [{"id": "conv_\\udfff"}]}', "data.0.id"),
        ("json view", b'{"has_more": false, "data": [{"id": "\\ud800"}]}', "data.0.id"),
    ],
)
def test_an_id_with_a_lone_surrogate_is_named_as_not_valid_unicode(
    remote: MakeRemote, read: str, body: bytes, where: str
) -> None:
    """Not the self-contradicting `must be a non-empty string, not a string`."""
    r = remote(httpx.Response(200, content=body))
    conversations = r.backend.conversations
    with pytest.raises(ServiceError) as info:
        if read == "retrieve":
            conversations.retrieve("conv_1")
        else:
            conversations.list(view="json" if read == "json view" else "records")
    assert str(info.value).endswith(
        f"does not fit: {where}: must be a non-empty string, not a string that is not valid "
        "Unicode (a lone surrogate)."
    )


@pytest.mark.parametrize(
    "body",
    [
        {"id": "conv_1", "created_at": 1714564800123, "extra": "x"},
        {**conversation(), "is_pinned": "yes", "is_muted": 1, "created_at": "yesterday"},
        {"id": "conv_1", "contact_id": 42, "archived_at": [1, 2], "group_id": {"a": None}},
    ],
    ids=["missing-and-extra", "oddly-typed", "other-kinds"],
)
def test_a_record_is_kept_exactly_as_the_service_sent_it(
    remote: MakeRemote, body: dict[str, Any]
) -> None:
    page = {"has_more": False, "data": [body], "url": "/v1/conversations"}
    r = remote(httpx.Response(200, json=body), httpx.Response(200, json=page))
    assert r.backend.conversations.retrieve("conv_1") == body
    listed = r.backend.conversations.list()
    assert listed == page
    assert list(listed["data"][0]) == list(body)


@pytest.mark.parametrize(
    ("body", "text"),
    [
        ({"data": [conversation()]}, "has_more: missing"),
        ({"has_more": "false", "data": []}, "has_more: must be true or false, not a string"),
        ({"has_more": 0, "data": []}, "has_more: must be true or false, not a number"),
        ({"has_more": False, "data": {"id": "conv_01"}}, "data: must be an array, not an object"),
        ({"has_more": False}, "data: missing"),
        (
            {"has_more": False, "data": ["conv_01"]},
            "data.0: a JSON object was expected, not a string",
        ),
        ({"has_more": True, "data": [{"id": "c"}, {"x": 1}]}, "data.1.id: missing"),
    ],
)
def test_a_list_answer_that_does_not_fit_is_a_service_error(
    remote: MakeRemote, body: object, text: str
) -> None:
    r = remote(httpx.Response(200, json=body))
    with pytest.raises(ServiceError, match="a page of conversations that does not fit") as info:
        r.backend.conversations.list()
    assert text in str(info.value)


@pytest.mark.parametrize(
    ("literal", "read"),
    [(b"NaN", "nan"), (b"Infinity", "inf"), (b"-Infinity", "-inf"), (b"1e400", "inf")],
)
def test_a_number_json_cannot_carry_is_read_as_a_float(
    remote: MakeRemote, literal: bytes, read: str
) -> None:
    """Not refused (issue 29, finding 7): the printer writes it as a string."""
    body = b'{"id": "conv_1", "created_at": ' + literal + b"}"
    r = remote(httpx.Response(200, content=body, headers={"Content-Type": "application/json"}))
    record = r.backend.conversations.retrieve("conv_1")
    assert repr(record["created_at"]) == read


def test_a_badly_encoded_answer_is_a_service_error(remote: MakeRemote) -> None:
    answer = httpx.Response(
        200, stream=httpx.ByteStream(b"not gzip at all"), headers={"Content-Encoding": "gzip"}
    )
    r = remote(answer)
    with pytest.raises(ServiceError):
        r.backend.conversations.retrieve("conv_01")


def _nested(levels: int) -> dict[str, object]:
    value: dict[str, object] = {}
    for _ in range(levels - 1):
        value = {"k": value}
    return value


@pytest.mark.parametrize("levels", [65, 300])
def test_details_nested_too_deep_in_an_answer_are_a_service_error(
    remote: MakeRemote, levels: int
) -> None:
    r = remote(httpx.Response(200, json=risk_profile(details=_nested(levels))))
    with pytest.raises(ServiceError) as info:
        r.backend.risk_profiles.retrieve("rp_01")
    assert "details" in str(info.value)
    assert "64 levels" in str(info.value)


def test_an_unknown_field_nested_too_deep_is_a_service_error(remote: MakeRemote) -> None:
    r = remote(
        httpx.Response(200, json={"has_more": False, "data": [conversation(x=_nested(300))]})
    )
    with pytest.raises(ServiceError, match="64 levels"):
        r.backend.conversations.list()


def test_details_at_the_limit_in_an_answer_are_kept(remote: MakeRemote) -> None:
    r = remote(httpx.Response(200, json=risk_profile(details=_nested(64))))
    prof = r.backend.risk_profiles.retrieve("rp_01")
    assert prof["details"] == _nested(64)


@pytest.mark.parametrize("status", [200, 400, 500])
def test_json_nested_past_what_python_can_parse_is_a_service_error_or_the_status(
    remote: MakeRemote, status: int
) -> None:
    deep = httpx.Response(status, content=b"[" * 100_000, headers={"Content-Type": "text/json"})
    r = remote(deep, max_retries=0)
    with pytest.raises(ServiceError if status != 400 else InvalidRequestError) as info:
        r.backend.conversations.retrieve("conv_01")
    assert f"HTTP {status}" in str(info.value)


def test_a_short_token_does_not_mangle_error_messages() -> None:
    """A token that is also a common word part ('T') is hidden only where it stands whole."""
    import httpx

    from convrisk.api_client.errors import NotFoundError
    from convrisk.api_client.remote.http import HTTPBackend

    def answer(request: httpx.Request) -> httpx.Response:
        body = {"error": {"type": "not_found_error", "message": "No such thing; token T refused"}}
        return httpx.Response(404, json=body)

    mock = ThroughHttpx(httpx.MockTransport(answer))
    backend = HTTPBackend("http://svc.test", "T", transport=mock, allow_insecure_http=True)
    try:
        backend.conversations.retrieve("conv_1")
    except NotFoundError as exc:
        assert "HTTP 404" in exc.message
        assert "token *** refused" in exc.message
    else:
        raise AssertionError("expected NotFoundError")
    finally:
        backend.close()
