"""The ui's toggle keys and the FLAGS column come from the resource description alone."""

from __future__ import annotations

import dataclasses

from convrisk.api_client.resources import CONVERSATIONS, RESOURCES, Field
from convrisk.cli.output.resource_kinds import kind_of
from convrisk.cli.ui.browser import keys_help, toggle_bindings, toggles

FLAGGED = Field(
    "is_flagged",
    "boolean",
    update=True,
    title="FLAGGED",
    key="f",
    verbs=("flag", "unflag"),
    done=("flagged", "unflagged"),
    flag="flagged",
)
# A test-local description: the conversations with one more toggle.
FLAGGED_CONVERSATIONS = dataclasses.replace(CONVERSATIONS, fields=(*CONVERSATIONS.fields, FLAGGED))


def flags(record: dict[str, object]) -> str:
    kind = kind_of(FLAGGED_CONVERSATIONS)
    column = next(c for c in kind.terminal_columns if c.key == "flags")
    return column.cell({"id": "conv_1", **record})


def test_a_described_boolean_with_a_key_gets_its_binding_after_the_ordered_keys() -> None:
    plain = [b.key for b in toggle_bindings(toggles([CONVERSATIONS]))]
    bindings = toggle_bindings(toggles([FLAGGED_CONVERSATIONS]))
    shown = [(b.key, b.action, b.description, b.show) for b in bindings]
    assert shown[-1] == ("f", "flip('is_flagged')", "Flag", False)
    assert [key for key, *_ in shown] == [*plain, "f"]


def test_a_described_toggle_is_listed_in_the_keys_help() -> None:
    def toggle_line(text: str) -> str:
        return next(line for line in text.splitlines() if "(or undo them: un-)" in line)

    plain = keys_help(toggles([CONVERSATIONS]))
    text = keys_help(toggles([FLAGGED_CONVERSATIONS]))
    before, after = toggle_line(plain), toggle_line(text)
    assert after[:19].split() == [*before[:19].split(), "f"]
    assert after[19:] == before[19:].replace(" (or undo", ", flag (or undo")
    assert text.replace(after, before) == plain


def test_a_described_flag_shows_in_the_flags_column_only_when_set() -> None:
    assert flags({"is_flagged": True, "is_muted": True}) == "muted, flagged"
    assert flags({"is_flagged": False, "is_muted": True}) == "muted"
    # A word with the value comes after the plain words.
    assert flags({"is_flagged": True, "pinned_message_id": "m_1"}) == "flagged, message m_1"


def test_the_toggles_are_the_described_fields_with_a_key() -> None:
    described = {
        field.name for resource in RESOURCES.values() for field in resource.fields if field.key
    }
    found = toggles(RESOURCES.values())
    assert set(found) == described
    assert all(field.verb and len(field.done) == 2 for _, field in found.values())
