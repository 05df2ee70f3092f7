"""The request bodies of `conv` and `risk` create and update, built from their options as the
resources' description makes them (cli.options.described)."""

from __future__ import annotations

import copy
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from convrisk.cli.errors import UsageProblem
from convrisk.cli.options.times import parse_time
from convrisk.cli.options.values import (
    nonempty,
    parse_json_object,
    parse_number,
    read_json_argument,
)

if TYPE_CHECKING:
    from convrisk.api_client.record_types import RiskProfileUpdateParams
    from convrisk.api_client.resources import Field, Resource


def verb_key(field: Field) -> str:
    """The parameter of a field's `--mute/--unmute` option: `mute`."""
    assert field.verbs is not None
    return field.verbs[0].replace("-", "_")


def clear_key(field: Field) -> str:
    """The parameter of a field's `--clear-...` option: `clear_pinned_message`."""
    return field.clear.replace("-", "_")


def update_fields(resource: Resource) -> tuple[Field, ...]:
    """The fields an update takes, in the order of their options: those with verbs first."""
    return tuple(sorted(resource.updatable(), key=lambda field: field.verbs is None))


def update_options(field: Field) -> list[str]:
    """The options that set `field`, as the help lists them: `--mute/--unmute`, `--archived-at`."""
    options = [] if field.verbs is None else ["--{}/--{}".format(*field.verbs)]
    if field.type != "boolean":
        options.append(field.option)
    if field.clear:
        options.append(f"--{field.clear}")
    return options


def _one_of(listed: list[str]) -> str:
    return listed[0] if len(listed) == 1 else f"{', '.join(listed[:-1])} or {listed[-1]}"


def _value(field: Field, text: str) -> Any:
    """The value of a field given as text on its option: a string as it is (an empty one clears
    a nullable field that has no `--clear-...`), a number, a TIME or a JSON object."""
    option = field.option
    if field.type == "number":
        return parse_number(text, option)
    if field.type == "timestamp":
        return parse_time(text, option)
    if field.type == "object":
        read, source = read_json_argument(text, option, example=f"{field.name}.json")
        return parse_json_object(read, option, source)
    if field.nullable and not field.clear and not text.strip():
        return None
    return nonempty(text, option)


def _party(resource: Resource, given: Mapping[str, str | None]) -> dict[str, Any]:
    """Exactly one of the `one_of` fields (an empty value counts as absent), stripped."""
    fields = [resource.field(name) for name in resource.one_of]
    stripped = {field.name: (given.get(field.name) or "").strip() for field in fields}
    party = {name: value for name, value in stripped.items() if value}
    options = [field.option for field in fields]
    if len(party) > 1:
        raise UsageProblem(f"Give {_one_of(options)}, not both.", param=options[-1])
    if not party:
        shown = [f"{field.option} {field.value_name}" for field in fields]
        raise UsageProblem(f"Give {_one_of(shown)}.", param=options[0])
    return party


def create_body(resource: Resource, given: Mapping[str, str | None]) -> dict[str, Any]:
    """The body of a create from its options; a field left out takes its `client_default`."""
    body = _party(resource, given) if resource.one_of else {}
    for field in resource.creatable():
        if field.name in resource.one_of:
            continue
        text = given.get(field.name)
        if text is None:
            body[field.name] = copy.deepcopy(field.client_default)
        else:
            body[field.name] = _value(field, text)
    return body


def update_body(resource: Resource, given: Mapping[str, Any]) -> dict[str, Any]:
    """The update from its options: only what was asked for; nothing at all is a usage error."""
    changes: dict[str, Any] = {}
    for field in update_fields(resource):
        verb = None if field.verbs is None else given.get(verb_key(field))
        text = None if field.type == "boolean" else given.get(field.name)
        clear = bool(field.clear) and bool(given.get(clear_key(field)))
        if field.verbs is not None and text is not None and verb is not None:
            # One rule both ways: the first verb means now, the second never: neither goes
            # with a TIME.
            on, off = (f"--{word}" for word in field.verbs)
            raise UsageProblem(
                f"Give one of {on} (now), {off} or {field.option} {field.value_name}, not "
                f"{on if verb else off} and {field.option}.",
                param=field.option,
            )
        if text is not None and clear:
            raise UsageProblem(
                f"Give {field.option} or --{field.clear}, not both.", param=field.option
            )
        if text is not None:
            changes[field.name] = _value(field, text)
        elif verb is not None and field.type == "boolean":
            changes[field.name] = verb
        elif verb is not None:
            changes[field.name] = int(time.time()) if verb else None
        elif clear:
            changes[field.name] = None
    if not changes:
        options = [option for field in update_fields(resource) for option in update_options(field)]
        raise UsageProblem(f"Nothing to change: give {_one_of(options)}.")
    return changes


def risk_profile_changes(
    profile_type: str | None, score: str | None, details: str | None
) -> RiskProfileUpdateParams:
    """The update of the ui's risk profile form, as `risk update` makes it from its options."""
    from convrisk.api_client.resources import RISK_PROFILES

    given = {"profile_type": profile_type, "score": score, "details": details}
    return cast("RiskProfileUpdateParams", update_body(RISK_PROFILES, given))
