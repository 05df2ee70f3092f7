"""Output formats: table (on a terminal, TSV otherwise), json, jsonl, csv, id; colour,
hints and progress on stderr only."""

from __future__ import annotations

import csv
import io
import json
import logging
import sys
from collections.abc import Callable

import pytest

from convrisk.api_client import resources
from convrisk.cli.errors import ErrorInfo
from convrisk.cli.output.cells import csv_cell, format_timestamp
from convrisk.cli.output.printer import Printer, debug_handler, traceback_lines
from tests.cli.conftest import Invoke

Make = Callable[[int], list[str]]
Terminal = Callable[..., None]


def test_piped_table_is_tsv_under_a_header_and_never_cut(invoke: Invoke) -> None:
    long_contact = "c_" + "x" * 300
    invoke("conv", "create", "--contact-id", long_contact).ok()
    invoke("conv", "create", "--group-id", "g\twith tab").ok()
    header, *rows = invoke("conv", "list").ok().lines()
    fields = list(resources.CONVERSATIONS.names())
    assert header.split("\t") == fields
    assert len(rows) == 2
    cells = [dict(zip(fields, row.split("\t"), strict=True)) for row in rows]
    assert cells[0]["group_id"] == "g\\twith tab"
    assert cells[1]["contact_id"] == long_contact
    assert (cells[1]["is_pinned"], cells[1]["is_muted"]) == ("false", "false")


def test_tsv_times_say_they_are_utc(invoke: Invoke) -> None:
    conv = invoke("conv", "create", "--contact-id", "c", "-o", "json").ok().json()
    invoke("conv", "update", conv["id"], "--archived-at", "2024-05-01T12:34:56Z").ok()
    header, row = invoke("conv", "list").ok().lines()
    cells = dict(zip(header.split("\t"), row.split("\t"), strict=True))
    assert cells["archived_at"] == "2024-05-01 12:34:56Z"
    assert cells["created_at"] == format_timestamp(conv["created_at"])
    assert cells["last_active_at"] == ""


def test_timestamps_in_seconds_or_milliseconds_give_the_same_date() -> None:
    assert format_timestamp(1714566896) == "2024-05-01 12:34:56Z"
    assert format_timestamp(1714566896000) == "2024-05-01 12:34:56Z"
    assert format_timestamp(1714566896.75) == "2024-05-01 12:34:56Z"
    assert format_timestamp(1714566896789.0) == "2024-05-01 12:34:56Z"
    assert format_timestamp(0) == "1970-01-01 00:00:00Z"
    assert format_timestamp(None) == ""


def test_a_table_on_a_terminal_shows_whole_ids(
    invoke: Invoke, conversations: Make, terminal: Terminal, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = conversations(2)
    monkeypatch.setenv("NO_COLOR", "1")
    terminal("stdout")
    result = invoke("conv", "list").ok()
    assert "ID" in result.stdout and "WITH" in result.stdout and "contact c_0" in result.stdout
    assert all(i in result.stdout for i in ids)
    assert "\x1b[" not in result.stdout  # NO_COLOR
    assert "\t" not in result.stdout


def test_colour_only_on_a_terminal_and_never_with_no_color(
    invoke: Invoke, conversations: Make, terminal: Terminal, monkeypatch: pytest.MonkeyPatch
) -> None:
    conversations(1)
    assert "\x1b[" not in invoke("conv", "list").ok().stdout
    terminal("stdout", "stderr")
    coloured = invoke("conv", "list").ok()
    assert "\x1b[" in coloured.stdout
    assert "\x1b[31mError:" in invoke("conv", "get", "conv_nope").stderr
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in invoke("conv", "list").ok().stdout
    assert invoke("conv", "get", "conv_nope").stderr.startswith("Error: ")


def test_json_is_compact_when_piped_and_indented_on_a_terminal(
    invoke: Invoke, conversations: Make, terminal: Terminal, monkeypatch: pytest.MonkeyPatch
) -> None:
    conversations(2)
    piped = invoke("conv", "list", "-o", "json").ok()
    assert piped.stdout.count("\n") == 1
    monkeypatch.setenv("NO_COLOR", "1")
    terminal("stdout")
    shown = invoke("conv", "list", "-o", "json").ok()
    assert shown.stdout.count("\n") > 10 and '\n    "id": ' in shown.stdout
    assert shown.json() == piped.json()


def test_jsonl_csv_and_id_formats(invoke: Invoke, conversations: Make) -> None:
    ids = conversations(3)
    assert [c["id"] for c in invoke("conv", "list", "-o", "jsonl").ok().jsonl()] == ids
    rows = list(csv.DictReader(io.StringIO(invoke("conv", "list", "-o", "csv").ok().stdout)))
    assert [r["id"] for r in rows] == ids
    assert rows[0]["is_muted"] == "false" and rows[0]["archived_at"] == ""
    assert invoke("conv", "list", "-o", "id").ok().lines() == ids


def test_empty_lists_in_every_format(invoke: Invoke) -> None:
    expected: dict[str | None, str] = {
        "json": "[]\n",
        "jsonl": "",
        "id": "",
        "csv": ",".join(resources.RISK_PROFILES.names()) + "\n",
        None: "\t".join(resources.RISK_PROFILES.names()) + "\n",
        "table": "",  # asked for, the table is drawn even piped: no rows, no table
    }
    for fmt, text in expected.items():
        result = invoke("risk", "list", *(["-o", fmt] if fmt else [])).ok()
        assert result.stdout == text, fmt
        assert result.stderr == ""


def test_output_format_from_environment_and_profile(
    invoke: Invoke, conversations: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = conversations(1)
    invoke("config", "set", "output", "id").ok()
    assert invoke("conv", "list").ok().lines() == ids
    monkeypatch.setenv("CONVRISK_OUTPUT", "jsonl")
    assert invoke("conv", "list").ok().jsonl()[0]["id"] == ids[0]
    assert invoke("conv", "list", "-o", "csv").ok().lines()[0].startswith("id,contact_id")
    monkeypatch.setenv("CONVRISK_OUTPUT", "yaml")
    bad = invoke("conv", "list")
    assert bad.code == 2 and "CONVRISK_OUTPUT" in bad.stderr


def test_hints_go_to_stderr_and_json_stays_clean(invoke: Invoke, conversations: Make) -> None:
    conversations(3)
    result = invoke("conv", "list", "--limit", "2", "-o", "json").ok()
    assert len(result.json()) == 2
    assert "More conversations exist" in result.stderr


def test_progress_only_when_stderr_is_a_terminal(
    invoke: Invoke, conversations: Make, terminal: Terminal, monkeypatch: pytest.MonkeyPatch
) -> None:
    conversations(5)
    monkeypatch.setenv("CONVRISK_PAGE_SIZE", "2")
    quiet = invoke("conv", "list", "--all", "-o", "id").ok()
    assert quiet.stderr == ""
    terminal("stderr")
    shown = invoke("conv", "list", "--all", "-o", "id").ok()
    assert "2 conversations..." in shown.stderr and "4 conversations..." in shown.stderr
    assert shown.stderr.endswith("\r\x1b[K")  # the indicator is wiped at the end
    assert len(shown.lines()) == 5


HOSTILE = "\x1b]0;pwned\x07\x1b[2J"
SHOWN = "\\x1b]0;pwned\\x07\\x1b[2J"


def test_every_message_shows_data_escaped_and_keeps_its_own_colour(
    terminal: Terminal, capsys: pytest.CaptureFixture[str]
) -> None:
    terminal("stdout", "stderr")
    printer = Printer("table", env={})
    printer.hint(f"hint {HOSTILE}\nforged line")
    printer.warning(f"warn {HOSTILE}")
    printer.error(ErrorInfo("api_error", f"failed {HOSTILE}", id=f"id{HOSTILE}"))
    printer.notice(f"notice {HOSTILE}\nforged line")
    printer.block(f"Usage:\n  {HOSTILE}")
    printer.line(f"value {HOSTILE}")
    out, err = capsys.readouterr()
    assert out == f"value {SHOWN}\n"
    assert err.splitlines() == [
        f"\x1b[2mhint {SHOWN}\\nforged line\x1b[0m",  # a hint is one line
        f"\x1b[33mWarning:\x1b[0m warn {SHOWN}",
        f"\x1b[31mError:\x1b[0m id{SHOWN}: failed {SHOWN}",
        f"notice {SHOWN}\\nforged line",  # a notice is one line
        "Usage:",  # a block of our own keeps its lines
        f"  {SHOWN}",
    ]


def test_a_json_error_keeps_the_exact_value_and_stays_safe(
    capsys: pytest.CaptureFixture[str],
) -> None:
    Printer("json", env={}).error(ErrorInfo("api_error", f"x {HOSTILE}\u202e\ud800"))
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\u202e" not in err
    assert json.loads(err)["error"]["message"] == f"x {HOSTILE}\u202e\ud800"


def test_the_delete_question_shows_ids_escaped(invoke: Invoke, terminal: Terminal) -> None:
    terminal("stdin")
    result = invoke("conv", "delete", f"conv_{HOSTILE}", input="n\n")
    assert result.code == 1
    assert f"Delete conversation (conv_{SHOWN}) for good?" in result.stderr
    assert "\x1b" not in result.stderr


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        ("=1+1", "'=1+1"),
        ("+1+1", "'+1+1"),
        ("-1+1", "'-1+1"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("-cmd|' /C calc'!A0", "'-cmd|' /C calc'!A0"),
        ("\t=1", "\\t=1"),  # escaped, so no longer a tab in front of a formula
        ("-5", "-5"),
        ("+5", "+5"),
        ("-72.5", "-72.5"),
        ("-1e3", "-1e3"),
        ("-.5", "-.5"),
        ("-", "'-"),
        ("-٣", "'-٣"),  # not an ASCII number
        ("a=1", "a=1"),
        ("", ""),
        (HOSTILE, SHOWN),
    ],
)
def test_csv_cells_defuse_formulas_but_leave_numbers(value: str, cell: str) -> None:
    assert csv_cell(value) == cell


def test_a_debug_log_line_is_one_line_and_its_traceback_keeps_only_its_own_lines() -> None:
    try:
        raise ValueError(f"refused\nservice  ok {HOSTILE}")
    except ValueError:
        record = logging.LogRecord(
            "convrisk.http", logging.DEBUG, "x", 1, "GET %s", ("/a\nb",), None
        )
        record.exc_info = sys.exc_info()
    lines = debug_handler().format(record).split("\n")
    assert lines[0] == "debug: convrisk.http: GET /a\\nb"
    assert lines[1] == "Traceback (most recent call last):"
    assert lines[-1] == f"ValueError: refused\\nservice  ok {SHOWN}"
    assert not any(line.startswith("service") for line in lines)


def test_a_chained_traceback_says_how_its_parts_are_linked() -> None:
    try:
        try:
            raise KeyError("first\nforged")
        except KeyError as exc:
            raise RuntimeError("second") from exc
    except RuntimeError as exc:
        lines = traceback_lines(exc)
    assert "KeyError: 'first\\nforged'" in lines
    assert "The above exception was the direct cause of the following exception:" in lines
    assert lines[-1] == "RuntimeError: second"
