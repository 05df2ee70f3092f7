"""The shared input rules of api_client.params, as both backends apply them."""

from __future__ import annotations

import tomllib
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from convrisk import api_client
from convrisk.api_client.errors import InvalidRequestError
from convrisk.api_client.params import (
    MAX_DETAILS_DEPTH,
    check_conversation_create,
    check_filters,
    check_idempotency_key,
    check_risk_profile_create,
    check_risk_profile_update,
    check_text,
    exceeds_depth,
)

ROOT = Path(__file__).resolve().parents[2]


def nested(levels: int, *, array_every: int = 0) -> Any:
    """A value with exactly `levels` objects/arrays nested in one another (the outer a dict)."""
    value: Any = {}
    for level in range(levels - 1, 0, -1):
        value = [value] if array_every and level % array_every == 0 else {"k": value}
    return value


def create_body(details: object) -> dict[str, Any]:
    """A risk-profile create body with these details."""
    return {"customer_id": "cus_1", "profile_type": "moderate", "score": 1, "details": details}


def test_depth_counts_objects_and_arrays() -> None:
    assert not exceeds_depth({}, 1)
    assert exceeds_depth({"a": []}, 1)
    assert not exceeds_depth({"a": [1, "x", None]}, 2)
    assert exceeds_depth({"a": [{}]}, 2)
    assert not exceeds_depth(nested(64, array_every=3), 64)
    assert exceeds_depth(nested(65, array_every=3), 64)


def test_details_at_the_depth_limit_are_accepted() -> None:
    body = create_body(nested(MAX_DETAILS_DEPTH))
    assert check_risk_profile_create(body)["details"] == body["details"]


@pytest.mark.parametrize("levels", [MAX_DETAILS_DEPTH + 1, 300, 100_000])
def test_details_nested_too_deep_are_refused_naming_details(levels: int) -> None:
    with pytest.raises(InvalidRequestError) as create:
        check_risk_profile_create(create_body(nested(levels, array_every=2)))
    assert create.value.param == "details"
    assert str(MAX_DETAILS_DEPTH) in str(create.value)
    with pytest.raises(InvalidRequestError) as update:
        check_risk_profile_update({"details": nested(levels)})
    assert update.value.param == "details"


def test_details_that_contain_themselves_are_refused_not_looped_on() -> None:
    details: dict[str, Any] = {}
    details["me"] = details
    with pytest.raises(InvalidRequestError) as info:
        check_risk_profile_create(create_body(details))
    assert info.value.param == "details"


def test_text_that_is_not_unicode_is_refused_naming_the_param() -> None:
    check_text("plain é ✓", "group_id")
    with pytest.raises(InvalidRequestError) as info:
        check_text("grp_\udcff", "group_id")
    assert info.value.param == "group_id"


@pytest.mark.parametrize("key", ["k", "a b", "k" * 255, "~!@#$%^&*()_+{}|:<>?"])
def test_usable_idempotency_keys(key: str) -> None:
    assert check_idempotency_key(key) == key


@pytest.mark.parametrize(
    "key",
    ["", "k" * 256, "clé-1", "a\nb", "tab\there", "k\ud800", " lead", "trail ", 123],
)
def test_idempotency_keys_that_cannot_travel_in_a_header_are_refused(key: object) -> None:
    with pytest.raises(InvalidRequestError) as info:
        check_idempotency_key(key)
    assert info.value.param == "idempotency_key"


def test_no_idempotency_key_is_none() -> None:
    assert check_idempotency_key(None) is None


def test_only_none_means_no_filter() -> None:
    assert check_filters("conversations", None) == {}
    assert check_filters("conversations", {}) == {}
    for not_a_mapping in ([], (), "", 0, False, ["muted"]):
        with pytest.raises(InvalidRequestError):
            check_filters("conversations", not_a_mapping)


def test_a_filter_value_that_is_not_unicode_is_refused_naming_it() -> None:
    with pytest.raises(InvalidRequestError) as info:
        check_filters("risk_profiles", {"customer_id": "cus_\udc80"})
    assert info.value.param == "customer_id"


def test_the_version_is_written_once_and_installed_as_written() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "version" not in project
    assert "version" in project["dynamic"]
    assert version("convrisk") == api_client.__version__


@pytest.mark.parametrize(
    ("body", "message", "param"),
    [
        (
            {"contact_id": "a\ud800", "group_id": "grp_1"},
            "Exactly one of contact_id or group_id is required; both were given.",
            "group_id",
        ),
        ({"contact_id": "a\ud800"}, "contact_id must be valid Unicode text.", "contact_id"),
        (
            {"group_id": "\udcff", "contact_id": ""},
            "group_id must be valid Unicode text.",
            "group_id",
        ),
    ],
)
def test_a_conversation_giving_both_ids_is_told_so_before_their_text_is_judged(
    body: dict[str, Any], message: str, param: str
) -> None:
    """Both ids given is the first thing wrong, as before the one-walk checks; an id alone that
    is not valid Unicode is named."""
    with pytest.raises(InvalidRequestError) as caught:
        check_conversation_create(body)
    assert (str(caught.value), caught.value.param) == (message, param)
