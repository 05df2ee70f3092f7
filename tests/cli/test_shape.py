"""cli/output/fields.py and the printer's JqSink in-process: streaming page by page, nothing from an
incomplete document, the field checks, and what jq is given; and the variants of
tests/e2e/test_shape.py (each behaviour on the local database and over HTTP, every format)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from convrisk.api_client import Client
from convrisk.api_client.page import Page
from convrisk.api_client.record_types import Conversation
from convrisk.cli.errors import JqFailed, UsageProblem
from convrisk.cli.output import iostreams
from convrisk.cli.output import jq as jq_sink
from convrisk.cli.output.fields import FieldChoice, JqProgram, Shape, make_shape, select
from convrisk.cli.output.kinds import DELETIONS
from convrisk.cli.output.printer import Printer
from convrisk.cli.output.resource_kinds import CONVERSATIONS
from convrisk.local_backend.backend import LocalBackend
from tests.cli.conftest import Backends, Invoke, Result
from tests.cli.run_with_env import Runs
from tests.e2e.test_shape import (
    CONV_FIELDS,
    DOCUMENT_PROGRAMS,
    EACH_PROGRAMS,
    ESC_GROUP,
    _record_path,
    lines,
    seed,
    seed_profile,
)
from tests.local_backend.varied import fill_varied

KNOWN = tuple(column.key for column in CONVERSATIONS.columns)


def page(*ids: str, has_more: bool = True) -> Page[Conversation]:
    """A list page of conversations with these ids (and a contact id, no other field)."""
    data: list[Any] = [{"id": id, "contact_id": f"c_{id}"} for id in ids]
    return Page(has_more, records=data)


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
    assert Printer("jsonl", env={}, shape=Shape(jq=program)).view() == "json"
    assert Printer("table", env={}, shape=Shape(jq=program)).view() == "json"
    assert Printer("jsonl", env={}, shape=Shape(("id",), program)).view() == "records"
    assert Printer("jsonl", env={}, shape=Shape(("id",))).view() == "records"


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
                texts: list[Page[Any]] = [
                    Page(
                        i + 2 < len(TRICKY_ROWS),
                        texts=[json_text(row) for row in TRICKY_ROWS[i : i + 2]],
                        ids=[row["id"] for row in TRICKY_ROWS[i : i + 2]],
                    )
                    for i in range(0, len(TRICKY_ROWS), 2)
                ]
                printer.pages(CONVERSATIONS, texts, view="json", hint_more=False)
            else:
                pages: list[Page[Any]] = [
                    Page(i + 2 < len(TRICKY_ROWS), records=TRICKY_ROWS[i : i + 2])
                    for i in range(0, len(TRICKY_ROWS), 2)
                ]
                printer.pages(CONVERSATIONS, pages, hint_more=False)
        except JqFailed as exc:
            failure = exc.message
        return capsys.readouterr().out, failure

    from_records = run(as_text=False)
    assert from_records[0] or program == "empty"
    assert run(as_text=True) == from_records


# -- the variants of tests/e2e/test_shape.py: each behaviour on both backends, every format ------


@dataclass
class Shaped:
    """convrisk in-process on one backend (`either`), and a Python client on the same database
    to seed it."""

    runs: Runs
    client: Client

    def run(self, *args: str, stdin: str | None = None, **env: str) -> Result:
        """Run `convrisk ARGS` with `env` for this run; never raises on failure."""
        return self.runs.run(*args, stdin=stdin, **env)

    def ok(self, *args: str, stdin: str | None = None, **env: str) -> str:
        """stdout of a run that must succeed."""
        return self.runs.ok(*args, stdin=stdin, **env)

    def count(self, resource: str = "conversations") -> int:
        """How many records of a resource exist now."""
        target = getattr(self.client, resource)
        return sum(len(page["data"]) for page in target.iter_pages({}, limit=None))


@pytest.fixture
def shaped(either: Backends, backend: LocalBackend, monkeypatch: pytest.MonkeyPatch) -> Shaped:
    """Each test once on the local database, once over HTTP against an in-process serve of it."""
    return Shaped(Runs(either.invoke, monkeypatch), Client(backend))


def test_fields_choose_and_order_the_columns_of_tsv_and_csv(shaped: Shaped) -> None:
    first, second, third = seed(shaped.client)
    tsv = shaped.ok("conv", "list", "--fields", "is_muted,id")
    assert tsv.splitlines() == [
        "is_muted\tid",
        f"true\t{third['id']}",
        f"false\t{second['id']}",
        f"false\t{first['id']}",
    ]
    rows = list(
        csv.reader(io.StringIO(shaped.ok("conv", "list", "--fields", "group_id, id", "-o", "csv")))
    )
    assert rows == [
        ["group_id", "id"],
        ["", third["id"]],
        ["g_\\x1b[31mred", second["id"]],  # escaped, as in any CSV
        ["", first["id"]],
    ]


def test_fields_choose_and_order_the_keys_of_json_and_jsonl(shaped: Shaped) -> None:
    first, second, third = seed(shaped.client)
    wanted = ["group_id", "id", "is_muted"]
    as_json = json.loads(shaped.ok("conv", "list", "--fields", ",".join(wanted), "-o", "json"))
    expected = [{key: dict(record)[key] for key in wanted} for record in (third, second, first)]
    assert as_json == expected and [list(row) for row in as_json] == [wanted] * 3
    paged = shaped.ok(
        "conv", "list", "--all", "--fields", ",".join(wanted), "-o", "jsonl", CONVRISK_PAGE_SIZE="2"
    )
    assert lines(paged) == expected and [list(row) for row in lines(paged)] == [wanted] * 3
    one = json.loads(
        shaped.ok("conv", "get", first["id"], "--fields", "created_at,id", "-o", "json")
    )
    assert list(one.items()) == [("created_at", first["created_at"]), ("id", first["id"])]
    several = shaped.ok(
        "conv",
        "get",
        "-",
        "--fields",
        "id",
        "-o",
        "jsonl",
        stdin=f"{first['id']}\n{second['id']}\n",
    )
    assert lines(several) == [{"id": first["id"]}, {"id": second["id"]}]


def test_fields_apply_to_create_update_and_delete(shaped: Shaped) -> None:
    created = json.loads(
        shaped.ok(
            "conv",
            "create",
            "--contact-id",
            "c_new",
            "--fields",
            "contact_id,is_pinned",
            "-o",
            "json",
        )
    )
    assert created == {"contact_id": "c_new", "is_pinned": False}
    conv_id = shaped.ok("conv", "list", "-o", "id").strip()
    updated = shaped.ok("conv", "update", conv_id, "--pin", "--fields", "is_pinned")
    assert updated.splitlines() == ["is_pinned", "true"]
    profile = seed_profile(shaped.client)
    risk = json.loads(
        shaped.ok(
            "risk",
            "update",
            profile["id"],
            "--score",
            "80",
            "--fields",
            "score,details",
            "-o",
            "json",
        )
    )
    assert risk == {"score": 80, "details": profile["details"]}
    deleted = shaped.ok("conv", "delete", conv_id, "--yes", "--fields", "deleted", "-o", "jsonl")
    assert lines(deleted) == [{"deleted": True}]


def test_an_unknown_field_is_a_usage_error_that_lists_the_fields_and_creates_nothing(
    shaped: Shaped,
) -> None:
    result = shaped.run("conv", "create", "--contact-id", "c_x", "--fields", "id,colour")
    assert result.code == 2 and result.stdout == ""
    assert result.stderr == (
        f"Error: Unknown field 'colour' in --fields; a conversation has: {CONV_FIELDS}.\n"
    )
    assert shaped.count() == 0
    as_json = shaped.run("conv", "list", "--fields", "", "-o", "json")
    assert as_json.code == 2 and as_json.stdout == ""
    assert json.loads(as_json.stderr)["error"]["param"] == "--fields"
    deletion = shaped.run("conv", "delete", "conv_x", "--yes", "--fields", "score")
    assert deletion.code == 2 and "a deletion has: id, deleted." in deletion.stderr
    risk = shaped.run("risk", "list", "--fields", "id,id")
    assert risk.code == 2 and "--fields names 'id' more than once" in risk.stderr


def test_fields_with_the_id_format_is_a_usage_error(shaped: Shaped) -> None:
    seed(shaped.client)
    for extra in ({}, {"CONVRISK_OUTPUT": "id"}):
        args = ["conv", "list", "--fields", "id"] + ([] if extra else ["-o", "id"])
        result = shaped.run(*args, **extra)
        assert result.code == 2 and result.stdout == ""
        assert "--fields" in result.stderr and "id format" in result.stderr


def test_jq_with_jsonl_runs_on_each_record_across_pages(shaped: Shaped) -> None:
    first, second, third = seed(shaped.client)
    out = shaped.ok(
        "conv",
        "list",
        "--all",
        "-o",
        "jsonl",
        "--jq",
        "{id, n: 1}, .is_muted",
        CONVRISK_PAGE_SIZE="2",
    )
    assert out.splitlines() == [
        json.dumps({"id": third["id"], "n": 1}, separators=(",", ":")),
        "true",
        json.dumps({"id": second["id"], "n": 1}, separators=(",", ":")),
        "false",
        json.dumps({"id": first["id"], "n": 1}, separators=(",", ":")),
        "false",
    ]
    assert shaped.ok("conv", "get", first["id"], "-o", "jsonl", "--jq", ".id") == first["id"] + "\n"


def test_jq_without_o_or_with_json_runs_once_over_the_document(shaped: Shaped) -> None:
    first, second, third = seed(shaped.client)
    for output in ([], ["-o", "json"]):
        assert shaped.ok("conv", "list", *output, "--jq", "length") == "3\n"
        ids = shaped.ok("conv", "list", *output, "--jq", 'map(.id) | join(",")')
        assert ids == f"{third['id']},{second['id']},{first['id']}\n"
        one = shaped.ok("conv", "get", first["id"], *output, "--jq", "[type, .contact_id]")
        assert one == '["object","c_1"]\n'
        several = shaped.ok("conv", "get", first["id"], third["id"], *output, "--jq", "type")
        assert several == "array\n"
    # The settings' output format does not count: only -o chooses.
    assert shaped.ok("conv", "list", "--jq", "length", CONVRISK_OUTPUT="csv") == "3\n"
    assert shaped.ok("conv", "list", "--jq", "length", CONVRISK_OUTPUT="jsonl") == "3\n"


def test_jq_prints_strings_raw_and_other_values_as_compact_json(shaped: Shaped) -> None:
    seed(shaped.client)
    profile = seed_profile(shaped.client)
    out = shaped.ok("conv", "list", "-o", "jsonl", "--jq", ".group_id")
    assert out.splitlines() == ["null", ESC_GROUP, "null"]  # piped: raw, as jq -r
    details = shaped.ok("risk", "get", profile["id"], "--jq", ".details, .details.tab, .score")
    assert details.splitlines() == ['{"tab":"a\\tb","nested":{"n":[1,2]}}', "a\tb", "72.5"]
    assert shaped.ok("risk", "list", "--jq", "empty") == ""


def test_fields_come_first_then_jq(shaped: Shaped) -> None:
    seed(shaped.client)
    out = shaped.ok(
        "conv", "list", "-o", "jsonl", "--fields", "is_muted,id", "--jq", "keys_unsorted"
    )
    assert out.splitlines() == ['["is_muted","id"]'] * 3
    document = shaped.ok("conv", "list", "--fields", "contact_id", "--jq", "map(.contact_id)")
    assert document == '["c_3",null,"c_1"]\n'


def test_jq_that_does_not_compile_is_a_usage_error_with_jqs_message(shaped: Shaped) -> None:
    result = shaped.run("conv", "create", "--contact-id", "c_x", "--jq", ".id |||")
    assert result.code == 2 and result.stdout == ""
    assert result.stderr.startswith("Error: --jq does not compile: syntax error, unexpected")
    assert result.stderr.count("\n") == 1  # one line
    assert shaped.count() == 0
    undefined = shaped.run("risk", "list", "--jq", "nosuchfunction(1)", "-o", "jsonl")
    assert undefined.code == 2 and undefined.stdout == ""
    error = json.loads(undefined.stderr)["error"]
    assert error["param"] == "--jq" and "nosuchfunction/1 is not defined" in error["message"]
    empty = shaped.run("conv", "list", "--jq", "")
    assert empty.code == 2 and "--jq does not compile" in empty.stderr


def test_jq_with_o_table_csv_or_id_is_a_usage_error(shaped: Shaped) -> None:
    seed(shaped.client)
    for output in ("table", "csv", "id"):
        result = shaped.run("conv", "update", "conv_x", "--mute", "-o", output, "--jq", ".id")
        assert result.code == 2 and result.stdout == ""
        assert (
            f"--jq prints its own results and cannot be combined with -o {output}" in result.stderr
        )
    assert [c["is_muted"] for c in lines(shaped.ok("conv", "list", "-o", "jsonl"))] == [
        True,
        False,
        False,
    ]


def test_a_jq_error_on_the_data_stops_with_exit_1_after_the_results_before_it(
    shaped: Shaped,
) -> None:
    first, second, third = seed(shaped.client)
    program = 'if .contact_id == "c_1" then error("no way: \\(.id)") else .id end'
    result = shaped.run(
        "conv", "list", "--all", "-o", "jsonl", "--jq", program, CONVRISK_PAGE_SIZE="1"
    )
    assert result.code == 1
    assert result.stdout.splitlines() == [third["id"], second["id"]]
    error = {"type": "jq_error", "message": f"--jq failed: no way: {first['id']}", "param": "--jq"}
    assert result.stderr == json.dumps({"error": error}) + "\n"
    document = shaped.run("conv", "list", "--jq", ".[] | .contact_id | ascii_downcase")
    assert document.code == 1 and document.stdout == "c_3\n"
    assert document.stderr.startswith("Error: --jq failed: ")


def test_delete_with_jq(shaped: Shaped) -> None:
    first, second, _ = seed(shaped.client)
    out = shaped.ok(
        "conv",
        "delete",
        first["id"],
        second["id"],
        "--yes",
        "--jq",
        'map("\\(.id) \\(.deleted)")[]',
    )
    assert out.splitlines() == [f"{first['id']} true", f"{second['id']} true"]
    assert shaped.count() == 1


def test_several_ids_with_one_missing_run_jq_over_those_found(shaped: Shaped) -> None:
    first, _, third = seed(shaped.client)
    result = shaped.run(
        "conv", "get", first["id"], "conv_" + "0" * 26, third["id"], "--jq", "map(.id)"
    )
    assert result.code == 3
    assert json.loads(result.stdout) == [first["id"], third["id"]]
    assert "conv_" + "0" * 26 in result.stderr


@pytest.fixture(scope="module")
def varied_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The varied database of the export path's byte-identity tests."""
    path = tmp_path_factory.mktemp("jq-export") / "varied.db"
    fill_varied(path)
    return path


@pytest.mark.parametrize(
    ("command", "name"), [("conv", "conversations"), ("risk", "risk_profiles")]
)
def test_jq_on_the_local_export_path_prints_byte_for_byte_what_it_prints_from_records(
    varied_db: Path, invoke: Invoke, monkeypatch: pytest.MonkeyPatch, command: str, name: str
) -> None:
    runs = Runs(invoke, monkeypatch)
    for output, programs in (["-o", "jsonl"], EACH_PROGRAMS), ([], DOCUMENT_PROGRAMS):
        for program in programs:
            result = runs.run(
                "--db", str(varied_db), command, "list", "--all", *output, "--jq", program,
                CONVRISK_PAGE_SIZE="3",
            )  # fmt: skip
            assert result.code == 0, (program, result.stderr)
            expected, failure = _record_path(varied_db, name, program, each=bool(output))
            assert failure is None
            assert result.stdout.encode("utf-8") == expected, program
