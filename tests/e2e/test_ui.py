"""`convrisk ui` as installed (a real pty, rendered with pyte) and against services on loopback:
a real `convrisk serve`, one that answers 500 and one that never answers."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from convrisk.cli.ui.browser import Browser
from convrisk.cli.ui.rows import Shown
from tests import described
from tests.cli.test_ui_browser import (
    answered,
    browse,
    ids_shown,
    says,
    scroll_far_and_back,
    status,
    until,
)
from tests.loopback import JSONService, on_loopback, running, url_of

from .both_backends import serving
from .console import run
from .screen import Terminal

# How long the hanging service holds a request at most (the test releases it sooner).
HANG_SECONDS = 60


@pytest.fixture(autouse=True)
def own_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ui run in this process (`browse`) journals and reads its config in the test's own
    folders, never in the HOME of the user running the tests."""
    for name in [n for n in os.environ if n.startswith("CONVRISK_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "own" / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "own" / "state"))


def test_ui_on_a_terminal_shows_a_conversation_id_and_q_quits_with_0(
    env: dict[str, str], store: Any
) -> None:
    id = store.conversations.create({"contact_id": "c_pty"})["id"]
    term = Terminal(env, ["ui"], columns=100, lines=30)
    shown = on_the_screen(term, id)
    assert any("profile default" in line for line in on_the_screen(term, "profile default"))
    assert any(id in line for line in shown)
    term.send(b"q")
    assert_terminal_as_it_was(term)
    assert term.finish() == 0


def assert_terminal_as_it_was(term: Terminal) -> None:
    """Once the ui has quit: the terminal's modes as a new one's (echo, line editing, no raw
    mode), the alternate screen left, the cursor shown, mouse reports and bracketed paste off."""
    import pty
    import termios

    term.read_until(b"\x00never")  # to the end: the ui has exited
    main, child = pty.openpty()
    try:
        fresh = termios.tcgetattr(child)
    finally:
        os.close(main)
        os.close(child)
    assert termios.tcgetattr(term.main_fd) == fresh
    tail = term.output[term.output.rindex(b"\x1b[?1049l") :]
    assert b"\x1b[?1049h" not in tail and b"\x1b[?25h" in tail
    for mode in (b"1000", b"1003", b"1006", b"2004"):  # each set mode was reset after
        assert term.output.rindex(b"\x1b[?" + mode + b"l") > term.output.rindex(
            b"\x1b[?" + mode + b"h"
        ), mode


def test_ui_on_a_40x12_terminal_shows_the_id_whole(env: dict[str, str], store: Any) -> None:
    id = store.conversations.create({"contact_id": "c_small"})["id"]
    term = Terminal(env, ["ui"], columns=40, lines=12)
    on_the_screen(term, id)
    term.send(b"\x03")  # Ctrl-C quits as q does
    assert_terminal_as_it_was(term)
    assert term.finish() == 0


def on_the_screen(term: Terminal, text: str) -> list[str]:
    """The screen's lines once `text` shows on one of them (within 60 s)."""
    deadline = time.monotonic() + 60
    term.read_until(text.encode())
    while not any(text in line for line in term.text()):
        assert time.monotonic() < deadline, "\n".join(term.text())
        read_more(term)
    return term.text()


def read_more(term: Terminal, seconds: float = 0.1) -> None:
    """What the ui writes within `seconds` (read_until returns at once for a marker already
    written, so it cannot wait for the screen to change)."""
    import select

    ready, _, _ = select.select([term.main_fd], [], [], seconds)
    if ready:
        try:
            term.output += os.read(term.main_fd, 65536)
        except OSError:  # the ui has exited
            time.sleep(seconds)


def off_the_screen(term: Terminal, text: str) -> None:
    """Wait (at most 60 s) until `text` is on none of the screen's lines."""
    deadline = time.monotonic() + 60
    while any(text in line for line in term.text()):
        assert time.monotonic() < deadline, "\n".join(term.text())
        read_more(term)


def test_ui_with_stdout_piped_exits_2_with_one_line(env: dict[str, str]) -> None:
    result = run(env, "ui")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and "needs a terminal" in result.stderr


def cli_error(env: dict[str, str], tmp_path: Path) -> str:
    """The error line `conv list` prints with this environment, without its `Error: ` label."""
    home = {"HOME": str(tmp_path), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    result = run({**home, "LANG": "C.UTF-8", **env}, "conv", "list", "--limit", "50")
    assert result.returncode != 0
    line = result.stderr.splitlines()[0]
    return line.split(": ", 1)[1] if line.lower().startswith("error: ") else line


def remote_env(url: str, token: str = "t") -> dict[str, str]:
    return {"CONVRISK_BASE_URL": url, "CONVRISK_TOKEN": token, "CONVRISK_MAX_RETRIES": "0"}


def test_ui_against_serve_every_key_and_action(tmp_path: Path) -> None:
    with serving(tmp_path) as served:
        from convrisk.local_backend.backend import LocalBackend

        seeded = LocalBackend(served.db_path)
        try:
            ids = [seeded.conversations.create({"contact_id": f"c_{i}"})["id"] for i in range(3)]
            seeded.risk_profiles.create(
                {"customer_id": "cus_1", "profile_type": "moderate", "score": 5, "details": {}}
            )
        finally:
            seeded.close()

        async def filtered(app: Browser, pilot: Pilot[int], text: str) -> None:
            await pilot.press("slash")
            app.view().query_one(Input).value = text
            await pilot.press("enter")

        async def script(app: Browser, pilot: Pilot[int]) -> None:
            await until(pilot, lambda: sorted(ids_shown(app)) == sorted(ids), "every row")
            assert served.url.split("//")[1] in status(app)
            await pilot.press("space", "down", "space", "m")  # the two newest
            await until(pilot, lambda: "Muted 2 conversations." in status(app), "muted")
            await pilot.press("p")
            await until(pilot, lambda: "Pinned 1 conversation." in status(app), "pinned")
            await pilot.press("a")
            await until(pilot, lambda: "Archived 1 conversation." in status(app), "archived")
            await filtered(app, pilot, "--muted")
            await until(pilot, lambda: len(ids_shown(app)) == 2, "the muted ones")
            await filtered(app, pilot, "c_0")  # a contact id: scanned, as list does remotely
            await until(pilot, lambda: ids_shown(app) == [ids[0]], "c_0's")
            await filtered(app, pilot, "")
            await until(pilot, lambda: len(ids_shown(app)) == 3, "every row again")
            await pilot.press("d")
            assert await answered(app, pilot, None) == "Delete 1 record for good? (y/N)"
            await until(pilot, says(app, "Not deleted."), "Escape: not deleted")
            assert len(ids_shown(app)) == 3
            await pilot.press("d")
            assert await answered(app, pilot, "y") == "Delete 1 record for good? (y/N)"
            await until(pilot, lambda: "Deleted 1 conversation." in status(app), "deleted")
            await pilot.press("r")
            await until(pilot, lambda: len(ids_shown(app)) == 2, "two rows after refresh")
            app.tabs.active = "risk_profiles"
            await until(pilot, lambda: len(ids_shown(app, "risk_profiles")) == 1, "the profile")
            await pilot.press("e")
            await until(pilot, lambda: bool(app.screen.query("#score")), "the form")
            app.screen.query_one("#score", Input).value = "70"
            app.screen.query_one("#score", Input).focus()
            await pilot.press("enter")
            await until(pilot, lambda: "Edited 1 risk profile." in status(app), "edited")
            await pilot.press("q")

        journal = tmp_path / "ui-journal.jsonl"
        env = {**remote_env(served.url, served.token), "CONVRISK_JOURNAL": str(journal)}
        assert browse(script, env=env).return_code == 0
        check = LocalBackend(served.db_path)
        try:
            left = {r["id"]: r for r in check.conversations.list(limit=10)["data"]}
            (profile,) = check.risk_profiles.list(limit=10)["data"]
        finally:
            check.close()
        history = run(
            {"HOME": str(tmp_path), "LANG": "C.UTF-8", **env}, "history", "--all", "-o", "json"
        )
    assert history.returncode == 0, history.stderr
    entries = json.loads(history.stdout)[::-1]  # oldest first
    assert all(e["argv"] == ["convrisk", "ui"] and e["backend"] == "remote" for e in entries)
    assert all(e["target"] == served.url and e["outcome"]["status"] == "ok" for e in entries)
    written = [(e["operation"], e["id"], e["after"]) for e in entries]
    assert [(operation, id) for operation, id, _ in written] == [
        ("update", ids[2]),
        ("update", ids[1]),
        ("update", ids[1]),
        ("update", ids[1]),
        ("delete", ids[2]),
        ("update", profile["id"]),
    ]
    assert written[0][2]["is_muted"] and written[1][2]["is_muted"]
    assert written[2][2]["is_pinned"] and written[3][2]["archived_at"] is not None
    assert written[4][2] is None and written[5][2]["score"] == 70
    # ids[2] (the newest) and ids[1] muted; ids[1], under the cursor, pinned and archived; then,
    # the filter cleared, the cursor back on the first row: ids[2] deleted
    assert set(left) == {ids[0], ids[1]}
    assert not left[ids[0]]["is_muted"] and not left[ids[0]]["is_pinned"]
    kept = left[ids[1]]
    assert kept["is_muted"] and kept["is_pinned"] and kept["archived_at"] is not None
    assert profile["score"] == 70


def test_ui_against_serve_a_protected_profile_mutes_only_once_the_count_is_typed_back(
    tmp_path: Path,
) -> None:
    with serving(tmp_path) as served:
        from convrisk.local_backend.backend import LocalBackend

        seeded = LocalBackend(served.db_path)
        try:
            ids = [seeded.conversations.create({"contact_id": f"c_{i}"})["id"] for i in range(2)]
        finally:
            seeded.close()
        question = "Protected profile 'default': update conversations: 2 records. "
        question += "Type the number of records (2) to update conversations:"

        def muted() -> set[str]:
            check = LocalBackend(served.db_path)
            try:
                page = check.conversations.list({"muted": True}, limit=10)["data"]
            finally:
                check.close()
            return {str(r["id"]) for r in page}

        async def script(app: Browser, pilot: Pilot[int]) -> None:
            await until(pilot, lambda: len(ids_shown(app)) == 2, "two rows")
            assert "[protected]" in status(app)
            await pilot.press("space", "down", "space", "m")
            assert await answered(app, pilot, "1") == question
            await until(pilot, says(app, "Aborted (the answer was not 2): nothing was sent."), "1")
            await pilot.press("m")
            assert await answered(app, pilot, None) == question
            await until(pilot, says(app, "Aborted (no answer): nothing was sent."), "Escape")
            assert muted() == set()
            await pilot.press("m")
            assert await answered(app, pilot, "2") == question
            await until(pilot, says(app, "Muted 2 conversations."), "muted")
            await pilot.press("q")

        env = {**remote_env(served.url, served.token), "CONVRISK_PROTECTED": "1"}
        assert browse(script, env=env).return_code == 0
        assert muted() == set(ids)


class Failing(JSONService):
    """Every request answered 500."""

    def do_GET(self) -> None:
        self.send_json(500, {"error": {"type": "api_error", "message": "boom"}})


class Hanging(JSONService):
    """Every request held until the test lets go (or HANG_SECONDS)."""

    release = threading.Event()

    def do_GET(self) -> None:
        self.release.wait(HANG_SECONDS)
        self.send_json(503, {"error": {"type": "api_error", "message": "late"}})


class Huge(JSONService):
    """A page far over the cap (CONVRISK_MAX_RESPONSE_MB=1): 3 MiB of one string."""

    def do_GET(self) -> None:
        self.send_json(200, b'{"data": [], "has_more": false, "pad": "' + b"x" * (3 << 20) + b'"}')


def conversation(id: str) -> dict[str, Any]:
    """A conversation as the service answers it."""
    return described.conversation(id, 1714560000, contact_id="c_1")


class SlowThenNew(JSONService):
    """The first list answered late with the old row; every later one at once with the new."""

    answered = 0
    lock = threading.Lock()

    def do_GET(self) -> None:
        with self.lock:
            SlowThenNew.answered += 1
            first = SlowThenNew.answered == 1
        if first:
            time.sleep(1)
        id = "conv_01HV0000000000000000000OLD" if first else "conv_01HV0000000000000000000NEW"
        self.send_json(200, {"object": "list", "data": [conversation(id)], "has_more": False})


@pytest.fixture
def hanging() -> Iterator[str]:
    Hanging.release.clear()
    with running(on_loopback(Hanging)) as server:
        try:
            yield url_of(server)
        finally:
            Hanging.release.set()


def test_ui_against_serve_holds_a_window_of_pages_and_pages_back_up(tmp_path: Path) -> None:
    with serving(tmp_path) as served:
        from convrisk.local_backend.backend import LocalBackend

        seeded = LocalBackend(served.db_path)
        try:
            for i in range(100):
                seeded.conversations.create({"contact_id": f"c_{i}"})
            ids = [str(r["id"]) for r in seeded.conversations.list(limit=100)["data"]]
        finally:
            seeded.close()

        async def script(app: Browser, pilot: Pilot[int]) -> None:
            await scroll_far_and_back(app, pilot, ids)
            await pilot.press("q")

        env = remote_env(served.url, served.token)
        assert browse(script, env=env, page_size=10).return_code == 0


@pytest.mark.parametrize("key", ["q", "ctrl+c"])
def test_a_service_answering_500_is_a_status_line_and_q_or_ctrl_c_still_quits(
    tmp_path: Path, key: str
) -> None:
    with running(on_loopback(Failing)) as server:
        message = cli_error(remote_env(url_of(server)), tmp_path)
        assert "(HTTP 500)" in message

        async def script(app: Browser, pilot: Pilot[int]) -> None:
            await until(pilot, lambda: message in status(app), "the command line's message")
            assert "Traceback" not in status(app)
            await pilot.press("r")
            await until(pilot, lambda: "(HTTP 500)" in status(app), "the error again")
            started = time.monotonic()
            await pilot.press(key)
            assert time.monotonic() - started < 5

        assert browse(script, env=remote_env(url_of(server))).return_code == 0


def test_a_page_over_the_size_cap_is_a_status_line_and_q_still_quits(tmp_path: Path) -> None:
    with running(on_loopback(Huge)) as server:
        env = {**remote_env(url_of(server)), "CONVRISK_MAX_RESPONSE_MB": "1"}
        message = cli_error(env, tmp_path)

        async def script(app: Browser, pilot: Pilot[int]) -> None:
            await until(pilot, lambda: message in status(app), "the command line's message")
            assert ids_shown(app) == []
            await pilot.press("q")

        assert browse(script, env=env).return_code == 0


def test_r_during_a_load_shows_the_refreshed_rows_only() -> None:
    SlowThenNew.answered = 0
    with running(on_loopback(SlowThenNew)) as server:

        async def script(app: Browser, pilot: Pilot[int]) -> None:
            await until(pilot, lambda: SlowThenNew.answered == 1, "the first request")
            await pilot.press("r")
            await until(pilot, lambda: SlowThenNew.answered == 2, "the second request")
            await pilot.pause(1.5)  # the late answer to the first has come and gone
            assert ids_shown(app) == ["conv_01HV0000000000000000000NEW"]
            await pilot.press("q")

        browse(script, env=remote_env(url_of(server)))


@pytest.mark.parametrize("key", ["q", "ctrl+c"])
def test_a_service_that_hangs_leaves_the_screen_responsive_and_q_or_ctrl_c_quits(
    hanging: str, key: str
) -> None:
    async def script(app: Browser, pilot: Pilot[int]) -> None:
        await until(pilot, lambda: "Loading conversations" in status(app), "the wait shown")
        await pilot.press("question_mark")  # the screen still answers keys
        await until(pilot, lambda: bool(app.screen.query("#keys")), "the keys")
        await pilot.press("escape")
        started = time.monotonic()
        await pilot.press(key)
        assert time.monotonic() - started < 5

    assert browse(script, env=remote_env(hanging)).return_code == 0


@pytest.mark.parametrize("key", [b"q", b"\x03"], ids=["q", "ctrl-c"])
def test_the_installed_ui_quits_on_q_or_ctrl_c_while_a_request_hangs_and_restores_the_terminal(
    env: dict[str, str], hanging: str, key: bytes
) -> None:
    term = Terminal({**env, **remote_env(hanging)}, ["ui"], columns=100, lines=30)
    term.read_until(b"Loading")
    started = time.monotonic()
    term.send(key)
    assert_terminal_as_it_was(term)
    assert term.finish() == 0
    assert time.monotonic() - started < 10


@pytest.mark.parametrize("key", [b"q", b"\x03"], ids=["q", "ctrl-c"])
def test_the_installed_ui_against_a_service_answering_500_quits_on_q_or_ctrl_c(
    env: dict[str, str], key: bytes
) -> None:
    with running(on_loopback(Failing)) as server:
        term = Terminal({**env, **remote_env(url_of(server))}, ["ui"], columns=100, lines=30)
        on_the_screen(term, "(HTTP 500)")
        started = time.monotonic()
        term.send(key)
        assert_terminal_as_it_was(term)
        assert term.finish() == 0
        assert time.monotonic() - started < 10


class SlowWrites(JSONService):
    """One conversation; an update answered after WRITE_DELAY seconds."""

    def do_GET(self) -> None:
        one = conversation("conv_01HV00000000000000000SLOW")
        if self.path.startswith("/v1/conversations/conv_"):
            self.send_json(200, one)
        else:
            self.send_json(200, {"object": "list", "data": [one], "has_more": False})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        changes = json.loads(self.rfile.read(length) or b"{}")
        time.sleep(WRITE_DELAY)
        self.send_json(200, {**conversation("conv_01HV00000000000000000SLOW"), **changes})

    do_PATCH = do_PUT = do_POST


WRITE_DELAY = 1.5


def test_q_during_a_write_waits_for_it_so_the_journal_holds_it(env: dict[str, str]) -> None:
    with running(on_loopback(SlowWrites)) as server:
        full = {**env, **remote_env(url_of(server))}
        term = Terminal(full, ["ui"], columns=100, lines=30)
        on_the_screen(term, "conv_01HV00000000000000000SLOW")
        term.send(b"m")
        term.read_until(b"Writing 1 of 1")
        term.send(b"q")
        assert term.finish() == 0
        entries = run(full, "history", "-o", "jsonl").stdout.splitlines()
        assert len(entries) == 1
        assert json.loads(entries[0])["id"] == "conv_01HV00000000000000000SLOW"


class IgnoresLimit(JSONService):
    """Every conversation after `starting_after` in one page, whatever the limit asked."""

    ids: ClassVar[list[str]] = [f"conv_01HV{i:022d}" for i in range(3000)]

    def do_GET(self) -> None:
        from urllib.parse import parse_qs, urlsplit

        after = parse_qs(urlsplit(self.path).query).get("starting_after", [""])[0]
        rest = self.ids[self.ids.index(after) + 1 :] if after in self.ids else self.ids
        page = {"object": "list", "data": [conversation(id) for id in rest], "has_more": False}
        self.send_json(200, page)


def test_a_service_that_ignores_the_limit_still_fills_the_table_a_page_at_a_time() -> None:
    with running(on_loopback(IgnoresLimit)) as server:

        async def script(app: Browser, pilot: Pilot[int]) -> None:
            await until(pilot, lambda: len(ids_shown(app)) == 50, "the first page")
            await pilot.pause(0.3)
            assert ids_shown(app) == IgnoresLimit.ids[:50]
            await pilot.press("ctrl+end")
            await until(pilot, lambda: len(ids_shown(app)) == 100, "the second page")
            assert ids_shown(app) == IgnoresLimit.ids[:100]
            await pilot.press("q")

        browse(script, env=remote_env(url_of(server)))


class FiftyMegabytes(JSONService):
    """Every list answered with one page of 50 MiB of conversations, whatever the limit (under
    the default cap of 256 MiB); its last megabyte held back until the test lets go."""

    body = b""
    asked = 0
    release = threading.Event()

    @classmethod
    def page(cls) -> bytes:
        """The page (made once): as many conversations as 50 MiB holds."""
        if not cls.body:
            one = json.dumps(conversation("conv_01HV" + "0" * 22))
            count = (50 << 20) // (len(one) + 2) + 1
            rows = ", ".join(one.replace("0" * 22, f"{i:022d}") for i in range(count))
            cls.body = f'{{"object": "list", "has_more": false, "data": [{rows}]}}'.encode()
        return cls.body

    def do_GET(self) -> None:
        FiftyMegabytes.asked += 1
        body = self.page()
        held = len(body) - (1 << 20)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body[:held])
            self.release.wait(HANG_SECONDS)
            self.wfile.write(body[held:])
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


def test_a_50_mb_page_leaves_the_screen_responsive_and_shows_one_page_of_rows() -> None:
    body = FiftyMegabytes.page()
    assert len(body) >= 50 << 20
    FiftyMegabytes.asked = 0
    FiftyMegabytes.release.clear()
    first = [f"conv_01HV{i:022d}" for i in range(50)]

    async def keys_open_within(app: Browser, pilot: Pilot[int], seconds: float) -> None:
        started = time.monotonic()
        await pilot.press("question_mark")
        await until(pilot, lambda: bool(app.screen.query("#keys")), "the keys")
        assert time.monotonic() - started < seconds
        await pilot.press("escape")
        await until(pilot, lambda: not app.screen.query("#keys"), "the keys closed")

    with running(on_loopback(FiftyMegabytes)) as server:

        async def script(app: Browser, pilot: Pilot[int]) -> None:
            await until(pilot, lambda: FiftyMegabytes.asked == 1, "the page asked for")
            await until(pilot, says(app, "Loading conversations"), "the wait shown")
            await keys_open_within(app, pilot, 5)  # 49 MiB read, the rest awaited
            FiftyMegabytes.release.set()
            await keys_open_within(app, pilot, 5)  # while the page is read and parsed
            await until(pilot, lambda: len(ids_shown(app)) == 50, "the first rows")
            await until(pilot, lambda: not app.view().fetching, "the load done")
            assert ids_shown(app) == first and "Loading" not in status(app)
            assert FiftyMegabytes.asked == 1  # one page, the cursor far from its end
            started = time.monotonic()
            await pilot.press("q")
            assert time.monotonic() - started < 5

        try:
            assert browse(script, env=remote_env(url_of(server))).return_code == 0
        finally:
            FiftyMegabytes.release.set()


def test_ui_with_as_curl_exits_2_with_one_line_before_the_screen(env: dict[str, str]) -> None:
    term = Terminal(env, ["--as-curl", "ui"], columns=100, lines=30)
    assert term.finish() == 2
    assert b"\x1b[?1049h" not in term.output  # the screen was never taken
    said = " ".join(term.text())
    assert said.startswith("Error: --as-curl sends nothing") and "convrisk ui" in said


class Paged(JSONService):
    """IDS paged newest first by limit, starting_after and ending_before; a page above a cursor
    (ending_before) answered after `up_delay` seconds, or with `up_status` (a 500) instead."""

    ids: ClassVar[list[str]] = [f"conv_01HV{i:022d}" for i in range(200, 0, -1)]
    up_delay = 0.0
    up_status = 200
    up_answered = 0  # pages above a cursor answered

    def do_GET(self) -> None:
        from urllib.parse import parse_qs, urlsplit

        query = {k: v[0] for k, v in parse_qs(urlsplit(self.path).query).items()}
        size = int(query.get("limit", "10"))
        if "ending_before" in query:
            time.sleep(self.up_delay)
            Paged.up_answered += 1
            if self.up_status != 200:
                self.send_json(self.up_status, {"error": {"type": "api_error", "message": "up"}})
                return
            end = self.ids.index(query["ending_before"])
            start = max(0, end - size)
            rows, more = self.ids[start:end], start > 0
        else:
            after = query.get("starting_after")
            start = self.ids.index(after) + 1 if after else 0
            rows, more = self.ids[start : start + size], start + size < len(self.ids)
        page = {"object": "list", "data": [conversation(id) for id in rows], "has_more": more}
        self.send_json(200, page)


@pytest.fixture
def paged() -> Iterator[str]:
    Paged.up_delay, Paged.up_status, Paged.up_answered = 0.0, 200, 0
    with running(on_loopback(Paged)) as server:
        yield url_of(server)


async def to_row(app: Browser, pilot: Pilot[int], id: str) -> None:
    """The cursor moved down to `id` (pages loading on the way), at most 60 key presses."""
    view = app.view()
    for _ in range(60):
        if view.current_id() == id:
            return
        shown = ids_shown(app)
        await pilot.press("pagedown" if id not in shown else "down")
        await pilot.pause(0.05)
    raise AssertionError(f"never reached {id}: {ids_shown(app)}")


def test_a_late_page_from_above_leaves_the_cursor_on_its_record_and_the_page_below_comes(
    paged: str,
) -> None:
    ids = Paged.ids

    async def script(app: Browser, pilot: Pilot[int]) -> None:
        conv = app.view()
        # At least: the page after the first may be asked for at once.
        await until(pilot, lambda: conv.table.row_count >= 10, "the first page")
        await to_row(app, pilot, ids[75])  # the window: four pages, the first ones dropped
        await until(pilot, lambda: not conv.fetching and conv.has_before, "the window moved")
        Paged.up_delay = 3.0  # long enough for the keys below to come first, even on a busy machine
        await pilot.press("ctrl+home")  # asks for the page above the window, slowly
        await until(pilot, lambda: conv.fetching, "the page above asked for")
        await pilot.press("ctrl+end")  # the user went on down meanwhile
        last = ids_shown(app)[-1]
        await until(pilot, lambda: conv.current_id() == last, "the cursor on the last row")
        answered = Paged.up_answered
        await until(pilot, lambda: Paged.up_answered > answered, "the late page")
        await pilot.pause(0.3)
        # The late page may not push the cursor's rows out: the cursor stays on its record,
        # and the page below it (not asked for while the other was awaited) comes without a key.
        assert conv.current_id() == last
        after = ids[ids.index(last) + 1]
        await until(pilot, lambda: after in ids_shown(app), "the page below the cursor")
        assert conv.current_id() == last
        assert f"id: {last}" in app.view().query_one(".detail-text", Shown).shown_text.plain
        shown = ids_shown(app)
        start = ids.index(shown[0])
        assert shown == ids[start : start + len(shown)] and len(shown) <= 40
        await pilot.press("q")

    assert browse(script, env=remote_env(paged), page_size=10).return_code == 0


def test_a_page_above_that_fails_still_lets_the_rows_below_load(paged: str) -> None:
    ids = Paged.ids

    async def script(app: Browser, pilot: Pilot[int]) -> None:
        conv = app.view()
        # At least: the page after the first may be asked for at once.
        await until(pilot, lambda: conv.table.row_count >= 10, "the first page")
        await to_row(app, pilot, ids[120])
        for _ in range(10):  # back up until the window has left the rows of ids[120]
            await pilot.press("ctrl+home")
            await pilot.pause(0.2)
            if ids[120] not in ids_shown(app):
                break
        assert ids[120] not in ids_shown(app) and conv.has_before
        Paged.up_status = 500
        await pilot.press("ctrl+home")
        await until(pilot, lambda: "(HTTP 500)" in status(app), "the failure said")
        await to_row(app, pilot, ids[-1])  # every row below still comes
        await pilot.press("q")

    assert browse(script, env=remote_env(paged), page_size=10).return_code == 0


class Repeats(JSONService):
    """A page that holds the same conversation twice."""

    def do_GET(self) -> None:
        one = conversation("conv_01HV0000000000000000000REP")
        two = conversation("conv_01HV0000000000000000000TWO")
        self.send_json(200, {"object": "list", "data": [one, two, one], "has_more": False})


def test_a_page_that_repeats_a_record_shows_it_once_and_does_not_crash() -> None:
    with running(on_loopback(Repeats)) as server:

        async def script(app: Browser, pilot: Pilot[int]) -> None:
            await until(pilot, lambda: len(ids_shown(app)) == 2, "the rows")
            await pilot.pause(0.3)
            assert ids_shown(app) == [
                "conv_01HV0000000000000000000REP",
                "conv_01HV0000000000000000000TWO",
            ]
            await pilot.press("q")

        assert browse(script, env=remote_env(url_of(server))).return_code == 0


# Each piece of hostile text with a marker of its own, found in the output only if sent raw.
HOSTILE = "\x1b]0;PWNED\x07\x1b[31mRED BEL\x07X \u009b2JC1 \u202eRTL \u0085NEL"
RAW = (b"\x1b]0;PWNED", b"\x1b[31mRED", b"BEL\x07", b"\xc2\x9b", b"\xe2\x80\xae", b"\xc2\x85")


class Hostile(JSONService):
    """Records with hostile text in every text field (and an id), errors with it too."""

    def do_GET(self) -> None:
        from urllib.parse import urlsplit

        path = urlsplit(self.path).path
        evil = {
            **conversation("conv_E" + HOSTILE),
            "contact_id": "ct" + HOSTILE,
            "group_id": "g" + HOSTILE,
            "pinned_message_id": "pm" + HOSTILE,
            "last_active_at": "la" + HOSTILE,
        }
        profile = described.risk_profile(
            id="rp_1",
            customer_id="cus" + HOSTILE,
            profile_type="pt" + HOSTILE,
            score=5,
            details={"k" + HOSTILE: "v" + HOSTILE},
            created_at="t" + HOSTILE,
            updated_at=1714560000,
        )
        pages = {
            "/v1/conversations": [conversation("conv_01HV00000000000000000FIRST"), evil],
            "/v1/risk-profiles": [profile],
        }
        if path in pages:
            self.send_json(200, {"object": "list", "data": pages[path], "has_more": False})
        else:
            error = {"type": "invalid_request_error", "message": "gone" + HOSTILE}
            self.send_json(404, {"error": error})


def test_hostile_text_in_every_field_never_reaches_the_terminal_raw(env: dict[str, str]) -> None:
    with running(on_loopback(Hostile)) as server:
        term = Terminal({**env, **remote_env(url_of(server))}, ["ui"], columns=120, lines=40)
        on_the_screen(term, "conv_01HV00000000000000000FIRST")
        term.send(b"\x1b[B")  # the hostile record: its row and its detail
        on_the_screen(term, "pinned_message_id")
        term.send(b"m")  # its id cannot be sent: the error names it
        on_the_screen(term, "is not a conversation id")
        term.send(b"t")
        on_the_screen(term, "rp_1")
        term.send(b"e")  # the edit form
        on_the_screen(term, "Enter saves")
        term.send(b"\x1b")
        off_the_screen(term, "Enter saves")  # (keys typed at once after Escape are Alt+keys)
        term.send(b"/")
        on_the_screen(term, "--customer-id --profile-type")  # the filter, focused
        term.send(b"rp_404\r")  # the service's error message
        on_the_screen(term, "HTTP 404")
        term.send(b"q")
        assert term.finish() == 0
    for raw in RAW:
        assert raw not in term.output, raw
    assert "\\x1b]0;PWNED\\x07" in "".join(term.text())  # shown, escaped


def test_ui_against_serve_the_keys_undo_switch_tabs_refuse_read_only_and_ctrl_c_quits(
    tmp_path: Path,
) -> None:
    with serving(tmp_path) as served:
        from convrisk.local_backend.backend import LocalBackend

        seeded = LocalBackend(served.db_path)
        try:
            id = seeded.conversations.create({"contact_id": "c_0"})["id"]
            seeded.risk_profiles.create(
                {"customer_id": "cus_1", "profile_type": "moderate", "score": 5, "details": {}}
            )
        finally:
            seeded.close()
        env = remote_env(served.url, served.token)

        async def twice(app: Browser, pilot: Pilot[int]) -> None:
            await until(pilot, lambda: ids_shown(app) == [id], "the row")
            for key, done, undone in (
                ("m", "Muted", "Unmuted"),
                ("p", "Pinned", "Unpinned"),
                ("a", "Archived", "Unarchived"),
            ):
                await pilot.press(key)
                await until(pilot, says(app, f"{done} 1 conversation."), done)
                await pilot.press(key)
                await until(pilot, says(app, f"{undone} 1 conversation."), undone)
            await pilot.press("question_mark")
            await until(pilot, lambda: bool(app.screen.query("#keys")), "the keys")
            await pilot.press("x")
            await until(pilot, lambda: not app.screen.query("#keys"), "the keys closed")
            await pilot.press("t")
            await until(pilot, lambda: len(ids_shown(app, "risk_profiles")) == 1, "the profile")
            assert app.tabs.active == "risk_profiles"
            await pilot.press("t")
            assert app.tabs.active == "conversations"
            await pilot.press("ctrl+c")

        assert browse(twice, env=env).return_code == 0

        async def read_only(app: Browser, pilot: Pilot[int]) -> None:
            await until(pilot, lambda: ids_shown(app) == [id], "the row")
            for key in ("m", "d"):
                app.say("")
                await pilot.press(key)
                await until(pilot, lambda: "is read-only" in status(app), f"{key} refused")
            await pilot.press("t")
            await until(pilot, lambda: len(ids_shown(app, "risk_profiles")) == 1, "the profile")
            app.say("")
            await pilot.press("e")
            await until(pilot, lambda: "is read-only" in status(app), "e refused")
            await pilot.press("q")

        assert browse(read_only, env={**env, "CONVRISK_READ_ONLY": "1"}).return_code == 0
        check = LocalBackend(served.db_path)
        try:
            (record,) = check.conversations.list(limit=10)["data"]
            (profile,) = check.risk_profiles.list(limit=10)["data"]
        finally:
            check.close()
    assert not record["is_muted"] and not record["is_pinned"] and record["archived_at"] is None
    assert profile["score"] == 5


class SamePage(JSONService):
    """The same ten conversations for every page asked, each saying there are more."""

    asked = 0

    def do_GET(self) -> None:
        SamePage.asked += 1
        rows = [conversation(f"conv_01HV{i:022d}") for i in range(10)]
        self.send_json(200, {"object": "list", "data": rows, "has_more": True})


def test_a_service_repeating_its_page_is_not_asked_again_and_again() -> None:
    SamePage.asked = 0
    with running(on_loopback(SamePage)) as server:

        async def script(app: Browser, pilot: Pilot[int]) -> None:
            await until(pilot, lambda: len(ids_shown(app)) == 10, "the page")
            await pilot.press("ctrl+end")  # near the end: the next page is asked for
            await until(pilot, lambda: SamePage.asked >= 2, "the next page asked for")
            await pilot.pause(1.0)
            assert SamePage.asked <= 3 and len(ids_shown(app)) == 10
            await pilot.press("q")

        assert browse(script, env=remote_env(url_of(server)), page_size=10).return_code == 0


def test_a_service_repeating_its_page_is_not_asked_again_as_the_cursor_moves_near_the_end() -> None:
    SamePage.asked = 0
    with running(on_loopback(SamePage)) as server:

        async def script(app: Browser, pilot: Pilot[int]) -> None:
            await until(pilot, lambda: SamePage.asked >= 2, "the page after the first")
            await until(pilot, lambda: not app.view().fetching, "its answer")
            asked = SamePage.asked
            for _ in range(5):
                await pilot.press("ctrl+end", "up", "ctrl+home")
                await pilot.pause(0.1)
            assert not app.view().fetching and SamePage.asked == asked <= 3
            assert len(ids_shown(app)) == 10
            await pilot.press("q")

        assert browse(script, env=remote_env(url_of(server)), page_size=10).return_code == 0
