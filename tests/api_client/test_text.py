"""printable(): text from data shown safely on a terminal line, and TSV's reversible form."""

from __future__ import annotations

import pytest

from api_client.text import printable, unprintable

HOSTILE = "\x1b]0;pwned\x07\x1b[2J"


def test_an_osc_title_and_clear_screen_sequence_is_shown_escaped() -> None:
    assert printable(HOSTILE) == "\\x1b]0;pwned\\x07\\x1b[2J"


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("a\tb", "a\\tb"),
        ("a\nb", "a\\nb"),
        ("a\rb", "a\\rb"),
        ("\x7f", "\\x7f"),
        ("\x9b", "\\x9b"),  # C1 CSI: some terminals act on it as ESC [
        ("\u202e", "\\u202e"),  # right-to-left override
        ("\u2028", "\\u2028"),
        ("\ud800", "\\ud800"),  # a lone surrogate cannot be encoded: never a crash
    ],
)
def test_each_kind_of_control_character_is_escaped(raw: str, shown: str) -> None:
    assert printable(raw) == shown


def test_ordinary_text_and_unicode_pass_unchanged() -> None:
    text = "Zoë 北京 🙂 a\\b"
    assert printable(text) is text


def test_tsv_form_doubles_backslashes_so_a_literal_backslash_n_differs_from_a_newline() -> None:
    assert printable("a\\nb", escape_backslash=True) == "a\\\\nb"
    assert printable("a\nb", escape_backslash=True) == "a\\nb"


@pytest.mark.parametrize(
    "raw", ["", "plain", "a\\nb\nc", HOSTILE, "\\\\x1b\x1b", "\ud800\\u202e\u202e", "\\"]
)
def test_tsv_form_round_trips(raw: str) -> None:
    assert unprintable(printable(raw, escape_backslash=True)) == raw
