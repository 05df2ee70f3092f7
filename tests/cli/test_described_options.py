"""A field or filter added to the description gets its options and sets its value, with no other
code: each test adds one to a copy of a resource and runs a command made from the copy."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

import pytest
import typer
from click.testing import Result
from typer.testing import CliRunner

from convrisk.api_client.resources import CONVERSATIONS, RISK_PROFILES, Field, Filter, Resource
from convrisk.cli.errors import UsageProblem
from convrisk.cli.options import bodies, described


def _with(resource: Resource, *fields: Field, filters: tuple[Filter, ...] = ()) -> Resource:
    """A copy of `resource` with more fields and filters."""
    return dataclasses.replace(
        resource, fields=resource.fields + fields, filters=resource.filters + filters
    )


FLAGGED = Field(
    "is_flagged",
    "boolean",
    update=True,
    title="FLAGGED",
    verbs=("flag", "unflag"),
    verbs_help="Flag or unflag.",
)
NOTE = Field(
    "note",
    "string",
    nullable=True,
    update=True,
    option_help="Note this.",
    clear="clear-note",
    clear_help="Forget the note.",
)
SNOOZED = Field(
    "snoozed_at",
    "timestamp",
    nullable=True,
    update=True,
    option_help="Snooze until TIME",
    verbs=("snooze", "unsnooze"),
    verbs_help="Snooze now, or unsnooze.",
)


def _run(
    options: described.Options, made: Callable[[dict[str, Any]], Any], *args: str
) -> tuple[Result, list[Any]]:
    """Run a one-command app with these options; what `made` made of their values."""
    app = typer.Typer(rich_markup_mode=None)
    seen: list[Any] = []

    @app.command()
    @described.with_options(options, after="ctx")
    def command(ctx: typer.Context, **given: Any) -> None:
        seen.append(made(given))

    return CliRunner().invoke(app, list(args)), seen


def _update(resource: Resource, *args: str) -> tuple[Result, list[Any]]:
    options = described.update_options(resource)
    return _run(options, lambda given: bodies.update_body(resource, given), *args)


def _problem(result: Result) -> str:
    assert isinstance(result.exception, UsageProblem), result.output
    return result.exception.message


def test_a_boolean_field_with_verbs_gets_its_pair_of_options_and_sets_the_field() -> None:
    resource = _with(CONVERSATIONS, FLAGGED)
    assert _update(resource, "--flag")[1] == [{"is_flagged": True}]
    assert _update(resource, "--unflag", "--mute")[1] == [{"is_muted": True, "is_flagged": False}]
    shown = _update(resource, "--help")[0].output
    assert "--flag / --unflag" in shown and "Flag or unflag." in shown


def test_a_boolean_filter_gets_its_only_and_not_options() -> None:
    resource = _with(CONVERSATIONS, filters=(Filter("flagged", "boolean", "is_flagged"),))
    options = described.filter_options(resource)
    given = (
        _run(options, lambda g: described.filters(resource, g), *args)[1]
        for args in (["--flagged"], ["--not-flagged"], [])
    )
    assert [seen[0]["flagged"] for seen in given] == [True, False, None]


def test_a_string_filter_takes_its_fields_metavar_and_help_and_refuses_an_empty_value() -> None:
    field = Field("region", "string", create=True, option_help="A region's name.", metavar="R")
    resource = _with(RISK_PROFILES, field, filters=(Filter("region", "string", "region"),))
    options = described.filter_options(resource)
    seen = _run(options, lambda g: described.filters(resource, g), "--region", "eu")[1]
    assert seen[0]["region"] == "eu"
    assert "--region R" in _run(options, dict, "--help")[0].output
    empty = _run(options, lambda g: described.filters(resource, g), "--region", " ")[0]
    assert _problem(empty) == "--region must not be empty."


def test_nothing_to_change_names_the_new_options_with_the_others() -> None:
    plain = _problem(_update(CONVERSATIONS)[0])
    message = _problem(_update(_with(CONVERSATIONS, FLAGGED))[0])
    assert plain.startswith("Nothing to change: give --")
    assert "--flag/--unflag, " in message
    assert message.replace("--flag/--unflag, ", "") == plain


def test_a_nullable_string_with_a_clear_option_sets_or_clears_it_but_not_both() -> None:
    resource = _with(CONVERSATIONS, NOTE)
    assert _update(resource, "--note", "call back")[1] == [{"note": "call back"}]
    assert _update(resource, "--clear-note")[1] == [{"note": None}]
    both = _update(resource, "--note", "x", "--clear-note")[0]
    assert _problem(both) == "Give --note or --clear-note, not both."
    assert _problem(_update(resource, "--note", "")[0]) == "--note must not be empty."
    assert "--clear-note" in _update(resource, "--help")[0].output


def test_a_timestamp_with_verbs_means_now_or_null_or_takes_a_time_not_both() -> None:
    resource = _with(RISK_PROFILES, SNOOZED)
    before = int(time.time())
    [now] = _update(resource, "--snooze")[1]
    assert before <= now["snoozed_at"] <= time.time()
    assert _update(resource, "--unsnooze")[1] == [{"snoozed_at": None}]
    assert _update(resource, "--snoozed-at", "2024-05-01")[1] == [{"snoozed_at": 1714521600}]
    both = _update(resource, "--unsnooze", "--snoozed-at", "now")[0]
    assert _problem(both) == (
        "Give one of --snooze (now), --unsnooze or --snoozed-at TIME, not --unsnooze and "
        "--snoozed-at."
    )
    bad = _problem(_update(resource, "--snoozed-at", "soon")[0])
    assert bad.startswith("--snoozed-at: 'soon' is not a time.")
    shown = " ".join(_update(resource, "--help")[0].output.split())
    assert "--snoozed-at TIME Snooze until TIME: ISO 8601 (" in shown
    assert "Not with --snooze or --unsnooze." in shown


def test_a_required_create_field_is_a_required_option_and_an_optional_one_takes_its_default() -> (
    None
):
    resource = _with(
        RISK_PROFILES,
        Field("region", "string", create=True, required=True, option_help="A region's name."),
        Field("limits", "object", create=True, required=True, client_default={"max": 1}),
    )
    options = described.create_options(resource)
    args = ["--customer-id", "c", "--profile-type", "moderate", "--score", "7"]
    missing = _run(options, lambda g: bodies.create_body(resource, g), *args)[0]
    assert missing.exit_code == 2 and "Missing option '--region'" in missing.output
    _, seen = _run(options, lambda g: bodies.create_body(resource, g), *args, "--region", "eu")
    assert seen[0]["region"] == "eu" and seen[0]["limits"] == {"max": 1}
    assert seen[0]["score"] == 7 and seen[0]["details"] == {}


@pytest.mark.parametrize("typed", ["con", ""])
def test_the_values_the_interface_names_complete(typed: str) -> None:
    option = next(
        p for p in described.create_options(RISK_PROFILES) if p.name == "profile_type"
    ).annotation.__metadata__[0]
    found = option.autocompletion(None, [], typed)
    known = RISK_PROFILES.field("profile_type").known
    assert found == [name for name in known if name.startswith(typed)]
