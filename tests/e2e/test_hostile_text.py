"""Hostile text from data never reaches the terminal raw (DESIGN 4.2), and every format stays
exact: the installed `convrisk` in a subprocess, against the local database, a loopback service
answering with escapes, `convrisk serve`, and a real pseudo-terminal rendered by pyte: each
behaviour once. Every format, and both widths, run in-process in tests/cli/test_hostile_text.py."""

from __future__ import annotations

import csv
import io
import json
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from convrisk.api_client.text import unprintable
from tests import described
from tests.e2e.screen import Terminal
from tests.loopback import JSONService, on_loopback, running, url_of

from .console import CONVRISK, SAFETY_TIMEOUT, run

# Retitles the terminal (OSC 0 ... BEL), then clears it (CSI 2 J).
HOSTILE = "\x1b]0;pwned\x07\x1b[2J"
SHOWN = "\\x1b]0;pwned\\x07\\x1b[2J"
RAW_CONTROLS = ("\x1b", "\x07", "\x9b", "\r", "\u202e")
# Values that print alike unless backslashes are escaped too, and every kind of control.
VARIED = [
    HOSTILE,
    "a\\nb",
    "a\nb",
    "tab\there",
    "back\\slash",
    "\\",
    "\\x1b",
    "cr\rlf",
    "\u202eevil",
    "\x9b31m",
    "line\u2028sep",
    "Zoë 北京 🙂",
]


def assert_no_raw_control(text: str) -> None:
    """No control character that a terminal acts on, nor a bidi override."""
    for char in RAW_CONTROLS:
        assert char not in text, f"raw {char!r} in {text!r}"


def test_piped_list_escapes_control_characters_and_reads_back_exactly(
    env: dict[str, str], store: Any
) -> None:
    for value in VARIED:
        store.conversations.create({"contact_id": value})
    store.conversations.create({"group_id": HOSTILE})
    tsv = run(env, "conv", "list", "--all")
    assert tsv.returncode == 0, tsv.stderr
    assert_no_raw_control(tsv.stdout)
    assert SHOWN in tsv.stdout
    header, *lines = tsv.stdout.split("\n")[:-1]
    keys = header.split("\t")
    rows = [dict(zip(keys, map(unprintable, line.split("\t")), strict=True)) for line in lines]
    listed = json.loads(run(env, "conv", "list", "--all", "-o", "json").stdout)
    assert len(rows) == len(listed) == len(VARIED) + 1
    for row, item in zip(rows, listed, strict=True):
        for key in ("id", "contact_id", "group_id", "pinned_message_id"):
            assert row[key] == (item[key] or ""), key
    assert {item["contact_id"] for item in listed} >= set(VARIED)


def test_csv_escapes_controls_and_defuses_formulas_but_keeps_numbers(
    env: dict[str, str], store: Any
) -> None:
    customers = {
        '=HYPERLINK("http://127.0.0.1/","x")': '\'=HYPERLINK("http://127.0.0.1/","x")',
        "+1+1": "'+1+1",
        "-2+3": "'-2+3",
        "@SUM(A1:A2)": "'@SUM(A1:A2)",
        "\t=1": "\\t=1",  # escaped: starts with a backslash, no formula any more
        "\r=1": "\\r=1",
        HOSTILE: SHOWN,
        "-5": "-5",  # a plain number is a number, not a formula
        "plain": "plain",
    }
    for customer in customers:
        store.risk_profiles.create(
            {"customer_id": customer, "profile_type": "-x", "score": -5, "details": {}}
        )
    result = run(env, "risk", "list", "--all", "-o", "csv")
    assert result.returncode == 0, result.stderr
    assert_no_raw_control(result.stdout)
    assert len(result.stdout.splitlines()) == len(customers) + 1  # one line per record
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert sorted(r["customer_id"] for r in rows) == sorted(customers.values())
    assert {r["score"] for r in rows} == {"-5"}
    assert {r["profile_type"] for r in rows} == {"'-x"}


def test_an_error_names_a_hostile_id_escaped(env: dict[str, str]) -> None:
    result = run(env, "conv", "get", HOSTILE)
    assert result.returncode == 2  # no id has these characters
    assert_no_raw_control(result.stderr)
    assert result.stderr.startswith(f"Error: '{SHOWN}' is not a conversation id: ")
    assert result.stderr.count("\n") == 1
    as_json = run(env, "conv", "get", HOSTILE, "-o", "json")
    assert as_json.returncode == 2
    assert_no_raw_control(as_json.stderr)
    assert json.loads(as_json.stderr)["error"]["id"] == HOSTILE  # JSON keeps the exact value


HOSTILE_RECORD: dict[str, Any] = described.conversation(
    "conv_" + HOSTILE,
    1714564800,
    contact_id="\ud800 lone surrogate",
    group_id="\u2028\u2029\x85\x9b\u202e",
)


class HostileService(JSONService):
    """A service whose records and error messages carry terminal escapes."""

    paths: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.paths.append(self.path)
        if self.path.split("?")[0] == "/v1/conversations":
            # JSON with ensure_ascii: a lone surrogate goes as \ud800
            self.send_json(200, {"has_more": True, "data": [HOSTILE_RECORD]})
        else:
            message = f"Refused {HOSTILE} because \x1b[31mred\x1b[0m\x07"
            self.send_json(400, {"error": {"type": "invalid_request_error", "message": message}})


@pytest.fixture
def hostile(env: dict[str, str]) -> Iterator[dict[str, str]]:
    """`env` pointed at the hostile service on loopback, without retries."""
    HostileService.paths = []
    with running(on_loopback(HostileService)) as server:
        yield {
            **env,
            "CONVRISK_BASE_URL": url_of(server),
            "CONVRISK_TOKEN": "t" * 24,
            "CONVRISK_MAX_RETRIES": "0",
        }


def test_a_remote_error_message_is_shown_escaped(hostile: dict[str, str]) -> None:
    result = run(hostile, "conv", "get", "conv_1")
    assert result.returncode == 1
    assert_no_raw_control(result.stderr)
    assert result.stderr == (
        f"Error: conv_1: Refused {SHOWN} because \\x1b[31mred\\x1b[0m\\x07 (HTTP 400)\n"
    )


def test_debug_log_and_traceback_show_data_escaped(hostile: dict[str, str]) -> None:
    result = run(hostile, "--debug", "conv", "get", "conv_1")
    assert result.returncode == 1
    assert "Traceback" in result.stderr and "debug: convrisk.http" in result.stderr
    assert_no_raw_control(result.stderr)
    assert SHOWN in result.stderr


def test_the_more_hint_shows_a_hostile_id_escaped(hostile: dict[str, str]) -> None:
    result = run(hostile, "conv", "list", "--limit", "1", "-o", "id")
    assert result.returncode == 0, result.stderr
    assert_no_raw_control(result.stdout + result.stderr)
    assert result.stdout == f"conv_{SHOWN}\n"
    assert f"--starting-after conv_{SHOWN} to see them" in result.stderr


def test_every_format_survives_a_lone_surrogate_and_line_separators(
    hostile: dict[str, str],
) -> None:
    fmt = "json"  # table, csv, jsonl and id too, in-process
    result = run(hostile, "conv", "list", "--limit", "1", "-o", fmt)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert_no_raw_control(result.stdout)
    for char in ("\u2028", "\u2029", "\x85"):
        assert char not in result.stdout
    if fmt in ("json", "jsonl"):
        [got] = json.loads(result.stdout) if fmt == "json" else [json.loads(result.stdout)]
        assert got == HOSTILE_RECORD  # the same values, escaped as JSON allows


def serve_log_of(tmp_path: Path, env: dict[str, str], requests: list[bytes]) -> str:
    """Send raw requests to a `convrisk serve` child; its stderr once it has stopped."""
    child = subprocess.Popen(
        [CONVRISK, "serve", "--port", "0", "--db", tmp_path / "s.db", "--token", "t" * 20],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert child.stderr is not None
    try:
        ready = child.stderr.readline().decode()
        assert ready.startswith("convrisk serve: listening on http://127.0.0.1:"), ready
        port = int(ready.rsplit(":", 1)[1])
        for request in requests:
            with socket.create_connection(("127.0.0.1", port), timeout=SAFETY_TIMEOUT) as conn:
                conn.sendall(request)
                answer = conn.recv(65536)
                assert answer.startswith(b"HTTP/1.1 4"), answer
    finally:
        child.send_signal(signal.SIGTERM)
        _, err = child.communicate(timeout=SAFETY_TIMEOUT)
    return ready + err.decode("utf-8")


def test_the_serve_log_shows_a_hostile_path_escaped(env: dict[str, str], tmp_path: Path) -> None:
    raw = b"GET /v1/conversations/\x1b]0;pwned\x07\x1b[2J\x9b HTTP/1.1\r\nHost: x\r\n\r\n"
    encoded = b"GET /v1/conversations/%1b]0;pwned%07 HTTP/1.1\r\nHost: x\r\n\r\n"
    log = serve_log_of(tmp_path, env, [raw, encoded])
    assert_no_raw_control(log)
    # uvicorn's parser refuses raw control bytes in a request line (a 4xx, checked above) before
    # any route sees them: the log says so, and shows none of them.
    assert "pwned" not in log.split("%1b]0;pwned%07")[0]
    assert "Invalid HTTP request received." in log
    assert "GET /v1/conversations/%1b]0;pwned%07 401" in log


# -- a real terminal -----------------------------------------------------------------------------


def test_a_hostile_value_cannot_retitle_or_clear_a_real_terminal(
    env: dict[str, str], store: Any
) -> None:
    columns = 80  # and 120, in-process
    conv_id = store.conversations.create({"contact_id": HOSTILE})["id"]
    term = Terminal(
        env,
        [
            'echo MARKER; "$CONVRISK" conv list; "$CONVRISK" conv get "$1";'
            ' "$CONVRISK" conv get "$(printf "\\033]0;pwned\\007")" || true',
            "sh",
            conv_id,
        ],
        columns=columns,
        script=True,
    )
    assert term.finish() == 0
    screen = term.screen()
    lines = term.text()
    assert screen.title == ""
    assert lines[0] == "MARKER"
    row = next(line for line in lines if line.startswith(conv_id))
    assert "contact \\x1b]0;" in row  # escaped, and cut to fit the line
    assert f"contact_id         {SHOWN}" in lines  # `get` shows the whole value, escaped
    assert any("Error: '\\x1b]0;pwned\\x07' is not a conversation id" in line for line in lines)
