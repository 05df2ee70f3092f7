"""printable(): text from data shown safely on a terminal line, and TSV's reversible form."""

from __future__ import annotations

import json

import pytest

from convrisk.api_client.text import printable, printable_json, safe_line, safe_lines, unprintable

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


@pytest.mark.parametrize("mark", ["\u200e", "\u200f", "\u061c"])
def test_bidi_marks_are_escaped_too(mark: str) -> None:
    assert printable(f"a{mark}b") == f"a\\u{ord(mark):04x}b"


def test_keep_newlines_keeps_the_lines_of_a_traceback_and_escapes_the_rest() -> None:
    text = f"Traceback:\n  line {HOSTILE}\r\nEnd\t."
    assert printable(text, keep_newlines=True) == (
        "Traceback:\n  line \\x1b]0;pwned\\x07\\x1b[2J\\r\nEnd\\t."
    )


@pytest.mark.parametrize("indent", [None, 2])
def test_json_form_escapes_what_json_leaves_raw_and_keeps_every_value(indent: int | None) -> None:
    value = {"a": HOSTILE, "b": "\u2028\u2029\x85\x9b\x7f\u202e", "c": "\ud800", "d": "Zoë 🙂\\"}
    text = printable_json(json.dumps(value, ensure_ascii=False, indent=indent))
    assert printable(text, keep_newlines=True) == text  # nothing left a terminal acts on
    text.encode("utf-8")  # a lone surrogate no longer fails to encode
    assert json.loads(text) == value
    assert "Zoë 🙂" in text  # other non-ASCII stays as it is


@pytest.mark.parametrize("brk", ["\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x85", "\u2028"])
def test_a_safe_line_is_one_line_whatever_line_break_the_text_holds(brk: str) -> None:
    line = safe_line(f"failed: boom{brk}service  ok")
    assert line.startswith("failed: boom\\") and line.endswith("service  ok")
    assert len(line.splitlines()) == 1


def test_safe_lines_keep_only_newlines_as_line_breaks() -> None:
    text = safe_lines("frame 1\nframe 2\rforged\u2028forged\x85forged")
    assert text.splitlines() == ["frame 1", "frame 2\\rforged\\u2028forged\\x85forged"]
