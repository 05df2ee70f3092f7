"""What a person sees: the installed `convrisk` on a real pseudo-terminal, its output rendered by
a terminal emulator (pyte) at 40 and 120 columns (DESIGN 4.2). Every width (40, 60, 80, 120),
format and way of asking runs in-process, on a pyte screen, in tests/cli/test_terminal.py."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.e2e.screen import Terminal, on_screen
from tests.loopback import JSONService, on_loopback, running, url_of

from .console import run

WIDTHS = [40, 60, 80, 120]  # in-process; the real terminal shows the narrowest and the widest
LONG_CONTACT = "c_" + "x" * 300
LONG_DETAILS = {"notes": "n" * 500, "horizon_years": 10, "nested": {"a": [1, 2, 3]}}
DATE_UTC = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2} UTC")


def seed_conversations(store: Any) -> list[str]:
    """Conversations with short and long values, pinned, muted and archived; ids newest first."""
    made = [
        store.conversations.create({"contact_id": "c_1"})["id"],
        store.conversations.create({"group_id": "g_42"})["id"],
        store.conversations.create({"contact_id": LONG_CONTACT})["id"],
        store.conversations.create({"contact_id": "Zoë 北京 🙂 " * 20})["id"],
    ]
    store.conversations.update(
        made[2],
        {"is_pinned": True, "is_muted": True, "archived_at": 1714564800, "pinned_message_id": "m"},
    )
    return made[::-1]


def seed_risk_profiles(store: Any) -> list[str]:
    """Risk profiles with short, long and very long details; ids newest first."""
    made = [
        store.risk_profiles.create(
            {"customer_id": "cus_1", "profile_type": "moderate", "score": 72, "details": {}}
        )["id"],
        store.risk_profiles.create(
            {
                "customer_id": "cus_" + "y" * 200,
                "profile_type": "aggressive",
                "score": 91.5,
                "details": LONG_DETAILS,
            }
        )["id"],
        store.risk_profiles.create(
            {
                "customer_id": "cus_3",
                "profile_type": "conservative",
                "score": -5,
                "details": {"blob": "z" * 100_000},
            }
        )["id"],
    ]
    return made[::-1]


def data_rows(lines: list[str], ids: list[str]) -> list[str]:
    """The table's lines after its header: each must be a row starting with a whole id."""
    header, *rows = lines
    assert header.startswith("ID  ")
    assert [row.split(" ")[0] for row in rows] == ids, "\n".join(lines)
    return rows


def test_every_conversation_row_is_one_screen_line_with_its_whole_id(
    env: dict[str, str], store: Any
) -> None:
    ids = seed_conversations(store)
    for columns in (40, 120):
        lines = on_screen(env, "conv", "list", columns=columns)
        rows = data_rows(lines, ids)
        assert len(lines) == len(ids) + 1  # nothing folded onto a second line
        assert all(len(line) <= columns for line in lines)
        assert any("…" in row for row in rows)  # the long contact is cut, not wrapped
        assert "WITH" in lines[0]  # who the conversation is with survives even at 40 columns
        if columns >= 80:
            assert "FLAGS" in lines[0] and "CREATED" in lines[0]


def test_every_risk_profile_row_is_one_screen_line_with_its_whole_id(
    env: dict[str, str], store: Any
) -> None:
    ids = seed_risk_profiles(store)
    for columns in (40, 120):
        lines = on_screen(env, "risk", "list", columns=columns)
        data_rows(lines, ids)
        assert len(lines) == len(ids) + 1
        assert "CUSTOMER" in lines[0]
        if columns >= 60:
            assert "SCORE" in lines[0]
        if columns >= 80:
            assert "DETAILS" in lines[0] and "UPDATED" in lines[0]


def test_a_date_column_shortens_to_the_date_before_it_goes(env: dict[str, str], store: Any) -> None:
    store.conversations.create({"contact_id": "c_1"})
    wide = on_screen(env, "conv", "list", columns=120)
    assert re.search(r"CREATED\s*$", wide[0])
    assert re.search(r" [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8}Z$", wide[1])  # date, time, UTC
    middle = on_screen(env, "conv", "list", columns=60)
    assert re.search(r" [0-9]{4}-[0-9]{2}-[0-9]{2}$", middle[1])  # the date only
    narrow = on_screen(env, "conv", "list", columns=40)
    assert "CREATED" not in narrow[0]


def test_the_table_fits_the_terminal_size_without_columns_set(
    env: dict[str, str], store: Any
) -> None:
    """The width comes from the terminal itself (TIOCGWINSZ) when COLUMNS is not set."""
    ids = seed_conversations(store)
    term = Terminal({k: v for k, v in env.items() if k != "COLUMNS"}, ["conv", "list"], columns=50)
    assert term.finish() == 0
    lines = term.text()
    data_rows(lines, ids)
    assert max(len(line) for line in lines) <= 50


def labels(lines: list[str]) -> dict[str, str]:
    """The field lines of a detail view, by label (the value's first line)."""
    fields = {}
    for line in lines:
        match = re.match(r"([a-z_]+)(?::)? +(.*)$", line) or re.match(r"([a-z_]+):()$", line)
        if match and not line.startswith(" "):
            fields[match.group(1)] = match.group(2)
    return fields


def test_get_shows_every_field_of_a_conversation(env: dict[str, str], store: Any) -> None:
    columns = 40  # the narrowest: the long contact folds most; every width in-process
    conv_id = seed_conversations(store)[1]  # the long, pinned, muted, archived one
    record = json.loads(run(env, "conv", "get", conv_id, "-o", "json").stdout)
    lines = on_screen(env, "conv", "get", conv_id, columns=columns)
    fields = labels(lines)
    assert set(fields) == set(record)  # every field, archived_at and last_opened_at too
    assert fields["id"] == conv_id
    assert fields["archived_at"] == "2024-05-01 12:00:00 UTC"
    assert DATE_UTC.fullmatch(fields["created_at"])
    assert fields["is_pinned"] == "true" and fields["last_opened_at"] == "-"
    assert LONG_CONTACT in "".join(line.strip() for line in lines)  # folded, never cut
    assert all(len(line) <= columns for line in lines)


def test_get_shows_every_field_of_a_risk_profile_with_details_as_indented_json(
    env: dict[str, str], store: Any
) -> None:
    columns = 40  # every width in-process
    rp_id = seed_risk_profiles(store)[1]
    record = json.loads(run(env, "risk", "get", rp_id, "-o", "json").stdout)
    lines = on_screen(env, "risk", "get", rp_id, columns=columns)
    assert set(labels(lines)) == set(record)
    assert DATE_UTC.fullmatch(labels(lines)["created_at"])
    assert any(re.fullmatch(r' +"horizon_years": 10,', line) for line in lines)
    assert any(re.fullmatch(r' +"a": \[', line) for line in lines)


def test_get_piped_prints_what_it_printed_before(env: dict[str, str], store: Any) -> None:
    conv_id = seed_conversations(store)[0]
    header, row = run(env, "conv", "get", conv_id).stdout.splitlines()
    assert header.split("\t")[0] == "id" and row.split("\t")[0] == conv_id


# -- progress, a shared terminal and Ctrl-C ----------------------------------------------------


def test_all_as_json_on_a_shared_terminal_leaves_valid_json_on_the_screen(
    env: dict[str, str], store: Any
) -> None:
    args = ["conv", "list", "--all", "-o", "json"]  # and --archived, in-process
    ids = [store.conversations.create({"contact_id": f"c_{i}"})["id"] for i in range(9)]
    for conv_id in ids:
        store.conversations.update(conv_id, {"archived_at": 1714564800})
    lines = on_screen({**env, "CONVRISK_PAGE_SIZE": "2"}, *args, columns=80)
    shown = json.loads("\n".join(lines))  # what a person would copy from the screen
    assert [item["id"] for item in shown] == ids[::-1]


class SlowPages(JSONService):
    """A service whose conversations come two per page, slowly, for up to `pages` pages."""

    pages: ClassVar[int] = 300
    delay: ClassVar[float] = 0.05

    def do_GET(self) -> None:
        query = parse_qs(urlsplit(self.path).query)
        after = query.get("starting_after", ["conv_0000"])[0]
        start = int(after.removeprefix("conv_")) + 1
        time.sleep(self.delay)
        data = [
            {"id": f"conv_{n:04d}", "contact_id": f"c_{n}", "created_at": 1714564800}
            for n in (start, start + 1)
        ]
        self.send_json(200, {"data": data, "has_more": start < 2 * self.pages})


@pytest.fixture
def slow_service(env: dict[str, str]) -> Iterator[dict[str, str]]:
    """`env` pointed at SlowPages on loopback."""
    with running(on_loopback(SlowPages)) as server:
        yield {
            **env,
            "CONVRISK_BASE_URL": url_of(server),
            "CONVRISK_TOKEN": "t" * 24,
            "CONVRISK_PAGE_SIZE": "2",
        }


def test_ctrl_c_during_all_clears_the_progress_and_says_interrupted(
    slow_service: dict[str, str],
) -> None:
    fmt = "table"  # and jsonl, in-process (Ctrl-C sent to the main thread)
    term = Terminal(slow_service, ["conv", "list", "--all", "-o", fmt], columns=80)
    term.read_until(b"20 conversations...")
    term.send(b"\x03")
    assert term.finish() == 130
    lines = term.text()
    assert lines[-1] == "Interrupted."
    assert not any("conversations..." in line for line in lines), lines
    assert "conv_0001" in "".join(lines)  # what was printed before stays


def test_ctrl_c_at_the_delete_question_says_interrupted_on_its_own_line(
    env: dict[str, str], store: Any
) -> None:
    conv_id = store.conversations.create({"contact_id": "c"})["id"]
    term = Terminal(env, ["conv", "delete", conv_id], columns=80)
    term.read_until(b"[y/N]")
    term.send(b"\x03")
    assert term.finish() == 130
    lines = term.text()
    assert lines[-1] == "Interrupted."
    assert lines[-2].startswith(f"Delete conversation ({conv_id}) for good? [y/N]")
    assert [c["id"] for c in store.conversations.list()["data"]] == [conv_id]


# -- questions on the controlling terminal -------------------------------------------------------


def test_delete_with_ids_from_a_pipe_asks_on_the_terminal(
    env: dict[str, str], store: Any, tmp_path: Any
) -> None:
    """As `xargs -p`: stdin carries the ids, the question and the answer use /dev/tty."""
    keep = store.conversations.create({"contact_id": "keep"})["id"]
    drop = [store.conversations.create({"contact_id": f"d{i}"})["id"] for i in range(2)]
    ids_file = tmp_path / "ids.txt"
    ids_file.write_text("".join(f"{i}\n" for i in drop))
    with ids_file.open() as ids:
        term = Terminal(env, ["conv", "delete", "-", "-o", "id"], columns=120, stdin=ids)
        term.read_until(b"[y/N]")
        term.send(b"y\r")
        assert term.finish() == 0
    lines = term.text()
    assert lines[0] == f"Delete 2 conversations ({drop[0]}, {drop[1]}) for good? [y/N]: y"
    assert lines[1:] == drop
    assert [c["id"] for c in store.conversations.list()["data"]] == [keep]


def test_delete_with_ids_from_a_pipe_and_no_terminal_refuses(
    env: dict[str, str], store: Any
) -> None:
    conv_id = store.conversations.create({"contact_id": "c"})["id"]
    refused = run(env, "conv", "delete", "-", input=f"{conv_id}\n")  # no controlling terminal
    assert refused.returncode == 2
    assert "there is no terminal to ask on. Pass --yes" in refused.stderr
    assert [c["id"] for c in store.conversations.list()["data"]] == [conv_id]


# -- the token typed on the terminal -------------------------------------------------------------

TOKEN = "tok_" + "s3cr3t" * 5


def test_config_set_token_on_a_terminal_asks_without_echo_and_enter_finishes(
    env: dict[str, str],
) -> None:
    args = ["config", "set", "token"]  # and `config set token -`, in-process
    term = Terminal(env, args, columns=80)
    term.read_until(b"token: ")
    term.send(TOKEN.encode() + b"\r")
    assert term.finish() == 0
    lines = term.text()
    assert lines[0] == "token:"  # nothing echoed
    assert TOKEN not in term.output.decode()
    assert lines[1].startswith("Set token = ****") and TOKEN[-4:] in lines[1]
    config = (Path(env["XDG_CONFIG_HOME"]) / "convrisk" / "config.toml").read_text()
    assert f'token = "{TOKEN}"' in config


def test_ctrl_c_at_the_token_question_changes_nothing(env: dict[str, str]) -> None:
    term = Terminal(env, ["config", "set", "token"], columns=80)
    term.read_until(b"token: ")
    term.send(b"abc\x03")
    assert term.finish() == 130
    assert term.text()[-2:] == ["token:", "Interrupted."]
    assert not (Path(env["XDG_CONFIG_HOME"]) / "convrisk" / "config.toml").exists()


def test_config_set_token_without_a_terminal_says_how_to_give_it(env: dict[str, str]) -> None:
    result = run(env, "config", "set", "token")
    assert result.returncode == 2
    assert "config set token -` reads it from stdin" in result.stderr
    piped = run(env, "config", "set", "token", "-", input=TOKEN + "\n")
    assert piped.returncode == 0 and TOKEN not in piped.stderr
