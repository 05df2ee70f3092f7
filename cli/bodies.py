"""The request bodies of `conv` and `risk` create and update, built from their options."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from .errors import UsageProblem
from .times import parse_time
from .values import nonempty, parse_details, parse_score

if TYPE_CHECKING:
    from convrisk.api_client.params import (
        ConversationCreateParams,
        ConversationUpdateParams,
        RiskProfileCreateParams,
        RiskProfileUpdateParams,
    )


def conversation_party(contact_id: str | None, group_id: str | None) -> ConversationCreateParams:
    """Exactly one of --contact-id and --group-id (an empty value counts as absent)."""
    contact = contact_id.strip() if contact_id else None
    group = group_id.strip() if group_id else None
    if contact and group:
        raise UsageProblem("Give --contact-id or --group-id, not both.", param="--group-id")
    if contact:
        return {"contact_id": contact}
    if group:
        return {"group_id": group}
    raise UsageProblem("Give --contact-id C or --group-id G.", param="--contact-id")


def conversation_changes(
    pin: bool | None,
    mute: bool | None,
    archive: bool | None,
    archived_at: str | None,
    pinned_message_id: str | None,
    clear_pinned_message: bool,
) -> ConversationUpdateParams:
    """The update of `conv update`: only what was asked for; nothing at all is a usage error."""
    changes: ConversationUpdateParams = {}
    if pin is not None:
        changes["is_pinned"] = pin
    if mute is not None:
        changes["is_muted"] = mute
    if archived_at is not None:
        if archive is False:
            raise UsageProblem(
                "Give --unarchive or --archived-at, not both.", param="--archived-at"
            )
        changes["archived_at"] = parse_time(archived_at)
    elif archive is not None:
        changes["archived_at"] = int(time.time()) if archive else None
    if pinned_message_id is not None and clear_pinned_message:
        raise UsageProblem(
            "Give --pinned-message-id or --clear-pinned-message, not both.",
            param="--pinned-message-id",
        )
    if pinned_message_id is not None:
        changes["pinned_message_id"] = nonempty(pinned_message_id, "--pinned-message-id")
    elif clear_pinned_message:
        changes["pinned_message_id"] = None
    if not changes:
        raise UsageProblem(
            "Nothing to change: give --pin/--unpin, --mute/--unmute, --archive/--unarchive, "
            "--archived-at, --pinned-message-id or --clear-pinned-message.",
        )
    return changes


def risk_profile_changes(
    profile_type: str | None, score: str | None, details: str | None
) -> RiskProfileUpdateParams:
    """The update of `risk update`: only what was asked for; nothing at all is a usage error."""
    changes: RiskProfileUpdateParams = {}
    if profile_type is not None:
        changes["profile_type"] = profile_type
        nonempty(profile_type, "--profile-type")
    if score is not None:
        changes["score"] = parse_score(score)
    if details is not None:
        changes["details"] = parse_details(details)
    if not changes:
        raise UsageProblem("Nothing to change: give --profile-type, --score or --details.")
    return changes


def risk_profile_fields(
    customer_id: str, profile_type: str, score: str, details: str | None
) -> RiskProfileCreateParams:
    """The fields of `risk create`; details default to an empty object."""
    return {
        "customer_id": nonempty(customer_id, "--customer-id") or customer_id,
        "profile_type": nonempty(profile_type, "--profile-type") or profile_type,
        "score": parse_score(score),
        "details": {} if details is None else parse_details(details),
    }
