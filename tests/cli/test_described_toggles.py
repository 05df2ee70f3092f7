"""The ui's toggle keys and the FLAGS column come from the resource description alone."""

from __future__ import annotations

import dataclasses

from convrisk.api_client.resources import CONVERSATIONS, RESOURCES, Field
from convrisk.cli.output.resource_kinds import kind_of
from convrisk.cli.ui.browser import KEYS, keys_help, toggle_bindings, toggles

STARRED = Field(
    "is_starred",
    "boolean",
    update=True,
    title="STARRED",
    key="s",
    verbs=("star", "unstar"),
    done=("starred", "unstarred"),
    flag="starred",
)
# A test-local description: the conversations with one more toggle.
STARRED_CONVERSATIONS = dataclasses.replace(CONVERSATIONS, fields=(*CONVERSATIONS.fields, STARRED))


def flags(record: dict[str, object]) -> str:
    kind = kind_of(STARRED_CONVERSATIONS)
    column = next(c for c in kind.terminal_columns if c.key == "flags")
    return column.cell({"id": "conv_1", **record})


def test_a_described_boolean_with_a_key_gets_its_binding_after_the_ordered_keys() -> None:
    bindings = toggle_bindings(toggles([STARRED_CONVERSATIONS]))
    shown = [(b.key, b.action, b.description, b.show) for b in bindings]
    assert shown[-1] == ("s", "flip('is_starred')", "Star", False)
    assert [key for key, *_ in shown] == ["m", "p", "a", "s"]


def test_a_described_toggle_is_listed_in_the_keys_help() -> None:
    text = keys_help(toggles([STARRED_CONVERSATIONS]))
    line = " m  p  a  s        mute, pin, archive, star (or undo them: un-)"
    assert line in text.splitlines()
    unstarred = " m  p  a           mute, pin, archive (or undo them: un-)"
    assert text.replace(line, unstarred) == KEYS


def test_a_described_flag_shows_in_the_flags_column_only_when_set() -> None:
    assert flags({"is_starred": True, "is_muted": True}) == "muted, starred"
    assert flags({"is_starred": False, "is_muted": True}) == "muted"
    # A word with the value comes after the plain words.
    assert flags({"is_starred": True, "pinned_message_id": "m_1"}) == "starred, message m_1"


def test_the_toggles_are_the_described_fields_with_a_key() -> None:
    described = {
        field.name for resource in RESOURCES.values() for field in resource.fields if field.key
    }
    found = toggles(RESOURCES.values())
    assert set(found) == described
    assert all(field.verb and len(field.done) == 2 for _, field in found.values())
