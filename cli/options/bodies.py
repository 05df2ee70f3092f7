"""The request bodies of `conv` and `risk` create and update, built from their options."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, cast

from convrisk.cli.errors import UsageProblem
from convrisk.cli.options.times import parse_time
from convrisk.cli.options.values import nonempty, parse_details, parse_number, parse_score

if TYPE_CHECKING:
    from convrisk.api_client.record_types import (
        ConversationCreateParams,
        ConversationUpdateParams,
        RiskProfileCreateParams,
        RiskProfileUpdateParams,
    )
    from convrisk.api_client.resources import ResourceName


def option_name(field: str) -> str:
    """The command-line option of a field: `contact_id` -> `--contact-id`."""
    return "--" + field.replace("_", "-")


def _one_of(listed: list[str]) -> str:
    return listed[0] if len(listed) == 1 else f"{', '.join(listed[:-1])} or {listed[-1]}"


def conversation_party(contact_id: str | None, group_id: str | None) -> ConversationCreateParams:
    """Exactly one of --contact-id and --group-id (an empty value counts as absent)."""
    from convrisk.api_client.resources import CONVERSATIONS

    given = {"contact_id": contact_id, "group_id": group_id}
    stripped = {name: (given[name] or "").strip() for name in CONVERSATIONS.one_of}
    party = {name: value for name, value in stripped.items() if value}
    options = [option_name(name) for name in CONVERSATIONS.one_of]
    if len(party) > 1:
        raise UsageProblem(f"Give {_one_of(options)}, not both.", param=options[-1])
    if not party:
        # The metavar of each option is its first letter: --contact-id C.
        shown = [f"{option} {option[2].upper()}" for option in options]
        raise UsageProblem(f"Give {_one_of(shown)}.", param=options[0])
    return cast("ConversationCreateParams", party)


def more_changes(resource: ResourceName, changes: dict[str, Any], given: dict[str, Any]) -> None:
    """Add to `changes` the fields given by options named after them (`--topic T`): a text
    as it is (an empty one clears a field that can be null), a number, a TIME or a JSON object
    parsed as --score, --archived-at and --details are."""
    from convrisk.api_client.resources import RESOURCES

    for name, text in given.items():
        if text is None:
            continue
        field, option = RESOURCES[resource].field(name), option_name(name)
        if field.type == "string":
            clears = field.nullable and not text.strip()
            value: Any = None if clears else nonempty(text, option)
        elif field.type == "number":
            value = parse_number(text, option)
        elif field.type == "timestamp":
            value = parse_time(text, option)
        else:
            value = parse_details(text)
        changes[name] = value


def conversation_changes(
    pin: bool | None,
    mute: bool | None,
    archive: bool | None,
    archived_at: str | None,
    pinned_message_id: str | None,
    clear_pinned_message: bool,
    **more: str | None,
) -> ConversationUpdateParams:
    """The update of `conv update`: only what was asked for; nothing at all is a usage error.

    `more` are the values of options named after the fields they set (see `more_changes`).
    """
    changes: dict[str, Any] = {}
    if pin is not None:
        changes["is_pinned"] = pin
    if mute is not None:
        changes["is_muted"] = mute
    if archived_at is not None:
        if archive is not None:
            # One rule both ways: --archive means now, --unarchive never: neither goes with a TIME.
            given = "--archive" if archive else "--unarchive"
            raise UsageProblem(
                f"Give one of --archive (now), --unarchive or --archived-at TIME, not {given} "
                "and --archived-at.",
                param="--archived-at",
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
    more_changes("conversations", changes, more)
    if not changes:
        options = ["--pin/--unpin", "--mute/--unmute", "--archive/--unarchive", "--archived-at"]
        options += ["--pinned-message-id", "--clear-pinned-message"]
        raise UsageProblem(
            f"Nothing to change: give {_one_of(options + [option_name(n) for n in more])}."
        )
    return cast("ConversationUpdateParams", changes)


def risk_profile_changes(
    profile_type: str | None, score: str | None, details: str | None, **more: str | None
) -> RiskProfileUpdateParams:
    """The update of `risk update`: only what was asked for; nothing at all is a usage error.

    `more` are the values of options named after the fields they set (see `more_changes`).
    """
    changes: dict[str, Any] = {}
    if profile_type is not None:
        changes["profile_type"] = profile_type
        nonempty(profile_type, "--profile-type")
    if score is not None:
        changes["score"] = parse_score(score)
    if details is not None:
        changes["details"] = parse_details(details)
    more_changes("risk_profiles", changes, more)
    if not changes:
        options = ["--profile-type", "--score", "--details", *(option_name(n) for n in more)]
        raise UsageProblem(f"Nothing to change: give {_one_of(options)}.")
    return cast("RiskProfileUpdateParams", changes)


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
