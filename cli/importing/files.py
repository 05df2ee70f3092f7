"""The records of an import file: JSON lines or CSV with a header row, read as a stream.

The file is read line by line (at most one record in memory, each at most MAX_RECORD_BYTES), so
a file of any size takes flat memory. A problem with the file as a whole (it cannot be opened,
its first record is not a JSON object, its CSV header names an unknown column) is a UsageProblem
raised before the first record is handed out, so nothing has been written yet. A problem with
one record later on is that record's `problem`, and the others go on.

CSV cells are text; each column has a type that says how its text becomes a JSON value (see
`parse_cell`): an empty cell is an absent field. CSV is read strictly: a quoted cell may span
lines, but a broken one (a quote never closed, text after a closing quote, a cell over
MAX_RECORD_BYTES) is a failed record naming the line where it starts, and nothing after it is
read: past a broken quote no line can be trusted to start a record (see `_csv`).
"""

from __future__ import annotations

import codecs
import csv
import json
import os
import stat
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any, BinaryIO, Literal

from convrisk.cli.errors import UsageProblem
from convrisk.cli.options.times import parse_time
from convrisk.cli.options.values import JSON_KINDS, parse_json_object, parse_number
from convrisk.cli.settings import IMPORT_FORMATS as FORMATS

# The service takes request bodies of up to 1 MiB: a longer record could not be sent anyway.
MAX_RECORD_BYTES = 1024 * 1024
# The chunks in which a file is read to check that it is UTF-8 throughout.
_SCAN_CHUNK = 1024 * 1024
# Blank lines read ahead to find the first record (a file of only blank lines is empty).
_MAX_LEADING_BLANK_LINES = 10_000
Format = Literal["jsonl", "csv"]
CellType = Literal["text", "nullable_text", "bool", "number", "time", "json"]
_EXTENSIONS: dict[str, Format] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".jsonlines": "jsonl",
    ".json": "jsonl",
    ".csv": "csv",
}
_BOOLEANS = {"true": True, "1": True, "false": False, "0": False}
_ARRAY_HINT = " (a JSON array? Give one object per line: jq -c '.[]' FILE)"
_SHOWN_NAME = 40


@dataclass
class Record:
    """One record of the file: where it starts, its fields, or what is wrong with it."""

    line: int
    fields: dict[str, Any] | None
    problem: UsageProblem | None = None
    # The problem is the file's, not this record's (a CSV header): nothing can be read.
    fatal: bool = False


class Source:
    """An import file (or stdin) opened for reading in binary, with how much has been read."""

    def __init__(self, spec: str) -> None:
        self.spec = spec
        self.position = 0
        self.size: int | None = None
        self.oversized = False  # set when a line longer than MAX_RECORD_BYTES was cut out
        self._utf8_checked = False  # refuse_non_utf8 has read it all
        if spec == "-":
            self.name = "stdin"
            self.path: Path | None = None
            stdin = getattr(sys.stdin, "buffer", None)
            if stdin is None:  # started with stdin closed
                raise UsageProblem("Cannot read stdin: it is closed.", param="FILE")
            self._stream: BinaryIO = stdin
            self._owned = False
            return
        self.path = Path(spec).expanduser()
        self.name = str(self.path)
        try:
            self._stream = open(self.path, "rb")  # noqa: SIM115 - closed by close()
        except FileNotFoundError:
            raise UsageProblem(f"Cannot read {self.name}: no such file.", param="FILE") from None
        except IsADirectoryError:
            raise UsageProblem(
                f"Cannot read {self.name}: it is a directory.", param="FILE"
            ) from None
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise UsageProblem(f"Cannot read {self.name}: {reason}.", param="FILE") from None
        self._owned = True
        info = os.fstat(self._stream.fileno())
        if stat.S_ISREG(info.st_mode):
            self.size = info.st_size

    def close(self) -> None:
        """Close the file (never stdin)."""
        if self._owned:
            self._stream.close()

    def rewind(self) -> None:
        """Go back to the start, to read the records again (they are counted first when the
        count must be known before a write). stdin, a pipe or a FIFO is first copied to an
        unnamed temporary file, a chunk at a time: it can be read only once."""
        try:
            if not self._stream.seekable():
                import shutil
                import tempfile

                spool = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
                shutil.copyfileobj(self._stream, spool, 1024 * 1024)
                self.close()
                self._stream, self._owned = spool, True
                self.size = spool.tell()
            self._stream.seek(0)
        except OSError as exc:
            raise UsageProblem(
                f"Cannot read {self.name} again: {exc.strerror or exc}.", param="FILE"
            ) from None
        self.position = 0
        self.oversized = False

    def __enter__(self) -> Source:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def refuse_non_utf8(self) -> None:
        """Refuse a source with bytes that are not UTF-8 anywhere (a UsageProblem naming the
        line, before any record is read, so before anything is written), then read it again
        from where it was. Read in chunks: flat memory whatever the size. Only a source that
        can be read again (a file, also as stdin, or stdin already spooled); a pipe is read as
        it comes, and a line of it that is not UTF-8 is that record's failure."""
        stream = self._stream
        if self._utf8_checked:
            return
        try:
            if not stream.seekable():
                return
            start = stream.tell()
        except OSError:
            return
        decoder = codecs.getincrementaldecoder("utf-8")()
        line = 1
        try:
            while True:
                chunk = stream.read(_SCAN_CHUNK)
                try:
                    decoder.decode(chunk, final=not chunk)
                except UnicodeDecodeError as exc:
                    # The error's bytes are the decoder's: a split sequence kept from the chunk
                    # before (no newline in it), then this chunk.
                    data = exc.object
                    line += data.count(b"\n", 0, exc.start)
                    raise UsageProblem(
                        f"{self.name} is not UTF-8 text: line {line} has byte "
                        f"0x{data[exc.start]:02x}; nothing was written.",
                        param="FILE",
                    ) from None
                if not chunk:
                    break
                line += chunk.count(b"\n")
            stream.seek(start)
            self._utf8_checked = True
        except OSError as exc:
            raise UsageProblem(
                f"Cannot read {self.name}: {exc.strerror or exc}.", param="FILE"
            ) from None

    def lines(self) -> Iterator[tuple[int, bytes]]:
        """(line number, bytes with the line break) for every line, each at most
        MAX_RECORD_BYTES: the rest of a longer line is skipped and `oversized` is set."""
        stream = self._stream
        number = 0
        while True:
            try:
                raw = stream.readline(MAX_RECORD_BYTES + 1)
            except OSError as exc:
                raise UsageProblem(
                    f"Cannot read {self.name} after line {number}: {exc.strerror or exc}.",
                    param="FILE",
                ) from None
            if not raw:
                return
            number += 1
            self.position += len(raw)
            if len(raw) > MAX_RECORD_BYTES and not raw.endswith(b"\n"):
                while raw and not raw.endswith(b"\n"):
                    raw = stream.readline(65536)
                    self.position += len(raw)
                self.oversized = True
                yield number, b"\n"
                continue
            yield number, raw


def detect_format(source: Source, given: str | None, first_line: bytes | None) -> Format:
    """--format if given, else the file's extension, else the first line: `{` (or `[`) is JSON
    lines."""
    if given is not None:
        if given not in FORMATS:
            raise UsageProblem(
                f"--format must be one of {', '.join(FORMATS)}, not {given!r}.", param="--format"
            )
        return "jsonl" if given == "jsonl" else "csv"
    if source.path is not None:
        known = _EXTENSIONS.get(source.path.suffix.lower())
        if known is not None:
            return known
    text = (first_line or b"").lstrip(codecs.BOM_UTF8).lstrip()
    return "jsonl" if text.startswith((b"{", b"[")) else "csv"


def read(
    source: Source, given_format: str | None, columns: Mapping[str, CellType], what: str
) -> tuple[Format, Iterator[Record]]:
    """The format and the records of the source; the first record (or the CSV header) is read
    and checked now, so that a file that is not JSON lines or CSV fails before anything runs.

    `columns` are the known fields and their CSV cell types; `what` names the records
    ("risk profiles") in messages.
    """
    lines = source.lines()
    leading: list[tuple[int, bytes]] = []
    first: bytes | None = None
    for number, raw in lines:
        leading.append((number, raw))
        if raw.strip() or len(leading) > _MAX_LEADING_BLANK_LINES:
            first = raw
            break
    fmt = detect_format(source, given_format, first)
    everything = chain(leading, lines)
    records = _jsonl(source, everything) if fmt == "jsonl" else _csv(source, everything, columns)
    head = next(records, None)
    if head is not None and head.problem is not None and (head.fatal or fmt == "jsonl"):
        kind = "JSON lines" if fmt == "jsonl" else "CSV with a header row"
        raise UsageProblem(
            f"{source.name} is not {kind} of {what}: {head.problem.message}",
            param=head.problem.param,
        )
    return fmt, chain([head] if head is not None else [], records)


def _decode(raw: bytes, number: int) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageProblem(
            f"line {number} is not UTF-8 text (byte 0x{raw[exc.start]:02x})."
        ) from None
    return text.lstrip("\ufeff") if number == 1 else text


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


# Built once: json.loads with options builds a decoder on every call.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def _jsonl(source: Source, lines: Iterator[tuple[int, bytes]]) -> Iterator[Record]:
    decode = _DECODER.decode
    for number, raw in lines:
        if source.oversized:
            source.oversized = False
            yield Record(number, None, _too_long(number))
            continue
        if not raw.strip():
            continue
        try:
            text = _decode(raw, number)
            value = decode(text)
        except UsageProblem as exc:
            yield Record(number, None, exc)
            continue
        except (ValueError, RecursionError) as exc:
            hint = _ARRAY_HINT if text.lstrip().startswith("[") else ""
            problem = UsageProblem(f"line {number} is not valid JSON: {exc}{hint}.")
            yield Record(number, None, problem)
            continue
        if not isinstance(value, dict):
            kind = JSON_KINDS.get(type(value), "a number")
            hint = _ARRAY_HINT if isinstance(value, list) else ""
            problem = UsageProblem(f"line {number} is {kind}, not a JSON object{hint}.")
            yield Record(number, None, problem)
            continue
        yield Record(number, value)


def _too_long(number: int) -> UsageProblem:
    return UsageProblem(
        f"line {number} is longer than {MAX_RECORD_BYTES // (1024 * 1024)} MiB, the most a "
        "record may be."
    )


def _csv(
    source: Source, lines: Iterator[tuple[int, bytes]], columns: Mapping[str, CellType]
) -> Iterator[Record]:
    # A cell may be as long as a record; the csv module's limit (128 KiB by default) is global.
    csv.field_size_limit(MAX_RECORD_BYTES)
    text_lines = (raw.decode("utf-8", "surrogateescape") for _, raw in lines)
    # Strict: a quote that is never closed is an error at the end of the file (or once its cell
    # passes the limit), never a cell that silently swallows the lines after it.
    reader = csv.reader(text_lines, strict=True)
    header: list[str] | None = None
    last_line = 0
    while True:
        start = last_line + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            # The reader cannot tell where the broken cell ends, so whatever it would read next
            # may be the middle of that cell: this record fails and the file is read no further.
            source.oversized = False
            yield Record(start, None, _broken_csv(start, exc), fatal=header is None)
            return
        last_line = reader.line_num
        if source.oversized:
            source.oversized = False
            yield Record(start, None, _too_long(start), fatal=header is None)
            if header is None:  # no header to read the rows by
                return
            continue
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        if header is None:
            try:
                header = _header(row, columns, start)
            except UsageProblem as exc:
                yield Record(start, None, exc, fatal=True)
                return
            continue
        yield _csv_record(row, header, columns, start)


def _broken_csv(line: int, exc: csv.Error) -> UsageProblem:
    """The failure of a record whose CSV is broken, naming the line where the record starts."""
    reason = str(exc)
    if reason.startswith("unexpected end of data"):
        what = "has a quoted cell that is never closed (the file ends inside it)"
    elif reason.startswith("field larger than field limit"):
        what = (
            f"has a cell longer than {MAX_RECORD_BYTES // (1024 * 1024)} MiB (a quote never "
            "closed?)"
        )
    else:
        what = f"is not valid CSV: {reason}"
    return UsageProblem(
        f"line {line} {what}. Nothing after it was read: past a broken quote no line can be "
        "trusted to start a record. Fix the file and run the same command again (what was "
        "created is replayed, not created twice)."
    )


def _header(row: list[str], columns: Mapping[str, CellType], line: int) -> list[str]:
    names = [cell.strip() for cell in row]
    if names:
        names[0] = names[0].lstrip("\ufeff").strip()
    known = ", ".join(columns)
    seen: set[str] = set()
    for position, name in enumerate(names, 1):
        if not name:
            raise UsageProblem(
                f"line {line} (the header) has an empty column name at position {position} "
                f"(a trailing comma?). Known columns: {known}."
            )
        if not is_text(name):
            raise UsageProblem(f"line {line} (the header) is not UTF-8 text.")
        shown = name if len(name) <= _SHOWN_NAME else name[:_SHOWN_NAME] + "..."
        if name not in columns:
            raise UsageProblem(
                f"line {line} (the header): unknown column {shown!r}. Known columns: {known}.",
                param=shown,
            )
        if name in seen:
            raise UsageProblem(
                f"line {line} (the header): column {shown!r} is given twice.", param=shown
            )
        seen.add(name)
    return names


def is_text(value: str) -> bool:
    """Whether a string decoded with surrogateescape was valid UTF-8 (no lone surrogates)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _csv_record(
    row: list[str], header: list[str], columns: Mapping[str, CellType], line: int
) -> Record:
    if len(row) != len(header):
        problem = UsageProblem(
            f"line {line} has {len(row)} cells where the header has {len(header)} columns."
        )
        return Record(line, None, problem)
    fields: dict[str, Any] = {}
    try:
        for name, cell in zip(header, row, strict=True):
            if cell == "":
                continue
            fields[name] = parse_cell(cell, columns[name], name)
    except UsageProblem as exc:
        return Record(line, None, UsageProblem(f"line {line}: {exc.message}", param=exc.param))
    return Record(line, fields)


def parse_cell(cell: str, kind: CellType, column: str) -> Any:
    """The JSON value of a non-empty CSV cell of a column of this type.

    text: as written. nullable_text: as written, `null` is null. bool: true, false, 1 or 0 (any
    case). number: a JSON number (whole numbers stay integers). time: the TIME of
    `--archived-at` (ISO 8601, Unix seconds, @SECONDS, now), or `null`. json: a JSON object.
    """
    if kind == "text":
        return cell
    if kind == "nullable_text":
        return None if cell == "null" else cell
    if kind == "bool":
        value = _BOOLEANS.get(cell.strip().lower())
        if value is None:
            raise UsageProblem(f"{column} must be true or false, not {cell!r}.", param=column)
        return value
    if kind == "number":
        return parse_number(cell, column)
    if kind == "time":
        return None if cell.strip() == "null" else parse_time(cell, column)
    return parse_json_object(cell, column, "the cell")
