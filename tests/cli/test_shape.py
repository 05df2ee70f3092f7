"""cli/shape.py and the printer's JqSink in-process: streaming page by page, nothing from an
incomplete document, the field checks, and what jq is given."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from convrisk.api_client.records import Conversation, Page
from convrisk.cli import iostreams, jq_sink
from convrisk.cli.errors import JqFailed, UsageProblem
from convrisk.cli.kinds import DELETIONS
from convrisk.cli.output import Printer
from convrisk.cli.resource_kinds import CONVERSATIONS
from convrisk.cli.shape import FieldChoice, JqProgram, Shape, make_shape, select

KNOWN = tuple(column.key for column in CONVERSATIONS.columns)


def page(*ids: str, has_more: bool = True) -> Page[Conversation]:
    """A list page of conversations with these ids (and a contact id, no other field)."""
    data: list[Any] = [{"id": id, "contact_id": f"c_{id}"} for id in ids]
    return {"data": data, "has_more": has_more}


def test_jq_on_each_record_prints_each_page_before_the_next_is_fetched(
    capsys: pytest.CaptureFixture[str],
) -> None:
    printer = Printer("jsonl", env={}, shape=Shape(jq=JqProgram(".id", each=True)))
    seen_before_second_page: list[str] = []

    def pages() -> Iterator[Page[Conversation]]:
        yield page("conv_3", "conv_2")
        seen_before_second_page.append(capsys.readouterr().out)
        yield page("conv_1", has_more=False)

    printer.pages(CONVERSATIONS, pages(), hint_more=False)
    assert seen_before_second_page == ["conv_3\nconv_2\n"]
    assert capsys.readouterr().out == "conv_1\n"


def test_jq_over_the_document_waits_for_the_whole_list(capsys: pytest.CaptureFixture[str]) -> None:
    printer = Printer("json", env={}, shape=Shape(jq=JqProgram("map(.id)", each=False)))
    seen: list[str] = []

    def pages() -> Iterator[Page[Conversation]]:
        yield page("conv_2")
        seen.append(capsys.readouterr().out)
        yield page("conv_1", has_more=False)

    printer.pages(CONVERSATIONS, pages(), hint_more=False)
    assert seen == [""]
    assert capsys.readouterr().out == '["conv_2","conv_1"]\n'


def test_an_empty_list_is_an_empty_array_to_jq(capsys: pytest.CaptureFixture[str]) -> None:
    printer = Printer("json", env={}, shape=Shape(jq=JqProgram("[length, type]", each=False)))
    printer.pages(CONVERSATIONS, [page(has_more=False)], hint_more=False)
    assert capsys.readouterr().out == '[0,"array"]\n'
    printer.pages(CONVERSATIONS, [page("a", "b", has_more=False)], hint_more=False)
    assert capsys.readouterr().out == '[2,"array"]\n'


def test_a_list_that_fails_part_way_gives_jq_no_document(
    capsys: pytest.CaptureFixture[str],
) -> None:
    printer = Printer("json", env={}, shape=Shape(jq=JqProgram("length", each=False)))

    def pages() -> Iterator[Page[Conversation]]:
        yield page("conv_2")
        raise ConnectionError("dropped")

    with pytest.raises(ConnectionError):
        printer.pages(CONVERSATIONS, pages(), hint_more=False)
    assert capsys.readouterr().out == ""  # not "1": that count would be a lie


def test_a_program_that_prints_much_is_written_in_pieces(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    writes: list[str] = []
    printer = Printer("jsonl", env={}, shape=Shape(jq=JqProgram("range(30000)", each=True)))
    monkeypatch.setattr(printer, "write", writes.append)
    printer.one(CONVERSATIONS, {"id": "conv_1"})
    assert len(writes) > 1 and all(len(text) <= jq_sink.JQ_CHUNK + 16 for text in writes)
    assert "".join(writes).split() == [str(n) for n in range(30000)]


def test_results_before_a_jq_error_are_printed_then_it_fails(
    capsys: pytest.CaptureFixture[str],
) -> None:
    program = JqProgram('.id, (if .id == "b" then error("stop") else empty end)', each=True)
    printer = Printer("jsonl", env={}, shape=Shape(jq=program))
    with pytest.raises(JqFailed, match=r"^--jq failed: stop$"):
        printer.pages(CONVERSATIONS, [page("a", "b", "c", has_more=False)], hint_more=False)
    assert capsys.readouterr().out == "a\nb\n"


def test_a_lone_surrogate_reaches_jq_as_the_replacement_character() -> None:
    program = JqProgram(".contact_id", each=True)
    text = '[{"contact_id":"a\ud800b"}]'
    assert list(program.run(text)) == ["a\ufffdb"]


def test_non_string_results_are_jqs_own_compact_json() -> None:
    program = JqProgram(".", each=False)
    assert list(program.run('{"a":[1,2.50,null],"b":100000000000000000001}')) == [
        ['{"a":[1,2.50,null],"b":100000000000000000001}']
    ]
    assert list(JqProgram("nan, infinite", each=False).run("null")) == [
        ["null"],
        ["1.7976931348623157e+308"],
    ]


def test_on_a_terminal_jq_strings_are_escaped_except_newlines_and_tabs(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(iostreams, "is_terminal", lambda stream: True)
    printer = Printer("json", env={}, shape=Shape(jq=JqProgram(".contact_id", each=False)))
    printer.one(CONVERSATIONS, {"id": "x", "contact_id": "a\tb\nc\x1b[2J\u202e\x85"})
    assert capsys.readouterr().out == "a\tb\nc\\x1b[2J\\u202e\\x85\n"


def test_fields_name_the_problem() -> None:
    def names(text: str, known: tuple[str, ...] = KNOWN) -> tuple[str, ...]:
        return FieldChoice(text, known, "conversation").names()

    assert names(" is_muted , id") == ("is_muted", "id")
    for text, message in [
        ("", "--fields needs at least one field name; a conversation has: id, contact_id"),
        ("id,", "--fields 'id,' has an empty name"),
        ("id,colour,size", "Unknown fields 'colour', 'size' in --fields; a conversation has: id,"),
        ("id,is_muted,id", "--fields names 'id' more than once."),
    ]:
        with pytest.raises(UsageProblem, match="^" + message.replace("(", r"\(")) as caught:
            names(text)
        assert caught.value.param == "--fields"


def test_a_field_a_record_lacks_stays_missing() -> None:
    assert select({"id": "a", "x": 1}, ("x", "contact_id", "id")) == {"x": 1, "id": "a"}


def test_the_shape_of_the_options_together() -> None:
    deletion = FieldChoice("deleted", tuple(c.key for c in DELETIONS.columns), "deletion")
    assert make_shape(deletion, None, output_flag=None, fmt="table").fields == ("deleted",)
    with pytest.raises(UsageProblem, match="id format"):
        make_shape(deletion, None, output_flag=None, fmt="id")
    # --jq decides the format: the settings' id does not make --fields an error then.
    shaped = make_shape(deletion, ".", output_flag=None, fmt="id")
    assert shaped.jq is not None and not shaped.jq.each
    each = make_shape(None, ".", output_flag="jsonl", fmt="jsonl").jq
    assert each is not None and each.each
    for fmt in ("table", "csv", "id"):
        with pytest.raises(UsageProblem, match=f"cannot be combined with -o {fmt}"):
            make_shape(None, ".", output_flag=fmt, fmt=fmt)
    with pytest.raises(UsageProblem, match=r"^--jq does not compile: .*[^:]$") as caught:
        make_shape(None, "{", output_flag=None, fmt="table")
    assert "\n" not in caught.value.message and caught.value.param == "--jq"


def test_a_trailing_comment_in_the_program_is_fine() -> None:
    assert list(JqProgram(".a # the a", each=False).run('{"a":"x"}')) == ["x"]
    assert list(JqProgram("def f: .a; f", each=True).run('[{"a":"y"}]')) == ["y"]


def test_a_kind_shaped_by_fields_it_lacks_shows_them_as_plain_columns() -> None:
    shaped = DELETIONS.only(["deleted", "note"])
    assert [(c.key, c.title, c.kind) for c in shaped.columns] == [
        ("deleted", "DELETED", "bool"),
        ("note", "NOTE", "text"),
    ]
    assert shaped.terminal_columns == shaped.columns and shaped.fields == ("deleted", "note")


def test_jq_alone_takes_the_records_json_text_but_fields_keep_the_records() -> None:
    program = JqProgram(".id", each=True)
    assert Printer("jsonl", env={}, shape=Shape(jq=program)).takes_json_text()
    assert Printer("table", env={}, shape=Shape(jq=program)).takes_json_text()
    assert not Printer("jsonl", env={}, shape=Shape(("id",), program)).takes_json_text()
    assert not Printer("jsonl", env={}, shape=Shape(("id",))).takes_json_text()


TRICKY_ROWS: list[dict[str, Any]] = [
    {"id": "a", "s": "line\nbreak\ttab\r", "n": 0.1, "big": 2**70, "none": None},
    {"id": "b", "s": "é 漢字 😀 \u2028 \x7f\x85 \x1b[31m", "n": 1e300, "nested": {"l": [1, []]}},
    {"id": "c", "s": "lone \ud800 surrogate", "n": -0.0, "flag": True},
    {"id": "d", "s": "", "n": 2**63 - 1, "list": [{"x": "y"}, None, False]},
    {"id": "e", "s": 'quote " backslash \\', "n": 5e-324},
]


@pytest.mark.parametrize(
    ("program", "each"),
    [
        (".", True),
        (".id, .s, .n", True),  # several results per record
        ('select(.id == "b" or .id == "d") | {id, n}', True),  # none for most
        ("empty", True),
        ("(.n | . * 1e400), 1e400, 0.1, .big", True),
        ('.id, if .id == "d" then error("stop") else .s end', True),  # an error part way
        (".", False),
        ('map(.s) | join("|")', False),
        ('.[] | if .id == "c" then error("stop") else .n end', False),
    ],
)
def test_jq_given_the_json_text_prints_exactly_what_it_prints_given_the_records(
    capsys: pytest.CaptureFixture[str], program: str, each: bool
) -> None:
    from convrisk.api_client.records import json_text

    def run(as_text: bool) -> tuple[str, str | None]:
        printer = Printer("jsonl", env={}, shape=Shape(jq=JqProgram(program, each=each)))
        failure = None
        try:
            if as_text:
                texts = [
                    {
                        "data": [json_text(row) for row in TRICKY_ROWS[i : i + 2]],
                        "ids": [row["id"] for row in TRICKY_ROWS[i : i + 2]],
                        "has_more": i + 2 < len(TRICKY_ROWS),
                    }
                    for i in range(0, len(TRICKY_ROWS), 2)
                ]
                printer.json_pages(CONVERSATIONS, texts, hint_more=False)  # type: ignore[arg-type]
            else:
                pages = [
                    {"data": TRICKY_ROWS[i : i + 2], "has_more": i + 2 < len(TRICKY_ROWS)}
                    for i in range(0, len(TRICKY_ROWS), 2)
                ]
                printer.pages(CONVERSATIONS, pages, hint_more=False)  # type: ignore[arg-type]
        except JqFailed as exc:
            failure = exc.message
        return capsys.readouterr().out, failure

    from_records = run(as_text=False)
    assert from_records[0] or program == "empty"
    assert run(as_text=True) == from_records
