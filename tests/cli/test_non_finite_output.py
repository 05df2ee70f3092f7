"""JSON output is always valid JSON (RFC 8259; issue 29, finding 7): a number JSON cannot hold
(NaN, Infinity, 1e400) from a journal or a service is printed as a string, with one note on
stderr, in every format that prints JSON, in-process over many values."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from convrisk.cli.output import Printer
from tests.cli.conftest import Invoke

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
    from convrisk.cli.kinds import ANSWER

    with printer.records(ANSWER, many=True) as sink:
        sink.write([{"n": float("inf")}, {"n": float("nan")}])
        sink.write([{"n": float("-inf")}])
    out, err = capsys.readouterr()
    assert [strict(line)["n"] for line in out.splitlines()] == ["Infinity", "NaN", "-Infinity"]
    assert len(notes(err)) == 1
