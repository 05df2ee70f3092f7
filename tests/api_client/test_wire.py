"""What the remote backend puts on the wire: paths, headers, query, bodies; and its debug log."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable

import httpx
import pytest

from convrisk import api_client
from convrisk.api_client.errors import (
    ConvriskError,
    InvalidRequestError,
    NotFoundError,
    ServiceError,
)
from convrisk.api_client.protocol import Backend
from convrisk.api_client.remote.http import HTTPBackend

from .conftest import TOKEN, Remote, conversation, risk_profile

MakeRemote = Callable[..., Remote]


def page(*items: dict[str, object], has_more: bool = False) -> httpx.Response:
    """A list answer."""
    return httpx.Response(200, json={"has_more": has_more, "data": list(items)})


def test_http_backend_is_a_backend() -> None:
    backend: Backend = HTTPBackend("http://127.0.0.1:9", None)
    backend.close()


def test_every_request_carries_token_user_agent_and_accept(remote: MakeRemote) -> None:
    r = remote(
        page(conversation()),
        httpx.Response(201, json=conversation()),
        httpx.Response(200, json=conversation()),
        httpx.Response(200, json=conversation(is_muted=True)),
        httpx.Response(200, json={"id": "conv_01", "deleted": True}),
    )
    convs = r.backend.conversations
    convs.list()
    convs.create({"contact_id": "ct_1"})
    convs.retrieve("conv_01")
    convs.update("conv_01", {"is_muted": True})
    convs.delete("conv_01")
    assert [req.method for req in r.requests] == ["GET", "POST", "GET", "PUT", "DELETE"]
    for req in r.requests:
        assert req.headers["Authorization"] == f"Bearer {TOKEN}"
        assert req.headers["User-Agent"] == f"convrisk/{api_client.__version__}"
        assert req.headers["Accept"] == "application/json"
        assert TOKEN not in str(req.url)
    with_body = {req.method for req in r.requests if "Content-Type" in req.headers}
    assert with_body == {"POST", "PUT"}
    assert all(
        req.headers["Content-Type"] == "application/json"
        for req in r.requests
        if req.method in ("POST", "PUT")
    )
    keyed = [req.method for req in r.requests if "Idempotency-Key" in req.headers]
    assert keyed == ["POST"]


def test_no_token_sends_no_authorization_header(remote: MakeRemote) -> None:
    r = remote(page(), token=None)
    r.backend.conversations.list()
    assert "Authorization" not in r.requests[0].headers


def test_paths_under_base_url_with_a_prefix_and_ids_of_the_services_form(
    remote: MakeRemote,
) -> None:
    r = remote(
        httpx.Response(200, json=risk_profile()),
        page(),
        httpx.Response(200, json=conversation("conv_a.b~c-D")),
        base_url="https://gw.test/api/",
    )
    r.backend.risk_profiles.retrieve("rp_01")
    r.backend.conversations.list()
    r.backend.conversations.retrieve("conv_a.b~c-D")
    assert [req.url.raw_path for req in r.requests] == [
        b"/api/v1/risk-profiles/rp_01",
        b"/api/v1/conversations?limit=10",
        b"/api/v1/conversations/conv_a.b~c-D",
    ]
    assert r.requests[0].url.scheme == "https"


@pytest.mark.parametrize("bad", ["conv_a/b", "conv a", "conv_%2e", "c\u00e9", "x" * 256])
def test_an_id_no_url_carries_as_it_is_is_refused_before_sending(
    remote: MakeRemote, bad: str
) -> None:
    r = remote()
    with pytest.raises(InvalidRequestError) as caught:
        r.backend.conversations.retrieve(bad)
    assert caught.value.param == "id" and not caught.value.answered
    assert len(caught.value.message) < 200
    assert r.requests == []


def test_list_query_booleans_and_omitted_none_filters(remote: MakeRemote) -> None:
    r = remote(page(), page(), page())
    r.backend.conversations.list(
        {"muted": True, "archived": False, "pinned": None, "group_id": "grp_1"},
        limit=25,
        starting_after="conv_09",
    )
    r.backend.conversations.list({"muted": False}, ending_before="conv_02")
    r.backend.risk_profiles.list({"customer_id": "cus_1", "profile_type": None}, limit=100)
    queries = [dict(req.url.params) for req in r.requests]
    assert queries == [
        {
            "muted": "true",
            "archived": "false",
            "group_id": "grp_1",
            "limit": "25",
            "starting_after": "conv_09",
        },
        {"muted": "false", "limit": "10", "ending_before": "conv_02"},
        {"customer_id": "cus_1", "limit": "100"},
    ]


def test_json_bodies_carry_exactly_the_given_attributes(remote: MakeRemote) -> None:
    r = remote(
        httpx.Response(201, json=risk_profile()),
        httpx.Response(200, json=risk_profile(score=80.5)),
        httpx.Response(200, json=conversation()),
        httpx.Response(201, json=conversation(group_id="grp_1", contact_id=None)),
    )
    details = {"horizon": "10y", "notes": ["a", "b"]}
    r.backend.risk_profiles.create(
        {"customer_id": "cus_1", "profile_type": "moderate", "score": 55, "details": details}
    )
    r.backend.risk_profiles.update("rp_01", {"score": 80.5})
    r.backend.conversations.update("conv_01", {"archived_at": None, "pinned_message_id": None})
    r.backend.conversations.create({"group_id": "grp_1"})
    bodies = [json.loads(req.content) for req in r.requests]
    assert bodies == [
        {"customer_id": "cus_1", "profile_type": "moderate", "score": 55, "details": details},
        {"score": 80.5},
        {"archived_at": None, "pinned_message_id": None},
        {"group_id": "grp_1"},
    ]


@pytest.mark.parametrize(
    ("call", "param"),
    [
        (lambda b: b.conversations.list(limit=0), "limit"),
        (lambda b: b.conversations.list(limit=101), "limit"),
        (lambda b: b.conversations.list({"muted": "yes"}), "muted"),
        (lambda b: b.conversations.list({"colour": "red"}), "colour"),
        (lambda b: b.conversations.list(starting_after=""), "starting_after"),
        (lambda b: b.conversations.list(starting_after="a", ending_before="b"), "ending_before"),
        (lambda b: b.conversations.create({"contact_id": "c", "group_id": "g"}), "group_id"),
        (lambda b: b.conversations.update("conv_1", {"is_muted": "no"}), "is_muted"),
        (lambda b: b.risk_profiles.create({"customer_id": "c"}), "profile_type"),
        (lambda b: b.risk_profiles.update("rp_1", {"customer_id": "c2"}), "customer_id"),
        (
            lambda b: b.risk_profiles.update("rp_1", {"details": {"x": float("nan")}}),
            None,
        ),
    ],
)
def test_invalid_input_fails_before_any_request(
    remote: MakeRemote, call: Callable[[HTTPBackend], object], param: str | None
) -> None:
    r = remote()
    with pytest.raises(InvalidRequestError) as info:
        call(r.backend)
    assert info.value.param == param
    assert r.requests == []


def test_an_empty_id_is_refused_as_locally_and_a_dot_segment_is_not_found_unsent(
    remote: MakeRemote,
) -> None:
    r = remote()
    for empty in ("", " "):
        with pytest.raises(InvalidRequestError) as refused:
            r.backend.conversations.retrieve(empty)
        assert refused.value.param == "id"
    for segment in ("..", "."):
        with pytest.raises(NotFoundError):
            r.backend.conversations.retrieve(segment)
    assert r.requests == []


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("base_url", "ftp://svc.test"),
        ("base_url", "svc.test:8080"),
        ("base_url", "http://svc.test/?q=1"),
        ("timeout", 0),
        ("max_retries", -1),
    ],
)
def test_bad_settings_are_named(option: str, value: object) -> None:
    kwargs: dict[str, object] = {"base_url": "http://svc.test", "token": "t", option: value}
    with pytest.raises(InvalidRequestError) as info:
        HTTPBackend(**kwargs)  # type: ignore[arg-type]
    assert info.value.param == option


def test_a_token_that_is_not_a_header_value_is_refused_without_echoing_it() -> None:
    secret = "abc def\nghi"
    with pytest.raises(InvalidRequestError) as info:
        HTTPBackend("http://svc.test", secret)
    assert info.value.param == "token"
    assert "abc" not in str(info.value)


def test_debug_log_names_method_path_status_time_and_retries(
    remote: MakeRemote, caplog: pytest.LogCaptureFixture
) -> None:
    r = remote(
        httpx.Response(503, text="busy"),
        page(conversation()),
        random=lambda: 0.0,
    )
    with caplog.at_level(logging.DEBUG, logger="convrisk.http"):
        r.backend.conversations.list({"muted": True}, limit=5)
    lines = [rec.getMessage() for rec in caplog.records if rec.name == "convrisk.http"]
    assert len(lines) == 2
    assert lines[0].startswith("GET /v1/conversations?muted=true&limit=5 -> 503 in ")
    assert "ms (attempt 1/3, retrying in 0.38 s)" in lines[0]
    assert lines[1].startswith("GET /v1/conversations?muted=true&limit=5 -> 200 in ")
    assert lines[1].endswith("ms (attempt 2/3)")


def test_the_token_and_bodies_never_reach_logs_or_errors(
    remote: MakeRemote, caplog: pytest.LogCaptureFixture
) -> None:
    def echo_auth(request: httpx.Request) -> httpx.Response:
        # A careless service that echoes the request back in its error message.
        told = f"bad request {request.headers['Authorization']} {request.content.decode()}"
        return httpx.Response(400, json={"error": {"message": told}})

    r = remote(
        echo_auth,
        httpx.ConnectError(f"cannot connect with {TOKEN}"),
        httpx.ConnectError("refused"),
        httpx.ConnectError("refused"),
    )
    errors: list[ConvriskError] = []
    with caplog.at_level(logging.DEBUG):
        calls: tuple[Callable[[], object], ...] = (
            lambda: r.backend.risk_profiles.create(
                {
                    "customer_id": "cus_1",
                    "profile_type": "moderate",
                    "score": 1,
                    "details": {"ssn": "PRIVATE-123"},
                }
            ),
            lambda: r.backend.conversations.list(),
        )
        for call in calls:
            with pytest.raises(ConvriskError) as info:
                call()
            errors.append(info.value)
    logged = caplog.text
    assert len([rec for rec in caplog.records if rec.name == "convrisk.http"]) == 4
    assert TOKEN not in logged
    assert "PRIVATE-123" not in logged
    for error in errors:
        assert TOKEN not in str(error)
    assert "***" in str(errors[0])


def test_server_error_bodies_of_our_shape_keep_type_and_code(remote: MakeRemote) -> None:
    r = remote(httpx.Response(500, json=ServiceError("boom").to_body()), max_retries=0)
    with pytest.raises(ServiceError) as info:
        r.backend.conversations.list()
    assert info.value.code == "internal_error"
    assert str(info.value) == "boom (HTTP 500)"


@pytest.mark.parametrize("key", ["", "clé-1", "a\nb", "k" * 256, " lead", "k\ud800"])
def test_an_unusable_idempotency_key_is_refused_before_sending(
    remote: MakeRemote, key: str
) -> None:
    r = remote()
    with pytest.raises(InvalidRequestError) as info:
        r.backend.conversations.create({"contact_id": "ct_1"}, idempotency_key=key)
    assert info.value.param == "idempotency_key"
    assert r.requests == []


def test_a_base_url_with_credentials_is_refused() -> None:
    with pytest.raises(InvalidRequestError) as info:
        HTTPBackend("https://user:pw@svc.test", "tok")
    assert info.value.param == "base_url"
    assert "pw" not in str(info.value)


def test_a_closed_backend_raises_a_client_error(remote: MakeRemote) -> None:
    r = remote()
    r.backend.close()
    with pytest.raises(ConvriskError, match="closed"):
        r.backend.conversations.list()
    assert r.requests == []


def test_debug_log_names_connection_failures(
    remote: MakeRemote, caplog: pytest.LogCaptureFixture
) -> None:
    r = remote(httpx.ConnectError("refused"), httpx.ReadTimeout("slow"), max_retries=1)
    with caplog.at_level(logging.DEBUG, logger="convrisk.http"), pytest.raises(ConvriskError):
        r.backend.conversations.retrieve("conv_01")
    lines = [rec.getMessage() for rec in caplog.records if rec.name == "convrisk.http"]
    assert lines[0].startswith("GET /v1/conversations/conv_01 -> connection error in ")
    assert lines[1].startswith("GET /v1/conversations/conv_01 -> timeout in ")


@pytest.mark.parametrize(
    ("call", "param"),
    [
        (lambda b: b.conversations.list({"group_id": "grp_\udcff"}), "group_id"),
        (lambda b: b.risk_profiles.list({"customer_id": "\ud800"}), "customer_id"),
        (lambda b: b.conversations.list(starting_after="conv_\udc80"), "starting_after"),
        (lambda b: b.conversations.list(ending_before="conv_\udc80"), "ending_before"),
        (lambda b: b.conversations.retrieve("conv_\udcff"), "id"),
        (lambda b: b.conversations.update("conv_\udcff", {"is_muted": True}), "id"),
        (lambda b: b.risk_profiles.delete("rp_\udcff"), "id"),
    ],
)
def test_text_from_a_non_utf8_argument_is_an_invalid_request_naming_it(
    remote: MakeRemote, call: Callable[[HTTPBackend], object], param: str
) -> None:
    r = remote()
    with pytest.raises(InvalidRequestError) as info:
        call(r.backend)
    assert info.value.param == param
    assert r.requests == []


@pytest.mark.parametrize("filters", [[], (), "", 0, False])
def test_filters_that_are_not_a_mapping_are_refused_even_when_empty(
    remote: MakeRemote, filters: object
) -> None:
    r = remote()
    with pytest.raises(InvalidRequestError):
        r.backend.conversations.list(filters)  # type: ignore[arg-type]
    assert r.requests == []


def test_empty_filters_list_everything(remote: MakeRemote) -> None:
    r = remote(page(conversation()))
    assert len(r.backend.conversations.list({})["data"]) == 1
    assert r.requests[0].url.params.get("limit") == "10"


def test_details_nested_too_deep_are_refused_before_sending(remote: MakeRemote) -> None:
    details: dict[str, object] = {}
    for _ in range(64):
        details = {"k": details}
    r = remote()
    body = {"customer_id": "c", "profile_type": "t", "score": 1, "details": details}
    with pytest.raises(InvalidRequestError) as info:
        r.backend.risk_profiles.create(body)  # type: ignore[arg-type]
    assert info.value.param == "details"
    assert r.requests == []


@pytest.mark.parametrize(
    "base_url",
    ["ftp://user:pw-SECRET@svc.test", "user:pw-SECRET@svc.test", "ftp://u:pw-SECRET@x@svc.test"],
)
def test_a_bad_base_url_is_shown_without_its_credentials(base_url: str) -> None:
    with pytest.raises(InvalidRequestError) as info:
        HTTPBackend(base_url, "tok")
    assert info.value.param == "base_url"
    assert "SECRET" not in str(info.value)
    assert "svc.test" in str(info.value)


def test_a_remote_error_naming_the_token_as_param_is_scrubbed(remote: MakeRemote) -> None:
    body = {"error": {"type": "invalid_request_error", "message": "bad", "param": f"x{TOKEN}"}}
    r = remote(httpx.Response(400, json=body))
    with pytest.raises(InvalidRequestError) as info:
        r.backend.conversations.list()
    assert info.value.param == "x***"
    assert TOKEN not in str(info.value.to_body())
