"""The one status <-> error table: what the server sends is what the remote client raises."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from convrisk.api_client.errors import (
    STATUS_TABLE,
    APIError,
    AuthenticationError,
    InvalidRequestError,
    NotFoundError,
    ServiceError,
    error_class_for_status,
    error_from_response,
)

ERRORS = [
    InvalidRequestError("limit must be an integer from 1 to 100.", param="limit"),
    InvalidRequestError("Body too large.", status=413),
    InvalidRequestError("Use application/json.", status=415),
    InvalidRequestError("Method not allowed.", status=405),
    AuthenticationError("Missing or wrong token."),
    NotFoundError("No such conversation: conv_x.", param="id"),
    ServiceError("Unexpected failure."),
]


@pytest.mark.parametrize("error", ERRORS, ids=lambda e: f"{type(e).__name__}-{e.status}")
def test_an_error_survives_the_wire_both_ways(error: APIError) -> None:
    back = error_from_response(error.status, error.to_body())
    assert type(back) is type(error)
    assert (back.status, back.code, back.param) == (error.status, error.code, error.param)
    assert str(back) == f"{error.message} (HTTP {error.status})"


def test_every_status_in_the_table_maps_back_to_its_class_and_code() -> None:
    for status, (cls, code) in STATUS_TABLE.items():
        assert error_class_for_status(status) is cls
        assert cls("x", status=status).code == code
    for cls in (InvalidRequestError, AuthenticationError, NotFoundError, ServiceError):
        assert error_class_for_status(cls.default_status) is cls


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (402, InvalidRequestError),
        (410, InvalidRequestError),
        (418, InvalidRequestError),
        (501, ServiceError),
        (503, ServiceError),
        (599, ServiceError),
        (302, ServiceError),
    ],
)
def test_statuses_outside_the_table_map_by_family(status: int, cls: type[APIError]) -> None:
    assert error_class_for_status(status) is cls


def test_only_an_error_built_from_an_answer_is_marked_answered() -> None:
    # The command line exits 2 for an invalid request caught before sending, 1 for a refusal
    # that came back: the mark, not the message text, tells the two apart.
    assert error_from_response(400, {"error": {"message": "no"}}).answered
    assert error_from_response(502, b"<html>").answered
    assert InvalidRequestError("Body too large.", status=413).answered
    assert not InvalidRequestError("limit must be an integer from 1 to 100.").answered
    assert not NotFoundError("No such conversation: conv_x.").answered


def test_a_check_before_sending_keeps_the_status_the_server_answers_with() -> None:
    from convrisk.api_client.params import check_paging, check_risk_profile_create

    deep: dict[str, object] = {}
    for _ in range(70):
        deep = {"a": deep}
    body = {"customer_id": "c", "profile_type": "t", "score": 1, "details": deep}
    checks: tuple[Callable[[], object], ...] = (
        lambda: check_paging("conversations", 10, "rp_1", None),
        lambda: check_risk_profile_create(body),
    )
    for check in checks:
        with pytest.raises(InvalidRequestError) as caught:
            check()
        assert not caught.value.answered
        assert (
            caught.value.status == 400
            and caught.value.to_body()["error"]["code"] == "invalid_request"
        )
