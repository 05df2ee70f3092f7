"""Request parameters of every operation, and the input rules of DESIGN section 1 that check them.

Backends call the `check_*` functions on what they are given, so the rules live in one place and
both the local backend and `convrisk serve` reject the same input with the same error. A body is
checked by its resource's description (api_client.resources): which fields a create or an update
takes, each by the rule of its type, and the one-of and fixed-field constraints.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any, cast

from convrisk.api_client.defaults import DEFAULT_LIMIT as DEFAULT_LIMIT
from convrisk.api_client.defaults import MAX_LIMIT as MAX_LIMIT
from convrisk.api_client.defaults import MAX_NUMBER as MAX_NUMBER
from convrisk.api_client.defaults import MAX_TIMESTAMP as MAX_TIMESTAMP
from convrisk.api_client.defaults import MIN_NUMBER as MIN_NUMBER
from convrisk.api_client.errors import InvalidRequestError
from convrisk.api_client.record_types import (
    ConversationCreateParams,
    ConversationUpdateParams,
    RiskProfileCreateParams,
    RiskProfileUpdateParams,
)
from convrisk.api_client.resources import (
    ID_ALPHABET_WORDS,
    ID_BODY_LENGTH,
    MAX_ID_LENGTH,
    REMOTE_ID_CHARACTERS,
    RESOURCES,
    Field,
    Resource,
)
from convrisk.api_client.resources import ResourceName as ResourceName
from convrisk.api_client.text import safe_line

# Deepest `details` accepted, counting every object and array (the top object is level 1).
# A bound keeps every record printable (Python's JSON encoder recurses; its indented form runs
# out of stack long before 1000 levels), and no real profile comes near 64.
MAX_DETAILS_DEPTH = 64
MAX_IDEMPOTENCY_KEY_LENGTH = 255

ID_PREFIXES: dict[ResourceName, str] = {name: r.prefix for name, r in RESOURCES.items()}
# The largest request body the service takes (413 above it).
MAX_BODY_BYTES = 1024 * 1024
# The largest request head (request line and headers) serve takes (431 above it); nginx's
# default large_client_header_buffers hold 32 KiB.
MAX_HEAD_BYTES = 64 * 1024
# What a required string must hold more than: the characters Python's str.isspace() calls
# whitespace (a test holds this list to it). Spelled out, so that the rule and the OpenAPI
# document's pattern mean the same thing: JSON Schema's \s is ECMAScript's, which differs.
BLANK = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
    "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
# The words a boolean query parameter may be, in any letter case.
QUERY_BOOLEANS = {"true": True, "1": True, "false": False, "0": False}


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
    if not isinstance(value, str) or not value.strip(BLANK):
        raise InvalidRequestError(
            f"{key} must be a string with a character other than whitespace.", param=key
        )
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
    if not MIN_NUMBER <= value <= MAX_NUMBER:
        raise InvalidRequestError(
            f"{key} must be a number from {MIN_NUMBER} to {MAX_NUMBER}.", param=key
        )
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


def check_text(value: object, param: str) -> None:
    """Refuse a string that is not valid Unicode (a lone surrogate is not UTF-8), naming `param`.

    Such strings come from command-line arguments that are not UTF-8; neither SQLite nor an
    HTTP request can carry them.
    """
    if isinstance(value, str) and not is_encodable(value):
        raise InvalidRequestError(f"{param} must be valid Unicode text.", param=param)


def is_encodable(text: str) -> bool:
    """Whether `text` can be encoded as UTF-8."""
    if text.isascii():  # told at once, without encoding
        return True
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


def _value(field: Field, body: Mapping[str, Any]) -> Any:
    """The value of `field` in `body` (present), checked by the rule of its type."""
    key = field.name
    value = body[key]
    if field.nullable and value is None:
        return None
    if field.type == "string":
        # Text that cannot be UTF-8 cannot be sent or stored: refused here, before any request.
        check_text(value, key)
        if field.nullable:
            if not isinstance(value, str) or not value:
                raise InvalidRequestError(
                    f"{key} must be a non-empty string, or null to {field.null_means}.", param=key
                )
            return value
        return _nonempty_string(body, key)
    if field.type == "boolean":
        return _boolean(body, key)
    if field.type == "object":
        return _object(body, key)
    value = _number(value, key)
    if field.type == "timestamp" and not 0 <= value <= MAX_TIMESTAMP:
        raise InvalidRequestError(
            f"{key} must be a Unix timestamp (seconds) from 0 to {MAX_TIMESTAMP} "
            "(the end of 9999).",
            param=key,
        )
    return value


def _object(body: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = body[key]
    if not isinstance(value, dict):
        raise InvalidRequestError(f"{key} must be a JSON object.", param=key)
    too_deep, bad_text = _depth_and_text(value, MAX_DETAILS_DEPTH)
    if too_deep:
        raise InvalidRequestError(
            f"{key} nests objects and arrays more than {MAX_DETAILS_DEPTH} levels deep.",
            param=key,
        )
    if bad_text:
        raise InvalidRequestError(f"{key} must hold valid Unicode text only.", param=key)
    return value


def _depth_and_text(value: Mapping[str, Any], limit: int) -> tuple[bool, bool]:
    """In one pass (no recursion): whether objects and arrays nest more than `limit` levels
    deep in `value` (as `exceeds_depth` says), and whether a string in it (keys too) is not
    valid Unicode. The walk stops at the first level too deep."""
    bad_text = False
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True, bad_text
        if isinstance(item, Mapping):
            for name in item:
                if isinstance(name, str) and not is_encodable(name):
                    bad_text = True
            children: Any = item.values()
        else:
            children = item
        for child in children:
            kind = type(child)
            if kind is str:
                if not is_encodable(child):
                    bad_text = True
            elif kind in _SCALARS:
                continue
            elif isinstance(child, str):
                if not is_encodable(child):
                    bad_text = True
            elif isinstance(child, Mapping | list | tuple):
                stack.append((child, depth + 1))
    return False, bad_text


def check_create(resource: Resource, body: object) -> dict[str, Any]:
    """Check a create body by the resource's description; returns the fields it sets (each
    field of a one-of group, None when not given). Every string returned is valid Unicode."""
    data = _check_object(body)
    _, names, allowed, required, others = _create_rules(resource)
    if not allowed.issuperset(data):
        _reject_unknown(data, names, f"creating a {resource.noun}")
    out: dict[str, Any] = {}
    if resource.one_of:
        for key in resource.one_of:
            out[key] = _optional_string(data, key)
        given = [key for key in resource.one_of if out[key] is not None]
        if len(given) != 1:
            names_given = " or ".join(resource.one_of)
            problem = "neither was given" if not given else "both were given"
            raise InvalidRequestError(
                f"Exactly one of {names_given} is required; {problem}.",
                param=given[1] if given else resource.one_of[0],
            )
        # After the count: a body giving both is told so first, whatever their text.
        check_text(out[given[0]], given[0])
    for field in required:
        if data.get(field.name) is None:
            raise InvalidRequestError(
                f"Missing required parameter: {field.name}.", param=field.name
            )
    for field in others:
        if field.name in data:
            out[field.name] = _value(field, data)
    return out


@functools.cache
def _create_rules(
    resource: Resource,
) -> tuple[
    tuple[Field, ...], tuple[str, ...], frozenset[str], tuple[Field, ...], tuple[Field, ...]
]:
    """A create's fields, their names (as a tuple and a set), the required ones and those
    outside the one-of group: worked out once per resource."""
    fields = resource.creatable()
    names = tuple(field.name for field in fields)
    return (
        fields,
        names,
        frozenset(names),
        tuple(field for field in fields if field.required),
        tuple(field for field in fields if field.name not in resource.one_of),
    )


def check_update(resource: Resource, body: object) -> dict[str, Any]:
    """Check an update body by the resource's description; returns only the supplied fields."""
    data = _check_object(body)
    for field in resource.fields:
        if field.fixed and field.name in data:
            raise InvalidRequestError(
                f"{field.name} cannot be changed by an update.", param=field.name
            )
    fields = resource.updatable()
    _reject_unknown(data, tuple(f.name for f in fields), f"updating a {resource.noun}")
    return {field.name: _value(field, data) for field in fields if field.name in data}


def check_conversation_create(body: object) -> ConversationCreateParams:
    """Check a create-conversation body; returns exactly one party."""
    return cast(ConversationCreateParams, check_create(RESOURCES["conversations"], body))


def check_conversation_update(body: object) -> ConversationUpdateParams:
    """Check an update-conversation body; returns only the supplied attributes."""
    return cast(ConversationUpdateParams, check_update(RESOURCES["conversations"], body))


def check_risk_profile_create(body: object) -> RiskProfileCreateParams:
    """Check a create-risk-profile body; every field is required."""
    return cast(RiskProfileCreateParams, check_create(RESOURCES["risk_profiles"], body))


def check_risk_profile_update(body: object) -> RiskProfileUpdateParams:
    """Check an update-risk-profile body; customer_id cannot be changed."""
    return cast(RiskProfileUpdateParams, check_update(RESOURCES["risk_profiles"], body))


def check_filters(resource: ResourceName, filters: object) -> dict[str, Any]:
    """Check list filters; returns only the ones that filter (None and absent mean no filter)."""
    if filters is None:
        return {}
    if not isinstance(filters, Mapping):
        raise InvalidRequestError("List filters must be a mapping of filter names to values.")
    described = RESOURCES[resource]
    kinds = {f.name: f.type for f in described.filters}
    _reject_unknown(filters, tuple(kinds), f"listing {described.plural}")
    out: dict[str, Any] = {}
    for key, value in filters.items():
        if value is None:
            continue
        if kinds[key] == "boolean" and not isinstance(value, bool):
            raise InvalidRequestError(f"{key} must be true or false.", param=key)
        if kinds[key] == "string" and (not isinstance(value, str) or not value):
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
    if starting_after is not None and ending_before is not None:
        raise InvalidRequestError(
            "Give at most one of starting_after and ending_before.", param="ending_before"
        )
    after = _cursor(resource, "starting_after", starting_after)
    before = _cursor(resource, "ending_before", ending_before)
    return limit, after, before


def check_remote_cursor(resource: ResourceName, name: str, cursor: object) -> str | None:
    """A cursor to send to a remote service: an id as `check_remote_id` takes it."""
    if cursor is None:
        return None
    return check_remote_id(resource, cursor, name)


# How much of a refused id a message shows.
SHOWN_ID_LENGTH = 40


def cut_id(text: str) -> str:
    """An id cut after SHOWN_ID_LENGTH characters (`conv_AAAA...`), as a message names it."""
    return text if len(text) <= SHOWN_ID_LENGTH else text[:SHOWN_ID_LENGTH] + "..."


def shown_id(text: str) -> str:
    """An id as a message shows it: quoted, cut (`cut_id`) and safe on a terminal, so that a
    giant or hostile id never makes a giant or forged line."""
    return f"'{safe_line(cut_id(text))}'"


def check_id(resource: ResourceName, value: object, name: str = "id") -> str:
    """An id this tool mints (the local backend's and serve's): the resource's prefix and
    ID_BODY_LENGTH characters of its alphabet; anything else is an InvalidRequestError naming
    `name`, a usage error before any request."""
    described = RESOURCES[resource]
    text = _id_text(resource, value, name)
    if not described.is_minted_id(text):
        raise InvalidRequestError(
            f"{_what(name)}{shown_id(text)} is not a {described.noun} id: {described.noun} ids "
            f"are {described.prefix} and {ID_BODY_LENGTH} characters of {ID_ALPHABET_WORDS}.",
            param=name,
        )
    return text


def check_remote_id(resource: ResourceName, value: object, name: str = "id") -> str:
    """An id to send to a remote service, whose ids may have a form of their own: at most
    MAX_ID_LENGTH characters that a URL carries unescaped, and never an id of the other
    resource (`rp_...` to page conversations: a mistake whatever the service)."""
    text = _id_text(resource, value, name)
    bad = next((char for char in text if char not in REMOTE_ID_CHARACTERS), None)
    if bad is not None:
        noun = RESOURCES[resource].noun
        raise InvalidRequestError(
            f"{_what(name)}{shown_id(text)} is not a {noun} id: it holds {shown_id(bad)}; "
            "ids are letters, digits and - . _ ~.",
            param=name,
        )
    return text


def _what(name: str) -> str:
    """How a message names the value: `starting_after ` for a cursor, nothing for an id."""
    return "" if name == "id" else f"{name} "


def _id_text(resource: ResourceName, value: object, name: str) -> str:
    """The checks every id passes on either backend: a non-empty string of valid Unicode, at
    most MAX_ID_LENGTH characters, not of the other resource."""
    noun = RESOURCES[resource].noun
    if not isinstance(value, str) or not value:
        raise InvalidRequestError(f"{name} must be a non-empty {noun} id.", param=name)
    if len(value) > MAX_ID_LENGTH:
        raise InvalidRequestError(
            f"{_what(name)}{shown_id(value)} is not a {noun} id: it is longer than "
            f"{MAX_ID_LENGTH} characters.",
            param=name,
        )
    for other, prefix in ID_PREFIXES.items():
        if other != resource and value.startswith(prefix):
            other_noun = RESOURCES[other].noun
            raise InvalidRequestError(
                f"{_what(name)}{shown_id(value)} is not a {noun} id: it is a {other_noun} id "
                f"({prefix}...).",
                param=name,
            )
    check_text(value, name)
    return value


def _cursor(resource: ResourceName, name: str, cursor: object) -> str | None:
    if cursor is None:
        return None
    return check_id(resource, cursor, name)
