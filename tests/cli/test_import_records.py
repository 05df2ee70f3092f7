"""The records of a CSV import file, read strictly: a broken quote is one failed record naming
the line where it starts, and nothing after it is read."""

from __future__ import annotations

from pathlib import Path

from convrisk.cli.importing.files import Record, Source, read
from convrisk.cli.importing.run import CONVERSATION_IMPORT


def records_of(tmp_path: Path, text: str) -> list[Record]:
    path = tmp_path / "c.csv"
    path.write_text(text)
    with Source(str(path)) as source:
        _, records = read(source, None, CONVERSATION_IMPORT.columns, "conversations")
        return list(records)


def test_an_unclosed_quote_is_one_failed_record_not_a_merge(tmp_path: Path) -> None:
    (record,) = records_of(tmp_path, 'contact_id\n"c_1\nc_2\nc_3\n')
    assert (record.line, record.fields) == (2, None)
    assert record.problem is not None and "never closed" in record.problem.message


def test_a_cell_over_the_limit_is_not_resynchronised_into_records(tmp_path: Path) -> None:
    cell = "".join(f"c_{n:06d}\n" for n in range(120_000))
    records = records_of(tmp_path, f'contact_id\nc_0\n"{cell}')
    assert [(r.line, r.fields) for r in records] == [(2, {"contact_id": "c_0"}), (3, None)]
    assert records[1].problem is not None and "longer than 1 MiB" in records[1].problem.message


def test_a_closed_quoted_cell_spans_lines_and_the_next_record_keeps_its_line(
    tmp_path: Path,
) -> None:
    records = records_of(tmp_path, 'contact_id\n"c\n1"\nc_2\n')
    assert [(r.line, r.fields) for r in records] == [
        (2, {"contact_id": "c\n1"}),
        (4, {"contact_id": "c_2"}),
    ]
