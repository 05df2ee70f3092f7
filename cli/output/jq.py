"""`--jq`: a sink that runs the program over what would be printed and prints its results."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from convrisk.cli.errors import JqFailed
from convrisk.cli.output.cells import printable_json, shown_keeping_layout
from convrisk.cli.output.kinds import Kind, Row
from convrisk.cli.output.sinks import Out, Sink

if TYPE_CHECKING:
    from convrisk.cli.output.fields import JqProgram

# A --jq program's results are written in pieces of about this many characters (a program may
# print far more than it reads).
JQ_CHUNK = 64 * 1024
# libjq's message when a program indexes an array with a name (`.id` on a list's array).
_INDEXES_AN_ARRAY = "Cannot index array with string"


def _for_each(program: str) -> str:
    """The program run on each item of an array: `.[].id` for a plain path, else `.[] | P`."""
    text = program.strip()
    if re.fullmatch(r"(?:\.[A-Za-z_][A-Za-z0-9_]*)+", text):
        return ".[]" + text
    return f".[] | {text}" if len(text) <= 40 else ".[] | PROGRAM"


class JqSink(Sink):
    """`--jq`: the program's results, one per line: strings raw (as `jq -r`), other values as
    compact JSON. Once per record, page by page, with -o jsonl; else once over the document (the
    array of a list or of several ids, the object of one record), when it is complete.

    On a terminal a string's control characters are shown escaped, except newline and tab
    (the layout of `@tsv` and of multi-line strings); piped, strings are written as they are.
    """

    def __init__(
        self, out: Out, kind: Kind, many: bool, program: JqProgram, *, terminal: bool
    ) -> None:
        super().__init__(out, kind, many)
        self.program = program
        self.terminal = terminal
        self.pages: list[str] = []  # the document so far: each page's items (not `each`)

    def write(self, rows: Sequence[Row]) -> None:
        """Run the program on each record now, or keep the rows for the document."""
        if rows:
            from convrisk.cli.output.fields import json_array

            self._take(json_array(self.selected(rows))[1:-1], len(rows))

    def write_json(self, texts: Sequence[str]) -> None:
        """`write` for records given as their compact JSON text (`records.json_text`): the
        same array text, without parsing and dumping the records again."""
        if texts:
            self._take(",".join(texts), len(texts))

    def _take(self, items: str, count: int) -> None:
        """A page's records as the items of a JSON array (without its brackets): run the
        program on each of them now, or keep them for the document."""
        self.count += count
        if self.program.each:
            self._print("[" + items + "]")
        else:
            self.pages.append(items)

    def close(self) -> None:
        """Run the program over the whole document (when not `each`)."""
        if self.program.each or (not self.many and not self.pages):
            return
        pages, self.pages = self.pages, []
        if not self.many:
            self._print(pages[0])  # the one record's object
            return
        # The pages' items between brackets, commas between: one copy of the text in all.
        parts = ["["]
        for page in pages:
            parts += (page, ",")
        if pages:
            parts.pop()  # the last comma
        parts.append("]")
        del pages
        document = "".join(parts)
        del parts
        self._print(document)

    def fail(self) -> None:
        """After an error: a document left incomplete is not given to the program."""
        self.pages = []

    def run_on(self, json_text: str) -> None:
        """Print the program's results over this JSON text (the body of `convrisk api`)."""
        self._print(json_text)

    @contextmanager
    def _hinted(self) -> Iterator[None]:
        """A program that indexes the array of a list as if it were one record (`.id`) fails
        saying how to run it on each record."""
        try:
            yield
        except JqFailed as exc:
            if not (self.many and not self.program.each and _INDEXES_AN_ARRAY in exc.message):
                raise
            raise JqFailed(
                f"{exc.message.rstrip('.')}. With a list, --jq runs once over the array of the "
                f"{self.kind.plural}: write {_for_each(self.program.text)} for each of them, "
                "or add -o jsonl to run the program once per record.",
                param=exc.param,
            ) from None

    def _print(self, json_text: str) -> None:
        """The program's results over this text, written in chunks (also those before an
        error of the program, as jq does)."""
        from convrisk.cli.output.fields import ctrl_c_ends_at_once

        lines: list[str] = []
        size = 0
        terminal = self.terminal
        with ctrl_c_ends_at_once(), self._hinted():
            try:
                for result in self.program.run(json_text):
                    if type(result) is str:
                        if terminal:
                            result = shown_keeping_layout(result)
                    else:
                        result = printable_json(result[0])
                    lines.append(result)
                    size += len(result) + 1
                    if size >= JQ_CHUNK:
                        self.out.write("\n".join(lines) + "\n")
                        lines, size = [], 0
            finally:
                if lines:
                    self.out.write("\n".join(lines) + "\n")
