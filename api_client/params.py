"""Request parameters of every operation, and the input rules of DESIGN section 1 that check them.

Backends call the `check_*` functions on what they are given, so the rules live in one place and
both the local backend and `convrisk serve` reject the same input with the same error.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal, TypedDict

from .errors import InvalidRequestError

MAX_LIMIT = 100
DEFAULT_LIMIT = 10
# Deepest `details` accepted, counting every object and array (the top object is level 1).
# A bound keeps every record printable (Python's JSON encoder recurses; its indented form runs
# out of stack long before 1000 levels), and no real profile comes near 64.
MAX_DETAILS_DEPTH = 64
MAX_IDEMPOTENCY_KEY_LENGTH = 255

ResourceName = Literal["conversations", "risk_profiles"]
ID_PREFIXES: dict[ResourceName, str] = {"conversations": "conv_", "risk_profiles": "rp_"}


class ConversationCreateParams(TypedDict, total=False):
    """Create a conversation: exactly one of contact_id or group_id."""

    contact_id: str | None
    group_id: str | None


class ConversationUpdateParams(TypedDict, total=False):
    """Update a conversation: only the supplied attributes change."""

    pinned_message_id: str | None
    is_pinned: bool
    is_muted: bool
    archived_at: int | float | None


class ConversationFilters(TypedDict, total=False):
    """List filters for conversations, combined with AND; None or absent means no filter."""

    muted: bool | None
    archived: bool | None
    pinned: bool | None
    group_id: str | None


class RiskProfileCreateParams(TypedDict):
    """Create a risk profile: every field required."""

    customer_id: str
    profile_type: str
    score: int | float
    details: dict[str, Any]


class RiskProfileUpdateParams(TypedDict, total=False):
    """Update a risk profile; customer_id cannot be changed."""

    profile_type: str
    score: int | float
    details: dict[str, Any]


class RiskProfileFilters(TypedDict, total=False):
    """List filters for risk profiles, combined with AND."""

    customer_id: str | None
    profile_type: str | None


def _reject_unknown(body: Mapping[str, Any], allowed: tuple[str, ...], what: str) -> None:
    for key in body:
        if key not in allowed:
            raise InvalidRequestError(
                f"Unknown parameter for {what}: {key!r}. Allowed: {', '.join(allowed)}.",
                param=key,
            )


def _check_object(body: object) -> Mapping[str, Any]:
    if not isinstance(body, Mapping):
        raise InvalidRequestError("The request body must be a JSON object.")
    return body


def _nonempty_string(body: Mapping[str, Any], key: str) -> str:
    value = body[key]
    if not isinstance(value, str) or not value.strip():
        raise InvalidRequestError(f"{key} must be a non-empty string.", param=key)
    return value


def _optional_string(body: Mapping[str, Any], key: str) -> str | None:
    value = body.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InvalidRequestError(f"{key} must be a string.", param=key)
    return value


def _boolean(body: Mapping[str, Any], key: str) -> bool:
    value = body[key]
    if not isinstance(value, bool):
        raise InvalidRequestError(f"{key} must be a boolean (true or false).", param=key)
    return value


def _number(value: object, key: str) -> int | float:
    # bool is an int in Python but not a number on the wire.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidRequestError(f"{key} must be a number.", param=key)
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidRequestError(f"{key} must be a finite number.", param=key)
    return value


def exceeds_depth(value: object, limit: int) -> bool:
    """Whether objects and arrays nest more than `limit` levels deep in `value` (no recursion)."""
    containers = (Mapping, list, tuple)
    if not isinstance(value, containers):
        return False
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children: Any = item.values() if isinstance(item, Mapping) else item
        # Only containers go on the stack: a flat object costs one pass over its values, and
        # a JSON scalar is told by its exact type before the slower isinstance against Mapping.
        for child in children:
            if type(child) in _SCALARS:
                continue
            if isinstance(child, containers):
                stack.append((child, depth + 1))
    return False


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _details(body: Mapping[str, Any]) -> dict[str, Any]:
    value = body["details"]
    if not isinstance(value, dict):
        raise InvalidRequestError("details must be a JSON object.", param="details")
    if exceeds_depth(value, MAX_DETAILS_DEPTH):
        raise InvalidRequestError(
            f"details nests objects and arrays more than {MAX_DETAILS_DEPTH} levels deep.",
            param="details",
        )
    return value


def check_text(value: object, param: str) -> None:
    """Refuse a string that is not valid Unicode (a lone surrogate is not UTF-8), naming `param`.

    Such strings come from command-line arguments that are not UTF-8; neither SQLite nor an
    HTTP request can carry them.
    """
    if isinstance(value, str) and not is_encodable(value):
        raise InvalidRequestError(f"{param} must be valid Unicode text.", param=param)


def is_encodable(text: str) -> bool:
    """Whether `text` can be encoded as UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_idempotency_key(key: object) -> str | None:
    """Check an idempotency key: None, or 1 to 255 printable ASCII characters (an HTTP header).

    A leading or trailing space is refused too: a header value loses it on the way.
    """
    if key is None:
        return None
    if (
        not isinstance(key, str)
        or not 1 <= len(key) <= MAX_IDEMPOTENCY_KEY_LENGTH
        or not (key.isascii() and key.isprintable())  # " " to "~"
        or key != key.strip(" ")
    ):
        raise InvalidRequestError(
            f"idempotency_key must be 1 to {MAX_IDEMPOTENCY_KEY_LENGTH} printable ASCII "
            "characters, not starting or ending with a space (it is sent as an HTTP header).",
            param="idempotency_key",
        )
    return key


def check_conversation_create(body: object) -> ConversationCreateParams:
    """Check a create-conversation body; returns exactly one party."""
    data = _check_object(body)
    _reject_unknown(data, ("contact_id", "group_id"), "creating a conversation")
    contact_id = _optional_string(data, "contact_id")
    group_id = _optional_string(data, "group_id")
    if contact_id is None and group_id is None:
        raise InvalidRequestError(
            "Exactly one of contact_id or group_id is required; neither was given.",
            param="contact_id",
        )
    if contact_id is not None and group_id is not None:
        raise InvalidRequestError(
            "Exactly one of contact_id or group_id is required; both were given.",
            param="group_id",
        )
    return {"contact_id": contact_id, "group_id": group_id}


def check_conversation_update(body: object) -> ConversationUpdateParams:
    """Check an update-conversation body; returns only the supplied attributes."""
    data = _check_object(body)
    _reject_unknown(
        data,
        ("pinned_message_id", "is_pinned", "is_muted", "archived_at"),
        "updating a conversation",
    )
    out: ConversationUpdateParams = {}
    if "pinned_message_id" in data:
        value = data["pinned_message_id"]
        if value is not None and (not isinstance(value, str) or not value):
            raise InvalidRequestError(
                "pinned_message_id must be a non-empty string, or null to unpin the message.",
                param="pinned_message_id",
            )
        out["pinned_message_id"] = value
    if "is_pinned" in data:
        out["is_pinned"] = _boolean(data, "is_pinned")
    if "is_muted" in data:
        out["is_muted"] = _boolean(data, "is_muted")
    if "archived_at" in data:
        value = data["archived_at"]
        if value is not None:
            value = _number(value, "archived_at")
            if value < 0:
                raise InvalidRequestError(
                    "archived_at must be a Unix timestamp (seconds) of 0 or more.",
                    param="archived_at",
                )
        out["archived_at"] = value
    return out


def check_risk_profile_create(body: object) -> RiskProfileCreateParams:
    """Check a create-risk-profile body; every field is required."""
    data = _check_object(body)
    allowed = ("customer_id", "profile_type", "score", "details")
    _reject_unknown(data, allowed, "creating a risk profile")
    for key in allowed:
        if key not in data or data[key] is None:
            raise InvalidRequestError(f"Missing required parameter: {key}.", param=key)
    return {
        "customer_id": _nonempty_string(data, "customer_id"),
        "profile_type": _nonempty_string(data, "profile_type"),
        "score": _number(data["score"], "score"),
        "details": _details(data),
    }


def check_risk_profile_update(body: object) -> RiskProfileUpdateParams:
    """Check an update-risk-profile body; customer_id cannot be changed."""
    data = _check_object(body)
    if "customer_id" in data:
        raise InvalidRequestError(
            "customer_id cannot be changed by an update.", param="customer_id"
        )
    _reject_unknown(data, ("profile_type", "score", "details"), "updating a risk profile")
    out: RiskProfileUpdateParams = {}
    if "profile_type" in data:
        out["profile_type"] = _nonempty_string(data, "profile_type")
    if "score" in data:
        out["score"] = _number(data["score"], "score")
    if "details" in data:
        out["details"] = _details(data)
    return out


def check_filters(resource: ResourceName, filters: object) -> dict[str, Any]:
    """Check list filters; returns only the ones that filter (None and absent mean no filter)."""
    if filters is None:
        return {}
    if not isinstance(filters, Mapping):
        raise InvalidRequestError("List filters must be a mapping of filter names to values.")
    if resource == "conversations":
        booleans: tuple[str, ...] = ("muted", "archived", "pinned")
        strings: tuple[str, ...] = ("group_id",)
    else:
        booleans, strings = (), ("customer_id", "profile_type")
    _reject_unknown(filters, booleans + strings, f"listing {resource.replace('_', ' ')}")
    out: dict[str, Any] = {}
    for key, value in filters.items():
        if value is None:
            continue
        if key in booleans and not isinstance(value, bool):
            raise InvalidRequestError(f"{key} must be true or false.", param=key)
        if key in strings and (not isinstance(value, str) or not value):
            raise InvalidRequestError(f"{key} must be a non-empty string.", param=key)
        check_text(value, key)
        out[key] = value
    return out


def check_paging(
    resource: ResourceName,
    limit: object,
    starting_after: object,
    ending_before: object,
) -> tuple[int, str | None, str | None]:
    """Check `limit` (1..100) and the cursors (ids of this resource, at most one of the two)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidRequestError(f"limit must be an integer from 1 to {MAX_LIMIT}.", param="limit")
    after = _cursor(resource, "starting_after", starting_after)
    before = _cursor(resource, "ending_before", ending_before)
    if after is not None and before is not None:
        raise InvalidRequestError(
            "Give at most one of starting_after and ending_before.", param="ending_before"
        )
    return limit, after, before


def check_remote_cursor(resource: ResourceName, name: str, cursor: object) -> str | None:
    """A cursor to send to a remote service: a non-empty id of any form, as a foreign service's
    ids need not carry our prefixes, but never an id of the other resource (`rp_...` to page
    conversations): that is a mistake whatever the service, refused before sending."""
    if cursor is None:
        return None
    if not isinstance(cursor, str) or not cursor:
        raise InvalidRequestError(f"{name} must be a non-empty id.", param=name)
    _not_another_resource(resource, name, cursor)
    check_text(cursor, name)
    return cursor


def _not_another_resource(resource: ResourceName, name: str, cursor: str) -> None:
    for other, prefix in ID_PREFIXES.items():
        if other != resource and cursor.startswith(prefix):
            noun, other_noun = (r.replace("_", " ")[:-1] for r in (resource, other))
            raise InvalidRequestError(
                f"{name} must be a {noun} id, not a {other_noun} id ({prefix}...).", param=name
            )


def _cursor(resource: ResourceName, name: str, cursor: object) -> str | None:
    if cursor is None:
        return None
    prefix = ID_PREFIXES[resource]
    if isinstance(cursor, str):
        _not_another_resource(resource, name, cursor)
    if not isinstance(cursor, str) or not cursor.startswith(prefix):
        raise InvalidRequestError(
            f"{name} must be an id of this resource (starting with {prefix!r}).", param=name
        )
    check_text(cursor, name)
    return cursor
