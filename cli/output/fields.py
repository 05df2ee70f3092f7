"""`--fields` and `--jq` (DESIGN 4.3): which fields of a record are printed, and a jq program run
over what would be printed. Nothing prints here: the printer (cli/output/printer.py) applies a Shape
through its sinks.

`jq` (the PyPI package, which binds the real libjq) is imported only to compile a --jq program.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from convrisk.cli.errors import JqFailed, UsageProblem

# A string result of a --jq program comes back as it is (printed raw, as `jq -r` does), any
# other value as a one-item array of jq's own compact JSON of it (`tojson`), so that numbers,
# NaN and large integers are spelled as jq spells them. The newlines keep a trailing
# `# comment` of the user's program from swallowing the closing parenthesis.
_TAGGED = '(\n{}\n) | if type == "string" then . else [tojson] end'
# Once per record: the records of a page go to jq as one array (one call per page, not per
# record); `.[] | P` runs P on each of them alone, as `jq P` does on a stream of objects.
_EACH = ".[] | " + _TAGGED
# A lone surrogate (a remote's "\ud800") cannot reach jq as UTF-8: it becomes U+FFFD, as jq
# itself reads invalid UTF-8.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class FieldChoice:
    """`--fields` as given, and the fields the command's records have (checked by `names`)."""

    text: str
    known: tuple[str, ...]
    noun: str

    def names(self) -> tuple[str, ...]:
        """The chosen fields in order; a usage error for an unknown, empty or repeated name."""
        names = tuple(name.strip() for name in self.text.split(","))
        listed = ", ".join(self.known)
        if not any(names):
            raise UsageProblem(
                f"--fields needs at least one field name; a {self.noun} has: {listed}.",
                param="--fields",
            )
        if not all(names):
            raise UsageProblem(
                f"--fields {self.text!r} has an empty name (two commas, or one at an end).",
                param="--fields",
            )
        unknown = [name for name in names if name not in self.known]
        if unknown:
            which = "Unknown field" + ("s" if len(unknown) > 1 else "")
            raise UsageProblem(
                f"{which} {', '.join(map(repr, unknown))} in --fields; a {self.noun} has: "
                f"{listed}.",
                param="--fields",
            )
        repeated = sorted({name for name in names if names.count(name) > 1}, key=names.index)
        if repeated:
            raise UsageProblem(
                f"--fields names {', '.join(map(repr, repeated))} more than once.",
                param="--fields",
            )
        return names


def select(row: Mapping[str, Any], fields: Sequence[str]) -> dict[str, Any]:
    """Only these fields of a record, in this order; a field the record lacks stays missing."""
    return {name: row[name] for name in fields if name in row}


class JqProgram:
    """A compiled --jq program: run once per record (`each`) or once over a whole document."""

    def __init__(self, text: str, *, each: bool) -> None:
        import jq

        self.text = text
        self.each = each
        try:
            jq.compile(text)  # the user's program alone: its own message, lines and columns
        except ValueError as exc:
            raise UsageProblem(f"--jq does not compile: {_first_line(exc)}", param="--jq") from None
        try:
            self._program = jq.compile((_EACH if each else _TAGGED).format(text))
        except ValueError as exc:  # e.g. a top-level `import`, which jq allows only first
            raise UsageProblem(f"--jq cannot be used: {_first_line(exc)}", param="--jq") from None

    def run(self, json_text: str) -> Iterator[str | list[str]]:
        """Each result of the program over this JSON text (an array of records when `each`):
        a string as it is, any other value as `[its compact JSON]`.

        A runtime error of jq ends the results with JqFailed (exit 1); libjq must not be asked
        for another result after an error, and none is.
        """
        if not json_text.isascii():
            json_text = _LONE_SURROGATE.sub("\ufffd", json_text)
        try:
            yield from self._program.input_text(json_text)
        except ValueError as exc:
            raise JqFailed(f"--jq failed: {_first_line(exc)}", param="--jq") from None


@contextmanager
def ctrl_c_ends_at_once() -> Iterator[None]:
    """While a --jq program runs, Ctrl-C ends the process at once (exit status 130 in a shell),
    as it ends `jq`: libjq does not return to Python while it computes, so Python's own handler
    could act only when the program yields a result (`last(range(1e12))` yields none for hours).
    """
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may change a signal's handler
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _first_line(exc: BaseException) -> str:
    """jq's message, first line only, without its `jq: error: ` prefix or a closing colon."""
    lines = str(exc).strip().splitlines() or [type(exc).__name__]
    return lines[0].removeprefix("jq: error: ").rstrip(":").strip()


def json_array(rows: Sequence[Mapping[str, Any]]) -> str:
    """Records as one compact JSON array, the text that jq reads (a non-finite number as a
    string, as every JSON output has it: cells.finite_json)."""
    from convrisk.cli.output.cells import finite_json

    return finite_json(rows, separators=(",", ":"))


@dataclass(frozen=True)
class Shape:
    """What --fields and --jq ask of the output: the fields chosen, and the jq program."""

    fields: tuple[str, ...] | None = None
    jq: JqProgram | None = None


def make_shape(
    fields: FieldChoice | None, jq_text: str | None, *, output_flag: str | None, fmt: str
) -> Shape:
    """The Shape of --fields and --jq for a command printing in `fmt` (-o if given, else the
    settings'); a usage error for an unknown field or a combination that cannot print.

    --jq runs once per record with `-o jsonl`, else (`-o json`, or no -o at all: the settings'
    format does not count) once over the JSON document.
    """
    chosen = fields.names() if fields is not None else None
    if jq_text is None:
        if chosen is not None and fmt == "id":
            raise UsageProblem(
                "--fields has nothing to choose in the id format, which prints ids only: "
                "use -o table, json, jsonl or csv.",
                param="--fields",
            )
        return Shape(chosen)
    if output_flag not in (None, "json", "jsonl"):
        raise UsageProblem(
            f"--jq prints its own results and cannot be combined with -o {output_flag}: use "
            "-o jsonl (once per record, streamed), -o json or no -o (once over the whole "
            "output).",
            param="--jq",
        )
    return Shape(chosen, JqProgram(jq_text, each=output_flag == "jsonl"))
