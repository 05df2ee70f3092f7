"""The record and parameter types of each resource, generated from api_client/resources.py.

Do not edit: `python -m tests.record_types --write` writes this file from the description, and
tests/test_record_types.py fails when it differs from what the description generates.
"""

from typing import Any, Required, TypedDict

# A timestamp as the service sent it: integer Unix seconds from our own service, but a remote one
# may send milliseconds or floats. Kept unchanged so JSON output carries the service's values.
Timestamp = int | float


class Conversation(TypedDict, total=False):
    """A conversation with one contact or one group."""

    id: Required[str]
    contact_id: str | None
    group_id: str | None
    pinned_message_id: str | None
    is_pinned: bool
    is_muted: bool
    last_active_at: Timestamp | None
    last_opened_at: Timestamp | None
    created_at: Timestamp
    archived_at: Timestamp | None


class ConversationCreateParams(TypedDict, total=False):
    """Create a conversation: exactly one of contact_id or group_id."""

    contact_id: str | None
    group_id: str | None


class ConversationUpdateParams(TypedDict, total=False):
    """Update a conversation: only the attributes given change; an empty object changes nothing."""

    pinned_message_id: str | None
    is_pinned: bool
    is_muted: bool
    archived_at: Timestamp | None


class ConversationFilters(TypedDict, total=False):
    """List filters for conversations, combined with AND; None or absent means no filter."""

    muted: bool | None
    archived: bool | None
    pinned: bool | None
    group_id: str | None
    contact_id: str | None


class RiskProfile(TypedDict, total=False):
    """The risk tolerance of one customer."""

    id: Required[str]
    customer_id: str
    profile_type: str
    score: int | float
    details: dict[str, Any]
    created_at: Timestamp
    updated_at: Timestamp


class RiskProfileCreateParams(TypedDict):
    """Create a risk profile: every field required."""

    customer_id: str
    profile_type: str
    score: int | float
    details: dict[str, Any]


class RiskProfileUpdateParams(TypedDict, total=False):
    """Update a risk profile: customer_id cannot be changed; details are replaced whole."""

    profile_type: str
    score: int | float
    details: dict[str, Any]


class RiskProfileFilters(TypedDict, total=False):
    """List filters for risk profiles, combined with AND; None or absent means no filter."""

    customer_id: str | None
    profile_type: str | None
