"""An import file with bytes that are not UTF-8 anywhere is refused before anything is written
(issue 29, finding 9): exit 2, one line naming the line, in-process over many byte variants and
chunk boundaries. A pipe is read as it comes (tests/e2e/test_import.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from convrisk.cli.importing import files as records
from tests.cli.conftest import Invoke

GOOD = b'{"contact_id": "c_1"}\n'
# Bytes that are not UTF-8, and the byte a message names.
BAD = [
    (b"\xff", 0xFF),
    (b"\xc0\xae", 0xC0),  # an overlong dot
    (b"\xe0\x80\xae", 0xE0),  # an overlong dot in three bytes
    (b"\xed\xa0\x80", 0xED),  # a lone surrogate
    (b"\x80", 0x80),  # a continuation byte alone
    (b"caf\xe9", 0xE9),  # Latin-1
]


def jsonl(bad: bytes, line: int) -> bytes:
    """Five records; `bad` inside the contact id of record `line`."""
    rows = [b'{"contact_id": "c_%d"}\n' % n for n in range(1, 6)]
    rows[line - 1] = b'{"contact_id": "c_' + bad + b'"}\n'
    return b"".join(rows)


def refused(result_stderr: str, name: str, line: int, byte: int) -> None:
    (message,) = result_stderr.splitlines()
    assert message == (
        f"Error: {name} is not UTF-8 text: line {line} has byte 0x{byte:02x}; nothing was written."
    ), message


@pytest.mark.parametrize(("bad", "byte"), BAD)
@pytest.mark.parametrize("line", [2, 5])
@pytest.mark.parametrize("chunk", [records._SCAN_CHUNK, 7, 1])
def test_a_jsonl_file_is_refused_naming_the_line_and_nothing_is_written(
    invoke: Invoke,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    bad: bytes,
    byte: int,
    line: int,
    chunk: int,
) -> None:
    monkeypatch.setattr(records, "_SCAN_CHUNK", chunk)
    path = tmp_path / "c.jsonl"
    path.write_bytes(jsonl(bad, line))
    for args in ([], ["--dry-run"], ["--stop-on-error"]):
        result = invoke("conv", "import", str(path), *args)
        assert result.code == 2, (args, result.stderr)
        assert result.stdout == ""
        refused(result.stderr, str(path), line, byte)
    assert invoke("conv", "list", "-o", "id").ok().stdout == ""


def test_stdin_from_a_file_and_a_csv_inside_a_quoted_cell_are_refused_too(
    invoke: Invoke, tmp_path: Path
) -> None:
    result = invoke("conv", "import", "-", input=jsonl(b"\xff", 3))
    assert result.code == 2
    refused(result.stderr, "stdin", 3, 0xFF)
    path = tmp_path / "c.csv"
    path.write_bytes(b'contact_id,details\nc_1,"{""a"":\n""\xc3\xa9\xff""}"\n')
    csv = invoke("risk", "import", str(path))
    assert csv.code == 2
    refused(csv.stderr, str(path), 3, 0xFF)


def test_a_sequence_cut_short_at_the_end_of_the_file_is_refused(
    invoke: Invoke, tmp_path: Path
) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(GOOD * 3 + b"\xe2\x82")
    result = invoke("conv", "import", str(path))
    assert result.code == 2
    refused(result.stderr, str(path), 4, 0xE2)


@pytest.mark.parametrize("chunk", [1, 2, 3, 5])
def test_valid_utf8_split_across_chunks_is_not_refused(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    monkeypatch.setattr(records, "_SCAN_CHUNK", chunk)
    path = tmp_path / "c.jsonl"
    path.write_bytes(
        b"\xef\xbb\xbf"  # a byte order mark
        + '{"contact_id": "caf\u00e9 \u4e2d \U0001f600"}\n'.encode()
        + GOOD
    )
    result = invoke("conv", "import", str(path), "-o", "jsonl").ok()
    assert [row["status"] for row in result.jsonl()] == ["created", "created"]
