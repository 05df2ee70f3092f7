"""JSON output is always valid JSON (RFC 8259; issue 29, finding 7): a number JSON cannot hold
(NaN, Infinity, 1e400) from a journal or a service is printed as a string, with one note on
stderr, in every format that prints JSON (and by its name in tables), in-process over many values;
a record holding one is journaled with the strings, and undo leaves it alone."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from convrisk.cli.output.printer import Printer
from tests.cli.conftest import Invoke
from tests.e2e.odd_service import (
    FINITE_PROFILE,
    NON_FINITE,
    NonFiniteRecords,
    printed_profile,
)
from tests.loopback import on_loopback, running, url_of

# As written in the journal or the answer, and the string it is printed as.
VALUES = [
    ("1e400", "Infinity"),
    ("-1e400", "-Infinity"),
    ("1e309", "Infinity"),
    ("NaN", "NaN"),
    ("Infinity", "Infinity"),
    ("-Infinity", "-Infinity"),
    ("1" * 400 + ".5", "Infinity"),
]


def strict(text: str) -> Any:
    """JSON text read as RFC 8259 has it: NaN and Infinity are errors."""

    def refuse(name: str) -> None:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


def notes(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "JSON cannot hold" in line]


@pytest.fixture
def journal(invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A journal of one risk profile's create (score 5, details {"a": 1})."""
    path = tmp_path / "journal.jsonl"
    monkeypatch.setenv("CONVRISK_JOURNAL", str(path))
    invoke(
        "risk", "create", "--customer-id", "c", "--profile-type", "t", "--score", "5",
        "--details", '{"a": 1}',
    ).ok()  # fmt: skip
    return path


def with_values(journal: Path, written: str) -> None:
    """The journal's line again, its score and a details value being `written`."""
    line = journal.read_text().splitlines()[0]
    assert '"score":5' in line and '"a":1}' in line, line
    changed = line.replace('"score":5', f'"score":{written}').replace(
        '"a":1}', f'"a":[{written},{{"b":{written}}}]}}'
    )
    journal.write_text(changed + "\n")


@pytest.mark.parametrize(("written", "printed"), VALUES)
@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_history_prints_a_non_finite_number_as_a_string_with_one_note(
    invoke: Invoke, journal: Path, written: str, printed: str, fmt: str
) -> None:
    with_values(journal, written)
    result = invoke("history", "-o", fmt).ok()
    rows = [strict(result.stdout)] if fmt == "json" else [strict(x) for x in result.lines()]
    entry = rows[0][0] if fmt == "json" else rows[0]
    assert entry["after"]["score"] == printed
    assert entry["after"]["details"] == {"a": [printed, {"b": printed}]}
    assert len(notes(result.stderr)) == 1


@pytest.mark.parametrize(("written", "printed"), VALUES[:4])
def test_history_through_jq_and_as_tsv_sees_the_string_too(
    invoke: Invoke, journal: Path, written: str, printed: str
) -> None:
    with_values(journal, written)
    jq = invoke("history", "-o", "jsonl", "--jq", ".after.score | type").ok()
    assert jq.lines() == ["string"]
    assert len(notes(jq.stderr)) == 1
    header, row = invoke("history").ok().lines()
    cells = dict(zip(header.split("\t"), row.split("\t"), strict=True))
    assert strict(cells["after"].replace("\\\\", "\\"))["score"] == printed


def test_finite_numbers_are_printed_as_they_were_and_no_note(invoke: Invoke, journal: Path) -> None:
    with_values(journal, "1e300")
    result = invoke("history", "-o", "jsonl").ok()
    assert strict(result.stdout)["after"]["score"] == 1e300
    assert notes(result.stderr) == []


@pytest.mark.parametrize(("written", "printed"), VALUES)
@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_a_piped_api_answer_holding_one_is_written_again_with_strings(
    capsys: pytest.CaptureFixture[str], written: str, printed: str, fmt: str
) -> None:
    printer = Printer(fmt, env={})
    printer.answer(f'{{"data": [{{"n": {written}}}], "s": "x\\u001b"}}'.encode())
    out, err = capsys.readouterr()
    assert strict(out) == {"data": [{"n": printed}], "s": "x\x1b"}
    assert out.endswith("\n") and out.count("\n") == 1
    assert len(notes(err)) == 1


@pytest.mark.parametrize(
    "body",
    [
        b'{"n": 1e300, "s": "NaN and Infinity in a string", "e": "1e400"}',
        b'{"n":  1,\n "caf\xc3\xa9": true}',
        b"not JSON, NaN",
        b'{"id": "' + b"9" * 400 + b'"}',
    ],
)
def test_any_other_answer_is_written_byte_for_byte(
    capsysbinary: pytest.CaptureFixture[bytes], body: bytes
) -> None:
    Printer("json", env={}).answer(body)
    out, err = capsysbinary.readouterr()
    assert out == body + b"\n"
    assert b"JSON cannot hold" not in err


def test_the_note_is_printed_once_a_run(capsys: pytest.CaptureFixture[str]) -> None:
    printer = Printer("jsonl", env={})
    from convrisk.cli.output.kinds import ANSWER

    with printer.records(ANSWER, many=True) as sink:
        sink.write([{"n": float("inf")}, {"n": float("nan")}])
        sink.write([{"n": float("-inf")}])
    out, err = capsys.readouterr()
    assert [strict(line)["n"] for line in out.splitlines()] == ["Infinity", "NaN", "-Infinity"]
    assert len(notes(err)) == 1


# -- records from a service (get, list, update) ----------------------------------------------


class WithAnEscape(NonFiniteRecords):
    """NonFiniteRecords, and one record holding NaN beside a string with an escape sequence."""

    records: ClassVar[dict[str, str]] = NonFiniteRecords.records | {
        "rp_zesc": '{"id":"rp_zesc","customer_id":"c\\u001b[31mred","score":NaN,"details":{}}'
    }


@pytest.fixture
def service(monkeypatch: pytest.MonkeyPatch, home: Path) -> Iterator[str]:
    """WithAnEscape on loopback; CONVRISK_BASE_URL and TOKEN point at it, no retries."""
    WithAnEscape.seen = []
    with running(on_loopback(WithAnEscape)) as server:
        monkeypatch.setenv("CONVRISK_BASE_URL", url_of(server))
        monkeypatch.setenv("CONVRISK_TOKEN", "tok_non_finite_0123456789")
        monkeypatch.setenv("CONVRISK_MAX_RETRIES", "0")
        monkeypatch.setenv("NO_COLOR", "1")
        yield url_of(server)


EVERY = [printed_profile(n, printed) for n, (_, printed) in enumerate(NON_FINITE)]
ESCAPED = {"id": "rp_zesc", "customer_id": "c\x1b[31mred", "score": "NaN", "details": {}}
LISTED = [*EVERY, strict(FINITE_PROFILE), ESCAPED]


@pytest.mark.parametrize(
    ("command", "page_size"),
    [
        ("list", "10"),
        ("list --all", "100"),
        ("list --all", "2"),
        ("list --limit 3", "2"),
        ("get", ""),
    ],
)
@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_records_holding_them_are_printed_with_strings_and_one_note(
    service: str,
    invoke: Invoke,
    monkeypatch: pytest.MonkeyPatch,
    command: str,
    page_size: str,
    fmt: str,
) -> None:
    if page_size:
        monkeypatch.setenv("CONVRISK_PAGE_SIZE", page_size)
    ids = [record["id"] for record in LISTED]
    args = command.split() + (ids if command == "get" else [])
    result = invoke("risk", *args, "-o", fmt).ok()
    printed = strict(result.stdout) if fmt == "json" else [strict(x) for x in result.lines()]
    assert printed == LISTED[: 3 if "--limit" in command else None]
    assert len(notes(result.stderr)) == 1


def test_a_record_with_only_finite_numbers_has_no_note(service: str, invoke: Invoke) -> None:
    for fmt in ("json", "jsonl", "csv", "table"):
        result = invoke("risk", "get", "rp_ok", "-o", fmt).ok()
        assert notes(result.stderr) == [], fmt
    listed = invoke("risk", "list", "--all", "-o", "jsonl").ok()
    assert len(notes(listed.stderr)) == 1  # the others hold some


@pytest.mark.parametrize("fmt", ["jsonl", "json"])
def test_jq_reads_the_strings(service: str, invoke: Invoke, fmt: str) -> None:
    program = ".score" if fmt == "jsonl" else ".[].score"
    result = invoke("risk", "list", "--all", "-o", fmt, "--jq", program).ok()
    assert result.lines() == ["Infinity", "-Infinity", "NaN", "Infinity", "1.5", "NaN"]
    assert len(notes(result.stderr)) == 1
    typed = invoke("risk", "get", "rp_nf1", "--jq", ".details.a[1].b | type").ok()
    assert typed.lines() == ["string"] and len(notes(typed.stderr)) == 1


def test_tables_and_csv_show_the_names(service: str, invoke: Invoke) -> None:
    header, *rows = invoke("risk", "list", "--all").ok().lines()
    cells = [dict(zip(header.split("\t"), row.split("\t"), strict=True)) for row in rows]
    assert [row["score"] for row in cells] == [
        "Infinity",
        "-Infinity",
        "NaN",
        "Infinity",
        "1.5",
        "NaN",
    ]
    assert strict(cells[2]["details"]) == {"a": ["NaN", {"b": "NaN"}], "f": 0.5}
    assert cells[5]["customer_id"] == "c\\x1b[31mred"
    as_csv = invoke("risk", "list", "--all", "-o", "csv").ok()
    scores = [row["score"] for row in csv.DictReader(io.StringIO(as_csv.stdout))]
    # "-Infinity" is not a number a spreadsheet reads: it is kept from being taken as a formula.
    assert scores == ["Infinity", "'-Infinity", "NaN", "Infinity", "1.5", "NaN"]
    assert len(notes(as_csv.stderr)) == 1


def test_the_terminal_table_and_detail_view_show_the_names_safely(
    service: str, invoke: Invoke, terminal: Callable[..., None]
) -> None:
    terminal("stdout")
    table = invoke("risk", "list", "--all").ok()
    assert "-Infinity" in table.stdout and "\x1b" not in table.stdout
    assert len(notes(table.stderr)) == 1
    detail = invoke("risk", "get", "rp_nf1").ok()
    lines = {line.split()[0]: line.split(None, 1)[1] for line in detail.lines() if line[:1] != " "}
    assert lines["score"] == "-Infinity"
    assert '"-Infinity",' in detail.stdout  # details, as indented JSON
    assert len(notes(detail.stderr)) == 1
    escaped = invoke("risk", "get", "rp_zesc").ok()
    assert "\x1b" not in escaped.stdout and "NaN" in escaped.stdout
    shown_json = invoke("risk", "get", "rp_nf2", "-o", "json").ok()
    assert strict(shown_json.stdout) == EVERY[2] and "\n" in shown_json.stdout.strip()


def test_an_update_answered_with_one_prints_it_and_journals_strings(
    service: str, invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "journal.jsonl"
    monkeypatch.setenv("CONVRISK_JOURNAL", str(path))
    result = invoke("risk", "update", "rp_nf0", "--score", "5", "-o", "json").ok()
    assert strict(result.stdout) == EVERY[0] and len(notes(result.stderr)) == 1
    (entry,) = [strict(line) for line in path.read_text().splitlines()]
    assert entry["before"] == entry["after"] == EVERY[0]
    assert entry["non_finite"] is True and "Infinity" not in path.read_text().replace(
        '"Infinity"', ""
    )
    refused = invoke("undo", "--last")
    assert refused.code == 1
    assert "numbers JSON cannot hold (NaN, Infinity, 1e400) written as strings" in refused.stderr
    assert [s for s in WithAnEscape.seen if s.startswith("PUT")] == ["PUT /v1/risk-profiles/rp_nf0"]


def test_a_score_that_is_not_finite_is_still_refused_on_the_way_in(
    service: str, invoke: Invoke
) -> None:
    for value in ("NaN", "Infinity", "1e400"):
        refused = invoke("risk", "update", "rp_ok", "--score", value)
        assert refused.code == 2, refused.stderr
    assert invoke("risk", "update", "rp_ok", "--details", '{"a": NaN}').code == 2
    assert not any(s.startswith("PUT") for s in WithAnEscape.seen)


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
def test_the_journal_writes_them_as_strings_and_marks_the_entry(
    tmp_path: Path, value: float
) -> None:
    from convrisk.cli.journal import entries as journal
    from convrisk.cli.journal.journaled import Recorder

    path = tmp_path / "journal.jsonl"
    recorder = Recorder(
        path, profile="p", backend="remote", target="t", argv=["convrisk"], warn=print
    )
    record = {"id": "rp_1", "score": value, "details": {"a": [value, 1.5]}}
    finite = {"id": "rp_2", "score": 1e300, "details": {}}
    recorder.write(
        [
            recorder.entry("update", {"status": "ok"}, id="rp_1", before=finite, after=record),
            recorder.entry("delete", {"status": "ok"}, id="rp_2", before=finite),
        ]
    )
    marked, plain = [strict(line) for line in path.read_text().splitlines()]
    name = "NaN" if value != value else "Infinity" if value > 0 else "-Infinity"
    assert marked["after"] == {"id": "rp_1", "score": name, "details": {"a": [name, 1.5]}}
    assert marked["before"] == finite and marked["non_finite"] is True
    assert plain["before"] == finite and "non_finite" not in plain
    # A value that is not an entry (a part of a line) is written likewise, and not marked.
    assert strict(journal.line_text({"n": value})) == {"n": name}
