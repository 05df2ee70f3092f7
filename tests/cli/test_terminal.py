"""The terminal in-process: table layout per width, the detail view, progress that never draws
over stdout's text, and questions on the controlling terminal; and the variants of
tests/e2e/test_terminal.py (every width, format and way of asking) on a pyte screen."""

from __future__ import annotations

import _thread
import getpass
import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, TextIO
from urllib.parse import parse_qs, urlsplit

import pytest

from convrisk.api_client.pagination import Ahead
from convrisk.cli.errors import ErrorInfo
from convrisk.cli.output import iostreams
from convrisk.cli.output.cells import cell_width, cut, fold
from convrisk.cli.output.iostreams import IOStreams
from convrisk.cli.output.kinds import Kind
from convrisk.cli.output.layout import table_layout
from convrisk.cli.output.printer import Printer
from convrisk.cli.output.resource_kinds import CONVERSATIONS, RISK_PROFILES
from convrisk.cli.output.views import DetailSink
from convrisk.local_backend.backend import LocalBackend
from tests.cli.conftest import Invoke
from tests.cli.screen_in_process import on_screen, show
from tests.e2e.test_terminal import (
    DATE_UTC,
    LONG_CONTACT,
    TOKEN,
    WIDTHS,
    SlowPages,
    data_rows,
    labels,
    seed_conversations,
    seed_risk_profiles,
)
from tests.loopback import on_loopback, running, url_of

Make = Callable[[int], list[str]]
Terminal = Callable[..., None]
CONV_ID = "conv_01HVZ8Q2K4M6P8R0T2V4X6Z8B0"


def conv_cells(with_: str = "contact c_1", flags: str = "pinned, muted") -> list[str]:
    return [CONV_ID, with_, flags, "2024-05-01 12:00:00Z", "2024-05-01 12:00:00Z"]


def titles(kind: Kind, width: int, rows: list[list[str]]) -> list[str]:
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
    printer = Printer("table", env={"COLUMNS": "80"})
    rows = DetailSink(printer, RISK_PROFILES, False, printer.streams)
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
    monkeypatch.setattr(iostreams, "controlling_terminal", lambda: tty)
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
    monkeypatch.setattr(iostreams, "controlling_terminal", lambda: tty)
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
    assert '\x1b[1;34m"id"\x1b[0m: \x1b[32m"conv_' in coloured  # rich's JSON highlighting
    assert "\x1b[3;35mnull\x1b[0m" in coloured
    assert json.loads(re.sub(r"\x1b\[[0-9;]*m", "", coloured)) == piped.json()
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in invoke("conv", "list", "-o", "json").ok().stdout
    assert "\x1b[" not in invoke("conv", "list", "-o", "jsonl").ok().stdout  # never jsonl


# -- terminal facts given to the printer, without a pty (as gh's iostreams.Test()) ---------------


def printer_on(
    fmt: str, *terminals: str, width: int = 80, **env: str
) -> tuple[Printer, io.StringIO, io.StringIO]:
    """A printer whose stdout and stderr are buffers, `terminals` said to be terminals."""
    out, err = io.StringIO(), io.StringIO()
    streams = IOStreams(env, stdout=out, stderr=err, terminals=set(terminals), width=width)
    return Printer(fmt, env=env, streams=streams), out, err


CONV = {"id": CONV_ID, "contact_id": "c_" + "x" * 60, "is_pinned": True, "created_at": 1714564800}


@pytest.mark.parametrize("width", [40, 80, 120])
def test_a_table_given_a_terminal_of_some_width_fits_it_with_the_id_whole(width: int) -> None:
    printer, out, _ = printer_on("table", "stdout", width=width, NO_COLOR="1")
    with printer.records(CONVERSATIONS, many=True) as sink:
        sink.write([CONV, {**CONV, "id": CONV_ID[:-1] + "C"}])
    header, *rows = out.getvalue().splitlines()
    assert header.startswith("ID  ") and "WITH" in header
    assert [row.split(" ")[0] for row in rows] == [CONV_ID, CONV_ID[:-1] + "C"]
    assert all(len(line) <= width and line == line.rstrip() for line in [header, *rows])
    assert "…" in rows[0] and "\x1b" not in out.getvalue()


def test_the_same_rows_piped_are_tsv_and_never_cut() -> None:
    printer, out, _ = printer_on("table")
    with printer.records(CONVERSATIONS, many=True) as sink:
        sink.write([CONV])
    assert out.getvalue().splitlines()[1].split("\t")[:2] == [CONV_ID, CONV["contact_id"]]
    assert "\x1b" not in out.getvalue()


def test_a_table_header_is_bold_only_where_colour_is_allowed() -> None:
    coloured, out, _ = printer_on("table", "stdout")
    with coloured.records(CONVERSATIONS, many=True) as sink:
        sink.write([CONV])
    assert out.getvalue().startswith("\x1b[1mID")
    for env in ({"NO_COLOR": "1"}, {"TERM": "dumb"}):
        plain, out, _ = printer_on("table", "stdout", width=80, **env)
        with plain.records(CONVERSATIONS, many=True) as sink:
            sink.write([CONV])
        assert out.getvalue().startswith("ID  ") and "\x1b" not in out.getvalue()


def test_cells_reach_the_screen_escaped_and_never_as_markup() -> None:
    printer, out, _ = printer_on("table", "stdout", width=120, NO_COLOR="1")
    hostile = {**CONV, "contact_id": "[bold red]x[/] :smile: \x1b[2J\x07"}
    with printer.records(CONVERSATIONS, many=True) as sink:
        sink.write([hostile])
    assert "contact [bold red]x[/] :smile: \\x1b[2J\\x07" in out.getvalue()


@pytest.mark.parametrize(
    ("env", "stderr_terminal", "coloured"),
    [
        ({}, True, True),
        ({}, False, False),
        ({"NO_COLOR": "1"}, True, False),
        ({"NO_COLOR": ""}, True, True),  # empty: not set
        ({"FORCE_COLOR": "1"}, False, True),  # as in CI logs
        ({"FORCE_COLOR": "1", "NO_COLOR": "1"}, False, False),
        ({"TERM": "dumb"}, True, False),
        ({"TERM": "dumb", "FORCE_COLOR": "1"}, True, False),
    ],
)
def test_error_colour_follows_no_color_force_color_and_term_dumb_as_rich_does(
    env: dict[str, str], stderr_terminal: bool, coloured: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    printer, _, err = printer_on("table", *(["stderr"] if stderr_terminal else []), width=80, **env)
    printer.error(ErrorInfo("api_error", "nope"))
    assert err.getvalue().startswith("\x1b[31mError:" if coloured else "Error: nope")
    # rich's own Console, given the same environment and stream, decides the same.
    from rich.console import Console

    for name in ("NO_COLOR", "FORCE_COLOR", "TERM", "TTY_COMPATIBLE", "COLORTERM"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    class Stream(io.StringIO):
        def isatty(self) -> bool:
            return stderr_terminal

    rich = Console(file=Stream())
    assert (rich.color_system is not None and not rich.no_color) == coloured


def test_json_given_a_terminal_is_indented_and_highlighted_only_with_colour() -> None:
    printer, out, _ = printer_on("json", "stdout")
    with printer.records(CONVERSATIONS, many=True) as sink:
        sink.write([CONV])
    coloured = out.getvalue()
    assert '\x1b[1;34m"id"\x1b[0m' in coloured and coloured.rstrip().endswith("]\x1b[0m")
    plain, out, _ = printer_on("json", "stdout", NO_COLOR="1")
    with plain.records(CONVERSATIONS, many=True) as sink:
        sink.write([CONV])
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == out.getvalue()
    assert json.loads(out.getvalue()) == [CONV]


def test_the_import_bar_is_rich_progress_with_thousands_separators() -> None:
    printer, _, err = printer_on("table", "stderr", width=100, NO_COLOR="1")
    printer.progress("12,345 records (12,345 created)", done=0.5)
    line = err.getvalue()
    assert line.startswith("\r\x1b[K━━━━━━━━━━━━━━━") and " 50% 12,345 records" in line
    assert "\n" not in line and len(line) - len("\r\x1b[K") <= 99


def test_a_listing_counts_pages_with_thousands_separators() -> None:
    printer, _, err = printer_on("jsonl", "stderr", NO_COLOR="1")
    from convrisk.api_client.page import Page

    pages: list[Page[Any]] = [Page(True, records=[CONV] * 1000), Page(False, records=[CONV])]
    printer.pages(CONVERSATIONS, pages, hint_more=True)
    assert err.getvalue() == "\r\x1b[K1,000 conversations...\r\x1b[K"


def test_a_long_progress_line_is_cut_to_one_screen_line() -> None:
    printer, _, err = printer_on("table", "stderr", width=30, NO_COLOR="1")
    printer.progress("x" * 100)
    assert err.getvalue() == "\r\x1b[K" + "x" * 28 + "…"


def test_details_give_way_before_the_type_is_cut() -> None:
    rows = [["rp_01HVZ8Q2K4M6P8R0T2V4X6Z8B0", "cus_1", "conservative-plus", "72", "{}" * 30, ""]]
    for width in (80, 90, 100):
        layout = {
            RISK_PROFILES.terminal_columns[p.index].title: p.width
            for p in table_layout(RISK_PROFILES, rows, width)
        }
        assert layout["TYPE"] == len("conservative-plus"), (width, layout)
        assert layout.get("DETAILS", 0) < 60


@pytest.mark.parametrize("width", [50, 60, 80, 100])
def test_fields_asked_for_are_cut_never_dropped_and_the_id_never_cut(width: int) -> None:
    asked = CONVERSATIONS.only(["id", "contact_id", "group_id", "created_at", "is_pinned"])
    rows = [[CONV_ID, "c_" + "x" * 40, "", "2024-05-01 12:00:00Z", "false"]]
    layout = table_layout(asked, rows, width)
    assert [p.index for p in layout] == [0, 1, 2, 3, 4]
    assert layout[0].width == len(CONV_ID)
    assert sum(p.width for p in layout) + 2 * (len(layout) - 1) <= width


# -- the variants of tests/e2e/test_terminal.py: every width, format and way of asking, the screen
# played by pyte in-process (tests/cli/screen_in_process.py) -------------------------------------


@pytest.mark.parametrize("columns", WIDTHS)
def test_every_conversation_row_is_one_screen_line_with_its_whole_id(
    backend: LocalBackend, monkeypatch: pytest.MonkeyPatch, columns: int
) -> None:
    ids = seed_conversations(backend)
    lines = on_screen(monkeypatch, "conv", "list", columns=columns)
    rows = data_rows(lines, ids)
    assert len(lines) == len(ids) + 1  # nothing folded onto a second line
    assert all(len(line) <= columns for line in lines)
    assert any("…" in row for row in rows)  # the long contact is cut, not wrapped
    assert "WITH" in lines[0]  # who the conversation is with survives even at 40 columns
    if columns >= 80:
        assert "FLAGS" in lines[0] and "CREATED" in lines[0]


@pytest.mark.parametrize("columns", WIDTHS)
def test_every_risk_profile_row_is_one_screen_line_with_its_whole_id(
    backend: LocalBackend, monkeypatch: pytest.MonkeyPatch, columns: int
) -> None:
    ids = seed_risk_profiles(backend)
    lines = on_screen(monkeypatch, "risk", "list", columns=columns)
    data_rows(lines, ids)
    assert len(lines) == len(ids) + 1
    assert "CUSTOMER" in lines[0]
    if columns >= 60:
        assert "SCORE" in lines[0]
    if columns >= 80:
        assert "DETAILS" in lines[0] and "UPDATED" in lines[0]


@pytest.mark.parametrize("columns", WIDTHS)
def test_get_shows_every_field_of_a_conversation(
    backend: LocalBackend, invoke: Invoke, monkeypatch: pytest.MonkeyPatch, columns: int
) -> None:
    conv_id = seed_conversations(backend)[1]  # the long, pinned, muted, archived one
    record = invoke("conv", "get", conv_id, "-o", "json").ok().json()
    lines = on_screen(monkeypatch, "conv", "get", conv_id, columns=columns)
    fields = labels(lines)
    assert set(fields) == set(record)  # every field, archived_at and last_opened_at too
    assert fields["id"] == conv_id
    assert fields["archived_at"] == "2024-05-01 12:00:00 UTC"
    assert DATE_UTC.fullmatch(fields["created_at"])
    assert fields["is_pinned"] == "true" and fields["last_opened_at"] == "-"
    assert LONG_CONTACT in "".join(line.strip() for line in lines)  # folded, never cut
    assert all(len(line) <= columns for line in lines)


@pytest.mark.parametrize("columns", WIDTHS)
def test_get_shows_every_field_of_a_risk_profile_with_details_as_indented_json(
    backend: LocalBackend, invoke: Invoke, monkeypatch: pytest.MonkeyPatch, columns: int
) -> None:
    rp_id = seed_risk_profiles(backend)[1]
    record = invoke("risk", "get", rp_id, "-o", "json").ok().json()
    lines = on_screen(monkeypatch, "risk", "get", rp_id, columns=columns)
    assert set(labels(lines)) == set(record)
    assert DATE_UTC.fullmatch(labels(lines)["created_at"])
    assert any(re.fullmatch(r' +"horizon_years": 10,', line) for line in lines)
    assert any(re.fullmatch(r' +"a": \[', line) for line in lines)


@pytest.mark.parametrize(
    "args",
    [
        ["conv", "list", "--all", "-o", "json"],
        ["conv", "list", "--archived", "--all", "-o", "json"],
    ],
)
def test_all_as_json_on_a_shared_terminal_leaves_valid_json_on_the_screen(
    backend: LocalBackend, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    ids = [backend.conversations.create({"contact_id": f"c_{i}"})["id"] for i in range(9)]
    for conv_id in ids:
        backend.conversations.update(conv_id, {"archived_at": 1714564800})
    lines = on_screen(monkeypatch, *args, columns=80, CONVRISK_PAGE_SIZE="2")
    shown = json.loads("\n".join(lines))  # what a person would copy from the screen
    assert [item["id"] for item in shown] == ids[::-1]


class InterruptedPages(SlowPages):
    """SlowPages that press Ctrl-C (SIGINT, as the terminal sends it, to the main thread) while
    the page after the 30th conversation is asked for (pages are read one ahead of printing:
    by then 20 conversations are on the screen, as when the e2e test presses it)."""

    delay: ClassVar[float] = 0.01  # the page Ctrl-C comes at is fixed: no need to wait longer
    pressed: ClassVar[bool] = False  # once: that page may be asked for again, after the run

    def do_GET(self) -> None:
        after = parse_qs(urlsplit(self.path).query).get("starting_after", ["conv_0000"])[0]
        if after == "conv_0030" and not InterruptedPages.pressed:
            InterruptedPages.pressed = True
            _thread.interrupt_main()  # SIGINT, as a Ctrl-C would send
        super().do_GET()


@pytest.mark.e2e  # slow: about a second, or more (the quick loop leaves it out)
@pytest.mark.parametrize("fmt", ["table", "jsonl"])
def test_ctrl_c_during_all_clears_the_progress_and_says_interrupted(
    home: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    InterruptedPages.pressed = False
    with running(on_loopback(InterruptedPages)) as server:
        shown = show(
            monkeypatch, "conv", "list", "--all", "-o", fmt, columns=80,
            CONVRISK_BASE_URL=url_of(server), CONVRISK_TOKEN="t" * 24, CONVRISK_PAGE_SIZE="2",
        )  # fmt: skip
        # The page read ahead when Ctrl-C came is still asked for on the reading thread, which
        # a process would end at exit but this one keeps: let it be answered before the service
        # stops, so that the next list in this process does not wait out its timeout.
        Ahead(lambda sent: None).take()
    assert b"20 conversations..." in shown.output  # the progress was drawn before Ctrl-C
    assert shown.code == 130
    lines = shown.text()
    assert lines[-1] == "Interrupted."
    assert not any("conversations..." in line for line in lines), lines
    assert "conv_0001" in "".join(lines)  # what was printed before stays


class HiddenQuestion:
    """getpass.getpass standing in for the terminal: it records the question, shows it, and
    answers the token (nothing echoed, and the line ended, as getpass does)."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def __call__(self, prompt: str, stream: TextIO | None = None) -> str:
        self.asked.append(prompt)
        assert stream is not None
        stream.write(prompt + "\n")
        return TOKEN


@pytest.mark.parametrize("args", [["config", "set", "token"], ["config", "set", "token", "-"]])
def test_config_set_token_on_a_terminal_asks_without_echo_and_enter_finishes(
    config_file: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    question = HiddenQuestion()
    monkeypatch.setattr(getpass, "getpass", question)
    shown = show(monkeypatch, *args, columns=80)
    assert shown.code == 0
    assert question.asked == ["token: "]  # asked hidden (getpass), once
    lines = shown.text()
    assert lines[0] == "token:"  # nothing echoed
    assert TOKEN not in shown.output.decode()
    assert lines[1].startswith("Set token = ****") and TOKEN[-4:] in lines[1]
    assert f'token = "{TOKEN}"' in config_file.read_text()
