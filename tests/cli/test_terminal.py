"""The terminal in-process: table layout per width, the detail view, progress that never draws
over stdout's text, and questions on the controlling terminal."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest

from convrisk.cli import output
from convrisk.cli.output import (
    Printer,
    cell_width,
    cut,
    fold,
    table_layout,
)
from convrisk.cli.resource_kinds import CONVERSATIONS, RISK_PROFILES
from tests.cli.conftest import Invoke

Make = Callable[[int], list[str]]
Terminal = Callable[..., None]
CONV_ID = "conv_01HVZ8Q2K4M6P8R0T2V4X6Z8B0"


def conv_cells(with_: str = "contact c_1", flags: str = "pinned, muted") -> list[str]:
    return [CONV_ID, with_, flags, "2024-05-01 12:00:00", "2024-05-01 12:00:00"]


def titles(kind: output.Kind, width: int, rows: list[list[str]]) -> list[str]:
    layout = table_layout(kind, rows, width)
    assert sum(p.width for p in layout) + 2 * (len(layout) - 1) <= width
    return [kind.terminal_columns[p.index].title for p in layout]


def test_columns_give_way_in_order_as_the_screen_narrows() -> None:
    rows = [conv_cells()]
    assert titles(CONVERSATIONS, 120, rows) == ["ID", "WITH", "FLAGS", "LAST ACTIVE", "CREATED"]
    assert titles(CONVERSATIONS, 60, rows) == ["ID", "WITH", "FLAGS"]
    assert titles(CONVERSATIONS, 40, rows) == ["ID", "WITH"]
    alone = table_layout(CONVERSATIONS, rows, 20)  # the id alone, whole, even past the edge
    assert [(p.index, p.width) for p in alone] == [(0, len(CONV_ID))]


def test_dates_lose_their_time_before_a_column_goes() -> None:
    layout = table_layout(CONVERSATIONS, [conv_cells()], 85)
    assert [p.date_only for p in layout] == [False, False, False, True, True]
    assert [p.width for p in layout][-1] == len("2024-05-01")


def test_a_column_empty_in_every_row_goes_first() -> None:
    rows = [conv_cells(flags=""), conv_cells(with_="group " + "g" * 80, flags="")]
    assert "FLAGS" not in titles(CONVERSATIONS, 100, rows)


def test_risk_profiles_keep_customer_then_score_then_type() -> None:
    rows = [["rp_01HVZ8Q2K4M6P8R0T2V4X6Z8B0", "cus_1", "moderate", "72", "{}", "x" * 19]]
    assert titles(RISK_PROFILES, 40, rows) == ["ID", "CUSTOMER"]
    assert titles(RISK_PROFILES, 60, rows) == ["ID", "CUSTOMER", "TYPE", "SCORE"]


def test_cells_are_cut_and_folded_by_screen_cells() -> None:
    assert cell_width("北京🙂") == 6 and cell_width("e\u0301") == 1
    assert cut("abcdef", 4) == "abc…" and cut("abc", 4) == "abc"
    assert cut("北京北京", 5) == "北京…"
    assert fold("abcdefg", 3) == ["abc", "def", "g"]
    assert fold("北京北", 4) == ["北京", "北"]


def test_one_record_on_a_terminal_is_a_detail_view_and_piped_a_tsv_row(
    invoke: Invoke, conversations: Make, terminal: Terminal, monkeypatch: pytest.MonkeyPatch
) -> None:
    (conv_id,) = conversations(1)
    piped = invoke("conv", "get", conv_id).ok().lines()
    assert piped[0].startswith("id\tcontact_id\t") and piped[1].startswith(conv_id + "\t")
    monkeypatch.setenv("COLUMNS", "80")
    terminal("stdout")
    shown = invoke("conv", "get", conv_id).ok().lines()
    assert shown[0] == f"id                 {conv_id}"
    assert "archived_at        -" in shown
    assert any(line.startswith("created_at         20") and line.endswith(" UTC") for line in shown)


def test_the_detail_view_shows_unknown_fields_and_millisecond_times() -> None:
    rows = output.DetailSink(Printer("table", env={"COLUMNS": "80"}), RISK_PROFILES, False)
    text = rows.render(
        [{"id": "rp_1", "created_at": 1714564800000, "region\x1b[2J": "eu", "details": {"a": 1}}]
    )
    assert text.splitlines() == [
        "id             rp_1",
        "created_at     2024-05-01 12:00:00 UTC",
        "region\\x1b[2J  eu",
        "details        {",
        '                 "a": 1',
        "               }",
    ]


def test_progress_is_never_drawn_inside_a_line_that_stdout_left_open(
    terminal: Terminal, capsys: pytest.CaptureFixture[str]
) -> None:
    terminal("stdout", "stderr")  # capsys's two streams stand for one terminal
    printer = Printer("json", env={"NO_COLOR": "1"})
    printer.write("[\n  {}")
    printer.progress("2 conversations...")
    assert capsys.readouterr().err == ""  # it would have wiped "  {}"
    printer.write(",\n  {}\n")
    printer.progress("4 conversations...")
    printer.write("]\n")
    out, err = capsys.readouterr()
    assert out == ",\n  {}\n]\n"
    assert err == "\r\x1b[K4 conversations...\r\x1b[K"


def test_a_message_inside_an_open_line_starts_a_line_of_its_own(
    terminal: Terminal, capsys: pytest.CaptureFixture[str]
) -> None:
    terminal("stdout", "stderr")
    printer = Printer("json", env={"NO_COLOR": "1"})
    printer.write("  {}")
    printer.warning("careful")
    assert capsys.readouterr().err == "\nWarning: careful\n"


class FakeTty:
    """A controlling terminal that answers `answer` and records what it was told."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.shown = ""
        self.closed = False

    def write(self, text: str) -> None:
        self.shown += text

    def flush(self) -> None:
        pass

    def readline(self) -> str:
        return self.answer

    def close(self) -> None:
        self.closed = True


@pytest.mark.parametrize(("answer", "code"), [("y\n", 0), ("n\n", 1), ("\n", 1), ("", 130)])
def test_ids_from_stdin_are_confirmed_on_the_controlling_terminal(
    invoke: Invoke, conversations: Make, monkeypatch: pytest.MonkeyPatch, answer: str, code: int
) -> None:
    a, b = conversations(2)
    tty = FakeTty(answer)
    monkeypatch.setattr(output, "controlling_terminal", lambda: tty)
    result = invoke("conv", "delete", "-", "-o", "id", input=f"{a}\n{b}\n")
    assert result.code == code
    assert tty.shown.startswith(f"Delete 2 conversations ({a}, {b}) for good? [y/N]: ")
    assert tty.closed and "[y/N]" not in result.stderr
    assert (invoke("conv", "get", a).code == 3) == (code == 0)
    if code == 130:  # end of input at the question: its line is ended, then Interrupted.
        assert tty.shown.endswith("[y/N]: \n") and result.stderr == "Interrupted.\n"


def test_an_empty_list_from_stdin_asks_nothing(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    tty = FakeTty("n\n")
    monkeypatch.setattr(output, "controlling_terminal", lambda: tty)
    assert invoke("conv", "delete", "-", "-o", "json", input="\n").ok().json() == []
    assert "Delete" not in tty.shown


def test_json_on_a_terminal_is_coloured_and_the_same_document(
    invoke: Invoke, conversations: Make, terminal: Terminal, monkeypatch: pytest.MonkeyPatch
) -> None:
    conversations(2)
    piped = invoke("conv", "list", "-o", "json").ok()
    assert "\x1b[" not in piped.stdout
    terminal("stdout")
    coloured = invoke("conv", "list", "-o", "json").ok().stdout
    assert '\x1b[1;34m"id"\x1b[0m: \x1b[32m"conv_' in coloured
    assert "\x1b[2mnull\x1b[0m" in coloured
    assert json.loads(re.sub(r"\x1b\[[0-9;]*m", "", coloured)) == piped.json()
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in invoke("conv", "list", "-o", "json").ok().stdout
    assert "\x1b[" not in invoke("conv", "list", "-o", "jsonl").ok().stdout  # never jsonl
