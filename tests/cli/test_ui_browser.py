"""`convrisk ui` driven by Textual's pilot on the local backend: every key and action."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from convrisk.cli.context import AppContext
from convrisk.cli.ui.browser import Browser
from convrisk.cli.ui.rows import RecordsView, Shown

from .conftest import Invoke

# Slow (about a second each: Textual drawing every frame): the quick loop leaves them out.
# .ci/lowest does not run them: on Textual 0.86 under four loaded workers, a tab switched with
# `t` was now and then not the one `tabs.active` gave back (tests/e2e/test_ui.py, which
# .ci/lowest runs, drives Textual there on a real terminal).
pytestmark = pytest.mark.e2e

SIZE = (120, 40)
Check = Callable[[], bool]


def browse(
    script: Callable[[Browser, Pilot[int]], Coroutine[Any, Any, None]],
    *,
    size: tuple[int, int] = SIZE,
    env: dict[str, str] | None = None,
    page_size: int = 50,
) -> Browser:
    """Run the app headless with the pilot `script`; the app afterwards."""
    import os

    run = AppContext({**os.environ, **(env or {})})
    run.argv = ["ui"]
    app = Browser(run, page_size=page_size)

    async def go() -> None:
        async with app.run_test(size=size) as pilot:
            await script(app, pilot)
        run.close()

    asyncio.run(go())
    return app


async def until(pilot: Pilot[int], check: Check, what: str) -> None:
    """Wait (at most 10 s) for `check()` to hold."""
    for _ in range(200):
        if check():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"never happened: {what}")


async def on_the_profile(app: Browser, pilot: Pilot[int]) -> None:
    """Wait for the risk profiles tab to be the one shown, its one row loaded and under the
    cursor: on a loaded machine, a key pressed before that goes to the conversations tab."""
    await until(pilot, lambda: len(ids_shown(app, "risk_profiles")) == 1, "the profile")
    await until(
        pilot,
        lambda: app.view().resource.name == "risk_profiles" and app.view().current_id() is not None,
        "the risk profiles tab shown, with the profile under the cursor",
    )


def view(app: Browser, name: str = "conversations") -> RecordsView:
    return app.views[name]


def status(app: Browser) -> str:
    return app.status_bar.shown_text.plain


def says(app: Browser, text: str) -> Check:
    """Whether the status bar says `text`."""
    return lambda: text in status(app)


def detail(app: Browser) -> str:
    return app.view().query_one(".detail-text", Shown).shown_text.plain


def ids_shown(app: Browser, name: str = "conversations") -> list[str]:
    table = view(app, name).table
    return [str(key.value) for key in table.rows]


def conv_list(invoke: Invoke, *args: str) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = (
        invoke("conv", "list", "--all", "-o", "jsonl", *args).ok().jsonl()
    )
    return records


def test_the_conversations_tab_shows_each_conversation_and_its_detail(
    invoke: Invoke, conversations: Callable[[int], list[str]]
) -> None:
    ids = conversations(3)

    async def script(app: Browser, pilot: Pilot[int]) -> None:
        await until(pilot, lambda: len(ids_shown(app)) == 3, "three rows")
        assert ids_shown(app) == ids
        assert f"id: {ids[0]}" in detail(app)
        await pilot.press("down")
        await until(pilot, lambda: f"id: {ids[1]}" in detail(app), "the second's detail")
        assert "created_at: " in detail(app) and "Z (" in detail(app)  # UTC, then the number
        await pilot.press("q")

    app = browse(script)
    assert app.return_code == 0


def test_rows_load_a_page_at_a_time_as_the_cursor_nears_the_end(
    invoke: Invoke, backend: Any
) -> None:
    for i in range(130):
        backend.conversations.create({"contact_id": f"c_{i}"})

    async def script(app: Browser, pilot: Pilot[int]) -> None:
        await until(pilot, lambda: len(ids_shown(app)) == 50, "the first page")
        await pilot.pause(0.2)
        assert len(ids_shown(app)) == 50  # not the whole table
        await pilot.press("ctrl+end")
        await until(pilot, lambda: len(ids_shown(app)) == 100, "the second page")
        await pilot.press("ctrl+end")
        await until(pilot, lambda: len(ids_shown(app)) == 130, "the last page")
        assert len(set(ids_shown(app))) == 130
        await pilot.press("q")

    browse(script)


async def scroll_far_and_back(app: Browser, pilot: Pilot[int], ids: list[str]) -> None:
    """Down to the last of `ids` and back up to the first, with a page size of 10: the table
    holds a window of four pages in order, every row comes back, the cursor stays on its row."""
    conv = view(app)
    seen: set[str] = set()

    def rows() -> list[str]:
        shown = ids_shown(app)
        start = ids.index(shown[0])
        assert shown == ids[start : start + len(shown)]  # a run of rows in order
        assert len(shown) <= 4 * 10  # a window of four pages, not every row
        seen.update(shown)
        return shown

    def on(id: str) -> Check:
        return lambda: conv.current_id() == id

    await until(pilot, lambda: conv.table.row_count >= 10, "the first page")
    for _ in range(40):  # down to the end, a jump at a time
        await pilot.press("ctrl+end")
        await pilot.pause(0.1)
        if rows()[-1] == ids[-1] and conv.current_id() == ids[-1]:
            break
    assert conv.current_id() == ids[-1] and ids[0] not in rows()
    for _ in range(40):  # and back up to the top
        await pilot.press("ctrl+home")
        await pilot.pause(0.1)
        if conv.current_id() == ids[0]:
            break
    assert rows()[0] == ids[0] and seen == set(ids)
    for expected in ids[1:45]:  # row by row across the window's edge
        await pilot.press("down")
        await until(pilot, on(expected), f"down to {expected}")
        rows()
    assert f"id: {ids[44]}" in detail(app)


def test_scrolling_far_holds_a_few_pages_and_scrolling_back_shows_every_row_again(
    backend: Any,
) -> None:
    for i in range(100):
        backend.conversations.create({"contact_id": f"c_{i}"})
    ids = [str(r["id"]) for r in backend.conversations.list(None, limit=100)["data"]]

    async def script(app: Browser, pilot: Pilot[int]) -> None:
        await scroll_far_and_back(app, pilot, ids)
        await pilot.press("q")

    browse(script, page_size=10)


def test_on_narrow_screens_the_least_useful_columns_give_way_and_the_id_is_whole(
    backend: Any,
) -> None:
    for i in range(30):
        backend.conversations.create({"contact_id": f"contact_{i}"})
        backend.risk_profiles.create(
            {"customer_id": f"cus_{i}", "profile_type": "fraud", "score": 0.5, "details": {}}
        )
    shown: dict[tuple[int, str], list[str]] = {}

    def has_rows(table: Any) -> Check:
        return lambda: bool(table.row_count)

    for width in (40, 60, 80, 120):

        async def script(app: Browser, pilot: Pilot[int], width: int = width) -> None:
            for name in ("conversations", "risk_profiles"):
                app.tabs.active = name
                table = view(app, name).table
                await until(pilot, has_rows(table), f"{name} rows")
                await pilot.pause(0.1)
                titles = [str(c.label.plain) for c in table.columns.values()]
                widths = {
                    str(c.label.plain): c.get_render_width(table) for c in table.columns.values()
                }
                longest = max(len(id) for id in ids_shown(app, name))
                assert "ID" in titles and widths["ID"] >= longest + 2  # the id never cut
                assert table.max_scroll_x == 0, f"{width}: the table scrolls sideways"
                shown[width, name] = titles
            await pilot.press("q")

        browse(script, size=(width, 24))
    assert shown[40, "conversations"] == [" ", "ID"]
    # LAST ACTIVE is empty in every row: it gives way first.
    assert shown[120, "conversations"] == [" ", "ID", "WITH", "CREATED"]
    for name in ("conversations", "risk_profiles"):
        # (from 80 columns on, the detail pane is beside the table rather than below it)
        for narrow, wide in ((40, 60), (80, 120)):
            assert set(shown[narrow, name]) <= set(shown[wide, name])  # none comes back
    assert "DETAILS" not in shown[80, "risk_profiles"]  # details give way before the score


def test_the_status_bar_names_the_profile_and_the_database(db_path: Path, invoke: Invoke) -> None:
    async def script(app: Browser, pilot: Pilot[int]) -> None:
        await until(pilot, lambda: "Loading" not in status(app), "the first load")
        assert "profile default" in status(app)
        assert str(db_path) in status(app)
        await pilot.press("q")

    # Wide enough for the whole path, however deep pytest's temporary folder is (xdist adds one).
    browse(script, size=(len(str(db_path)) + 80, 30))


def test_q_quits_with_exit_0_and_ctrl_c_too(invoke: Invoke) -> None:
    for key in ("q", "ctrl+c"):

        async def script(app: Browser, pilot: Pilot[int], key: str = key) -> None:
            await pilot.press(key)

        assert browse(script).return_code == 0


def test_question_mark_shows_the_keys_and_any_key_closes_them(invoke: Invoke) -> None:
    async def script(app: Browser, pilot: Pilot[int]) -> None:
        await pilot.press("question_mark")
        await until(pilot, lambda: bool(app.screen.query("#keys")), "the keys")
        text = app.screen.query_one("#keys", Shown).shown_text.plain
        assert "mark / unmark" in text and "quit" in text
        await pilot.press("x")
        await until(pilot, lambda: not app.screen.query("#keys"), "the keys closed")
        await pilot.press("q")

    browse(script)


def test_data_with_markup_and_escapes_shows_literally(invoke: Invoke) -> None:
    invoke("conv", "create", "--contact-id", "[bold]x\x1b[31m\x07").ok()

    async def script(app: Browser, pilot: Pilot[int]) -> None:
        await until(pilot, lambda: len(ids_shown(app)) == 1, "the row")
        table = view(app).table
        cells = [str(cell) for cell in table.get_row_at(0)]
        assert any("[bold]x\\x1b[31m\\x07" in cell for cell in cells), cells
        assert "contact_id: [bold]x\\x1b[31m\\x07" in detail(app)
        await pilot.press("q")

    browse(script)


def test_r_shows_records_created_since(
    invoke: Invoke, conversations: Callable[[int], list[str]]
) -> None:
    conversations(1)

    async def script(app: Browser, pilot: Pilot[int]) -> None:
        await until(pilot, lambda: len(ids_shown(app)) == 1, "the row")
        invoke("conv", "create", "--contact-id", "c_new").ok()
        await pilot.press("r")
        await until(pilot, lambda: len(ids_shown(app)) == 2, "the new row")
        await pilot.press("q")

    browse(script)


def test_slash_filters_with_the_options_of_list_and_a_bare_contact_id(
    invoke: Invoke, conversations: Callable[[int], list[str]]
) -> None:
    ids = conversations(3)  # contacts c_2, c_1, c_0
    invoke("conv", "update", ids[2], "--mute").ok()

    async def filtered(app: Browser, pilot: Pilot[int], text: str) -> None:
        await pilot.press("slash")
        field = app.view().query_one(Input)
        field.value = text
        await pilot.press("enter")

    async def script(app: Browser, pilot: Pilot[int]) -> None:
        await until(pilot, lambda: len(ids_shown(app)) == 3, "three rows")
        await filtered(app, pilot, "--muted")
        await until(pilot, lambda: ids_shown(app) == [ids[2]], "the muted one")
        await filtered(app, pilot, "c_1")
        await until(pilot, lambda: ids_shown(app) == [ids[1]], "contact c_1's")
        await filtered(app, pilot, "--not-muted --contact-id c_2")
        await until(pilot, lambda: ids_shown(app) == [ids[0]], "c_2's, not muted")
        await filtered(app, pilot, ids[1])  # an id alone: that record
        await until(pilot, lambda: ids_shown(app) == [ids[1]], "the one record")
        await filtered(app, pilot, "conv_01HV0000000000000000000000")
        await until(pilot, lambda: "No such conversation" in status(app), "not found")
        assert ids_shown(app) == []
        await filtered(app, pilot, "conv_x")
        await until(pilot, lambda: "is not a conversation id" in status(app), "a bad id")
        await filtered(app, pilot, "--not-muted --contact-id c_2")
        await until(pilot, lambda: ids_shown(app) == [ids[0]], "c_2's again")
        await filtered(app, pilot, "--colour red")
        await until(pilot, lambda: "No such filter: --colour" in status(app), "the problem")
        assert ids_shown(app) == [ids[0]]  # the last good filter stays
        await pilot.press("q")

    browse(script)


def test_m_p_a_mute_pin_archive_the_row_and_again_undo_it(
    invoke: Invoke, conversations: Callable[[int], list[str]]
) -> None:
    conversations(1)

    async def script(app: Browser, pilot: Pilot[int]) -> None:
        await until(pilot, lambda: len(ids_shown(app)) == 1, "the row")
        for key in ("m", "p", "a"):
            await pilot.press(key)
        await until(pilot, lambda: "Archived 1 conversation." in status(app), "archived")
        await pilot.press("q")

    browse(script)
    (record,) = conv_list(invoke)
    assert record["is_muted"] and record["is_pinned"] and record["archived_at"] is not None

    async def again(app: Browser, pilot: Pilot[int]) -> None:
        await until(pilot, lambda: len(ids_shown(app)) == 1, "the row")
        for key in ("m", "p", "a"):
            await pilot.press(key)
        await until(pilot, lambda: "Unarchived 1 conversation." in status(app), "unarchived")
        await pilot.press("q")

    browse(again)
    (record,) = conv_list(invoke)
    assert not record["is_muted"] and not record["is_pinned"] and record["archived_at"] is None


def test_space_marks_rows_and_an_action_applies_to_the_marked_ones_only(
    invoke: Invoke, conversations: Callable[[int], list[str]]
) -> None:
    ids = conversations(3)

    async def script(app: Browser, pilot: Pilot[int]) -> None:
        await until(pilot, lambda: len(ids_shown(app)) == 3, "three rows")
        await pilot.press("space", "down", "down", "space", "m")
        await until(pilot, lambda: "Muted 2 conversations." in status(app), "two muted")
        await pilot.press("q")

    browse(script)
    muted = {r["id"] for r in conv_list(invoke, "--muted")}
    assert muted == {ids[0], ids[2]}


def test_d_asks_with_the_count_and_deletes_only_on_yes(
    invoke: Invoke, conversations: Callable[[int], list[str]]
) -> None:
    ids = conversations(2)

    async def answer(app: Browser, pilot: Pilot[int], text: str) -> None:
        await until(pilot, lambda: bool(app.screen.query("#answer")), "the question")
        question = app.screen.query_one("#question-text", Shown).shown_text.plain
        assert "Delete 2 records for good?" in question
        app.screen.query_one("#answer", Input).value = text
        await pilot.press("enter")

    async def script(app: Browser, pilot: Pilot[int]) -> None:
        await until(pilot, lambda: len(ids_shown(app)) == 2, "two rows")
        await pilot.press("space", "down", "space", "d")
        await answer(app, pilot, "n")
        await until(pilot, lambda: "Not deleted." in status(app), "not deleted")
        await pilot.press("d")
        await answer(app, pilot, "y")
        await until(pilot, lambda: "Deleted 2 conversations." in status(app), "deleted")
        assert ids_shown(app) == []
        await pilot.press("q")

    browse(script)
    assert conv_list(invoke) == []
    assert len(ids) == 2


def test_e_edits_a_risk_profile_with_the_rules_of_risk_update(invoke: Invoke) -> None:
    invoke(
        "risk", "create", "--customer-id", "cus_1", "--profile-type", "moderate", "--score", "5"
    ).ok()

    async def script(app: Browser, pilot: Pilot[int]) -> None:
        await pilot.press("tab")
        app.tabs.active = "risk_profiles"
        await until(pilot, lambda: len(ids_shown(app, "risk_profiles")) == 1, "the profile")
        app.view().table.focus()
        await pilot.press("e")
        await until(pilot, lambda: bool(app.screen.query("#score")), "the form")
        app.screen.query_one("#score", Input).value = "high"
        app.screen.query_one("#score", Input).focus()
        await pilot.press("enter")
        problem = app.screen.query_one("#edit-problem", Shown)
        await until(pilot, lambda: "score" in problem.shown_text.plain.lower(), "the score refused")
        app.screen.query_one("#score", Input).value = "80"
        app.screen.query_one("#details", Input).value = '{"reviewed": true}'
        await pilot.press("enter")
        await until(pilot, lambda: "Edited 1 risk profile." in status(app), "edited")
        assert '"reviewed": true' in detail(app)
        await pilot.press("q")

    browse(script)
    (record,) = invoke("risk", "list", "-o", "jsonl").ok().jsonl()
    assert record["score"] == 80 and record["details"] == {"reviewed": True}
    assert record["profile_type"] == "moderate"


def test_a_read_only_profile_refuses_actions_with_a_status_line(
    invoke: Invoke, conversations: Callable[[int], list[str]]
) -> None:
    conversations(1)

    async def script(app: Browser, pilot: Pilot[int]) -> None:
        await until(pilot, lambda: len(ids_shown(app)) == 1, "the row")
        assert "read-only" in status(app)
        await pilot.press("m")
        await until(pilot, lambda: "is read-only" in status(app), "the refusal")
        await pilot.press("q")

    browse(script, env={"CONVRISK_READ_ONLY": "1"})
    assert conv_list(invoke, "--muted") == []


def test_a_protected_profile_asks_for_the_count_typed_back(
    invoke: Invoke, conversations: Callable[[int], list[str]]
) -> None:
    conversations(2)

    async def answer(app: Browser, pilot: Pilot[int], text: str) -> None:
        await until(pilot, lambda: bool(app.screen.query("#answer")), "the question")
        app.screen.query_one("#answer", Input).value = text
        await pilot.press("enter")

    async def script(app: Browser, pilot: Pilot[int]) -> None:
        await until(pilot, lambda: len(ids_shown(app)) == 2, "two rows")
        await pilot.press("space", "down", "space", "m")
        await answer(app, pilot, "3")
        await until(pilot, lambda: "the answer was not 2" in status(app), "refused")
        await pilot.press("m")
        await answer(app, pilot, "2")
        await until(pilot, lambda: "Muted 2 conversations." in status(app), "muted")
        await pilot.press("q")

    browse(script, env={"CONVRISK_PROTECTED": "1"})
    assert len(conv_list(invoke, "--muted")) == 2


def test_writes_from_the_ui_are_journaled(
    invoke: Invoke, conversations: Callable[[int], list[str]]
) -> None:
    (id,) = conversations(1)

    async def script(app: Browser, pilot: Pilot[int]) -> None:
        await until(pilot, lambda: len(ids_shown(app)) == 1, "the row")
        await pilot.press("p")
        await until(pilot, lambda: "Pinned 1 conversation." in status(app), "pinned")
        await pilot.press("q")

    browse(script)
    entries = invoke("history", "-o", "jsonl").ok().jsonl()
    (pinned,) = [e for e in entries if e["operation"] == "update"]
    assert pinned["argv"] == ["convrisk", "ui"] and pinned["id"] == id
    assert pinned["before"]["is_pinned"] is False and pinned["after"]["is_pinned"] is True


def rendered(app: Browser) -> str:
    """The characters on the screen, line by line (from Textual's screenshot)."""
    import html
    import re

    lines = re.findall(r"<text [^>]*>(.*?)</text>", app.export_screenshot())
    return "\n".join(html.unescape(line).replace("\xa0", " ") for line in lines)


@pytest.mark.parametrize("size", [(40, 12), (80, 24)])
def test_a_small_terminal_still_shows_ids_and_the_status(
    invoke: Invoke, conversations: Callable[[int], list[str]], size: tuple[int, int]
) -> None:
    (id,) = conversations(1)

    async def script(app: Browser, pilot: Pilot[int]) -> None:
        await until(pilot, lambda: len(ids_shown(app)) == 1, "the row")
        await until(pilot, lambda: id in rendered(app), "the id whole on the screen")
        assert "profile default" in rendered(app)  # the status bar
        await pilot.press("q")

    browse(script, size=size)


def test_keys_typed_in_the_filter_are_text_and_escape_closes_it(
    invoke: Invoke, conversations: Callable[[int], list[str]]
) -> None:
    conversations(1)

    async def script(app: Browser, pilot: Pilot[int]) -> None:
        await until(pilot, lambda: len(ids_shown(app)) == 1, "the row")
        await pilot.press("slash", "q", "m", "d")
        field = app.view().query_one(Input)
        assert field.value == "qmd" and app.is_running
        await pilot.press("escape")
        assert app.focused is app.view().table
        await pilot.press("q")

    assert browse(script).return_code == 0
    assert conv_list(invoke, "--muted") == []


def test_t_switches_tabs_and_loads_risk_profiles_when_first_shown(invoke: Invoke) -> None:
    invoke(
        "risk", "create", "--customer-id", "cus_1", "--profile-type", "moderate", "--score", "5"
    ).ok()

    async def script(app: Browser, pilot: Pilot[int]) -> None:
        await until(pilot, lambda: not view(app).fetching, "the conversations")
        assert not view(app, "risk_profiles").started  # not asked for until shown
        await pilot.press("t")
        await until(pilot, lambda: len(ids_shown(app, "risk_profiles")) == 1, "the profile")
        assert app.view() is view(app, "risk_profiles")
        assert "customer_id: cus_1" in detail(app)
        await pilot.press("t")
        assert app.view() is view(app)
        await pilot.press("q")

    browse(script)


EVIL = "\x1b]0;PWNED\x07\x1b[2J"


def test_a_time_field_a_service_sent_as_hostile_text_is_escaped_in_the_detail() -> None:
    from convrisk.cli.output.resource_kinds import KINDS
    from convrisk.cli.ui.rows import detail_text

    text = detail_text(KINDS["conversations"], {"id": "conv_1", "created_at": EVIL}).plain
    assert "\x1b" not in text and "\x07" not in text
    assert "created_at: \\x1b]0;PWNED\\x07" in text


def test_the_edit_form_shows_a_hostile_profile_type_escaped_and_does_not_send_it_unchanged(
    invoke: Invoke, backend: Any
) -> None:
    backend.risk_profiles.create(
        {"customer_id": "cus_1", "profile_type": "x" + EVIL, "score": 5, "details": {"k": EVIL}}
    )

    async def script(app: Browser, pilot: Pilot[int]) -> None:
        await pilot.press("t")
        await on_the_profile(app, pilot)
        await pilot.press("e")
        await until(pilot, lambda: bool(app.screen.query("#profile_type")), "the form")
        for name in ("profile_type", "score", "details"):
            value = app.screen.query_one(f"#{name}", Input).value
            assert "\x1b" not in value and "\x07" not in value, name
        app.screen.query_one("#score", Input).value = "7"
        app.screen.query_one("#score", Input).focus()
        await pilot.press("enter")
        await until(pilot, lambda: "Edited 1 risk profile." in status(app), "edited")
        await pilot.press("q")

    browse(script)
    (record,) = invoke("risk", "list", "-o", "jsonl").ok().jsonl()
    assert record["score"] == 7
    assert record["profile_type"] == "x" + EVIL and record["details"] == {"k": EVIL}


def test_a_value_of_megabytes_is_shown_clipped_with_its_length(
    invoke: Invoke, backend: Any
) -> None:
    id = backend.conversations.create({"contact_id": "L" * 3_000_000})["id"]

    async def script(app: Browser, pilot: Pilot[int]) -> None:
        await until(pilot, lambda: ids_shown(app) == [id], "the row")
        await until(pilot, lambda: "more characters" in detail(app), "the detail")
        assert len(detail(app)) < 30_000
        cell = view(app).table.get_row(id)[2].plain
        assert len(cell) < 1_000 and "more characters)" in cell
        await pilot.press("q")

    browse(script)


def test_on_a_40_column_terminal_the_status_bar_still_shows_the_problem_line(
    invoke: Invoke, conversations: Callable[[int], list[str]]
) -> None:
    conversations(1)

    async def script(app: Browser, pilot: Pilot[int]) -> None:
        await until(pilot, lambda: len(ids_shown(app)) == 1, "the row")
        app.say("Something failed.")
        await pilot.pause(0.1)
        where, problem = app.status_bar.shown_text.plain.split("\n")
        assert len(where) <= 40 and where.endswith("…")  # the db path is longer than that
        assert problem == "Something failed."
        assert app.status_bar.region.height == 2
        await pilot.press("question_mark")
        await until(pilot, lambda: bool(app.screen.query("#keys")), "the keys")
        await pilot.pause(0.1)
        assert app.screen.query_one("#keys").region.width <= 40  # wrapped, not cut
        await pilot.press("q")

    browse(script, size=(40, 12))


def test_marked_rows_one_deleted_meanwhile_the_others_are_done_and_the_gone_row_removed(
    invoke: Invoke, conversations: Callable[[int], list[str]]
) -> None:
    ids = conversations(3)

    async def script(app: Browser, pilot: Pilot[int]) -> None:
        await until(pilot, lambda: len(ids_shown(app)) == 3, "three rows")
        invoke("conv", "delete", ids[1], "--yes").ok()  # by someone else, meanwhile
        await pilot.press("space", "down", "space", "down", "space", "m")
        await until(pilot, lambda: "Muted 2 conversations." in status(app), "two muted")
        assert f"1 failed: {ids[1]}: No such conversation" in status(app)
        assert ids_shown(app) == [ids[0], ids[2]]
        assert not view(app).marked  # nothing left to fail again
        await pilot.press("q")

    browse(script)
    assert {r["id"] for r in conv_list(invoke, "--muted")} == {ids[0], ids[2]}


def test_a_journal_that_cannot_be_written_is_said_in_the_status_bar(
    invoke: Invoke, conversations: Callable[[int], list[str]], home: Path
) -> None:
    conversations(1)
    (home / "a-file").write_text("")
    journal = str(home / "a-file" / "journal.jsonl")  # under a file: cannot be made

    async def script(app: Browser, pilot: Pilot[int]) -> None:
        await until(pilot, lambda: len(ids_shown(app)) == 1, "the row")
        await pilot.press("m")
        await until(pilot, lambda: "Muted 1 conversation." in status(app), "muted")
        assert "The journal was not written" in status(app)
        assert "`undo` will not know them" in status(app)
        await pilot.press("q")

    browse(script, env={"CONVRISK_JOURNAL": journal})
    assert len(conv_list(invoke, "--muted")) == 1


def test_on_a_40x12_terminal_the_edit_form_fits_and_its_problem_line_is_seen(
    invoke: Invoke, backend: Any
) -> None:
    backend.risk_profiles.create(
        {"customer_id": "cus_1", "profile_type": "fraud", "score": 5, "details": {"a": 1}}
    )

    async def script(app: Browser, pilot: Pilot[int]) -> None:
        await pilot.press("t")
        await on_the_profile(app, pilot)
        await pilot.press("e")
        await until(pilot, lambda: bool(app.screen.query("#score")), "the form")
        await pilot.pause(0.1)
        form = app.screen.query_one("#edit").region
        assert app.screen.region.contains_region(form), form  # its title not above the top
        app.screen.query_one("#score", Input).value = "high"
        app.screen.query_one("#score", Input).focus()
        await pilot.press("enter")
        problem = app.screen.query_one("#edit-problem", Shown)
        await until(pilot, lambda: "score" in problem.shown_text.plain.lower(), "the refusal")
        await pilot.pause(0.2)
        assert form.contains_region(problem.region), (problem.region, form)
        await pilot.press("escape", "q")

    browse(script, size=(40, 12))


async def answered(app: Browser, pilot: Pilot[int], text: str | None) -> str:
    """The question on screen answered (`text` typed, then Enter; None: Escape) and closed: its
    text."""
    await until(pilot, lambda: bool(app.screen.query("#answer")), "the question")
    question = app.screen.query_one("#question-text", Shown).shown_text.plain
    if text is None:
        await pilot.press("escape")
    else:
        app.screen.query_one("#answer", Input).value = text
        await pilot.press("enter")
    await until(pilot, lambda: not app.screen.query("#answer"), "the question closed")
    return question


def ui_writes(invoke: Invoke) -> list[dict[str, Any]]:
    """The journal's entries of writes made by the ui."""
    entries: list[dict[str, Any]] = invoke("history", "-o", "jsonl").ok().jsonl()
    return [e for e in entries if e["argv"] == ["convrisk", "ui"]]


def risk_list(invoke: Invoke) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = invoke("risk", "list", "-o", "jsonl").ok().jsonl()
    return records


def test_on_a_protected_profile_d_deletes_only_once_the_count_is_typed_back(
    invoke: Invoke, conversations: Callable[[int], list[str]]
) -> None:
    ids = conversations(2)
    question = "Protected profile 'default': delete conversations: 2 records. "
    question += "Type the number of records (2) to delete conversations:"

    async def script(app: Browser, pilot: Pilot[int]) -> None:
        await until(pilot, lambda: len(ids_shown(app)) == 2, "two rows")
        assert "profile default [protected]" in status(app)
        await pilot.press("space", "down", "space", "d")
        assert await answered(app, pilot, "3") == question
        await until(pilot, lambda: "the answer was not 2" in status(app), "refused")
        assert "Aborted (the answer was not 2): nothing was sent." in status(app)
        assert {r["id"] for r in conv_list(invoke)} == set(ids)
        await pilot.press("d")
        assert await answered(app, pilot, None) == question
        await until(pilot, lambda: "Aborted (no answer): nothing was sent." in status(app), "Esc")
        assert {r["id"] for r in conv_list(invoke)} == set(ids) and ids_shown(app) == ids
        await pilot.press("d")
        assert await answered(app, pilot, "2") == question
        await until(pilot, lambda: "Deleted 2 conversations." in status(app), "deleted")
        assert ids_shown(app) == [] and "[protected]" in status(app)
        await pilot.press("q")

    assert browse(script, env={"CONVRISK_PROTECTED": "1"}).return_code == 0
    assert conv_list(invoke) == []


def test_on_a_protected_profile_e_saves_only_once_the_count_is_typed_back(
    invoke: Invoke,
) -> None:
    invoke(
        "risk", "create", "--customer-id", "cus_1", "--profile-type", "moderate", "--score", "5"
    ).ok()
    question = "Protected profile 'default': update risk profiles: 1 record. "
    question += "Type the number of records (1) to update risk profiles:"

    async def edited(app: Browser, pilot: Pilot[int], score: str) -> None:
        await pilot.press("e")
        await until(pilot, lambda: bool(app.screen.query("#score")), "the form")
        app.screen.query_one("#score", Input).value = score
        app.screen.query_one("#score", Input).focus()
        await pilot.press("enter")

    async def script(app: Browser, pilot: Pilot[int]) -> None:
        await pilot.press("t")
        await until(pilot, lambda: len(ids_shown(app, "risk_profiles")) == 1, "the profile")
        assert "[protected]" in status(app)
        await edited(app, pilot, "80")
        assert await answered(app, pilot, "2") == question
        await until(pilot, lambda: "the answer was not 1" in status(app), "refused")
        assert "Aborted (the answer was not 1): nothing was sent." in status(app)
        assert risk_list(invoke)[0]["score"] == 5
        await edited(app, pilot, "80")
        assert await answered(app, pilot, None) == question
        await until(pilot, lambda: "Aborted (no answer): nothing was sent." in status(app), "Esc")
        assert risk_list(invoke)[0]["score"] == 5
        await edited(app, pilot, "80")
        assert await answered(app, pilot, "1") == question
        await until(pilot, lambda: "Edited 1 risk profile." in status(app), "edited")
        assert "[protected]" in status(app)
        await pilot.press("q")

    assert browse(script, env={"CONVRISK_PROTECTED": "1"}).return_code == 0
    (record,) = risk_list(invoke)
    assert record["score"] == 80
    (entry,) = ui_writes(invoke)
    assert entry["operation"] == "update" and entry["after"]["score"] == 80


def test_escape_on_the_delete_question_keeps_the_rows_and_says_not_deleted(
    invoke: Invoke, conversations: Callable[[int], list[str]]
) -> None:
    ids = conversations(2)

    async def script(app: Browser, pilot: Pilot[int]) -> None:
        await until(pilot, lambda: len(ids_shown(app)) == 2, "two rows")
        await pilot.press("d")
        question = await answered(app, pilot, None)
        assert question == "Delete 1 record for good? (y/N)"
        await until(pilot, lambda: "Not deleted." in status(app), "not deleted")
        assert ids_shown(app) == ids
        await pilot.press("q")

    browse(script)
    assert [r["id"] for r in conv_list(invoke)] == ids
    assert ui_writes(invoke) == []


def test_escape_on_the_edit_form_sends_nothing_and_leaves_the_profile_as_it_was(
    invoke: Invoke,
) -> None:
    invoke(
        "risk", "create", "--customer-id", "cus_1", "--profile-type", "moderate", "--score", "5"
    ).ok()
    (before,) = risk_list(invoke)

    async def script(app: Browser, pilot: Pilot[int]) -> None:
        await pilot.press("t")
        await on_the_profile(app, pilot)
        await pilot.press("e")
        await until(pilot, lambda: bool(app.screen.query("#score")), "the form")
        app.screen.query_one("#score", Input).value = "99"
        app.screen.query_one("#profile_type", Input).value = "aggressive"
        await pilot.press("escape")
        await until(pilot, lambda: not app.screen.query("#score"), "the form closed")
        await pilot.pause(0.2)  # a write would have started by now
        assert "Edited" not in status(app) and "Writing" not in status(app)
        assert "score: 5" in detail(app)
        await pilot.press("q")

    browse(script)
    assert risk_list(invoke) == [before]
    assert ui_writes(invoke) == []


def test_space_twice_unmarks_the_row_and_the_action_goes_to_the_cursor_row(
    invoke: Invoke, conversations: Callable[[int], list[str]]
) -> None:
    ids = conversations(2)

    async def script(app: Browser, pilot: Pilot[int]) -> None:
        await until(pilot, lambda: len(ids_shown(app)) == 2, "two rows")
        conv = view(app)
        await pilot.press("space")
        assert list(conv.marked) == [ids[0]] and conv.table.get_row(ids[0])[0].plain == "*"
        await pilot.press("space")
        assert not conv.marked and conv.table.get_row(ids[0])[0].plain == " "
        await pilot.press("down", "m")
        await until(pilot, lambda: "Muted 1 conversation." in status(app), "muted")
        await pilot.press("q")

    browse(script)
    assert [r["id"] for r in conv_list(invoke, "--muted")] == [ids[1]]


def test_mute_pin_archive_on_risk_profiles_and_edit_on_conversations_are_refused_with_a_line(
    invoke: Invoke, conversations: Callable[[int], list[str]]
) -> None:
    conversations(1)
    invoke(
        "risk", "create", "--customer-id", "cus_1", "--profile-type", "moderate", "--score", "5"
    ).ok()
    (profile_before,) = risk_list(invoke)
    (conversation_before,) = conv_list(invoke)

    async def script(app: Browser, pilot: Pilot[int]) -> None:
        await until(pilot, lambda: len(ids_shown(app)) == 1, "the row")
        await pilot.press("e")
        await until(pilot, lambda: "Edit is for risk profiles." in status(app), "e refused")
        assert not app.screen.query("#score")  # no form
        await pilot.press("t")
        await until(pilot, lambda: len(ids_shown(app, "risk_profiles")) == 1, "the profile")
        for key, line in (
            ("m", "Muted is for conversations."),
            ("p", "Pinned is for conversations."),
            ("a", "Archived is for conversations."),
        ):
            await pilot.press(key)
            await until(pilot, says(app, line), f"{key} refused")
        await pilot.press("q")

    browse(script)
    assert risk_list(invoke) == [profile_before] and conv_list(invoke) == [conversation_before]
    assert ui_writes(invoke) == []


def test_slash_on_risk_profiles_filters_by_type_a_bare_customer_id_and_an_id_alone(
    invoke: Invoke,
) -> None:
    for customer, kind in (("cus_a", "moderate"), ("cus_b", "aggressive"), ("cus_c", "moderate")):
        invoke(
            "risk", "create", "--customer-id", customer, "--profile-type", kind, "--score", "5"
        ).ok()
    by_customer = {r["customer_id"]: r["id"] for r in risk_list(invoke)}

    def shown(app: Browser) -> set[str]:
        return set(ids_shown(app, "risk_profiles"))

    async def filtered(app: Browser, pilot: Pilot[int], text: str, ids: set[str]) -> None:
        await pilot.press("slash")
        app.view().query_one(Input).value = text
        await pilot.press("enter")
        await until(pilot, lambda: shown(app) == ids, f"{text!r}: {ids}")

    async def script(app: Browser, pilot: Pilot[int]) -> None:
        await pilot.press("t")
        await until(pilot, lambda: len(shown(app)) == 3, "three profiles")
        moderate = {by_customer["cus_a"], by_customer["cus_c"]}
        await filtered(app, pilot, "--profile-type moderate", moderate)
        await filtered(app, pilot, "cus_b", {by_customer["cus_b"]})
        await filtered(app, pilot, "--profile-type moderate cus_c", {by_customer["cus_c"]})
        await filtered(app, pilot, by_customer["cus_a"], {by_customer["cus_a"]})
        assert "customer_id: cus_a" in detail(app)
        await filtered(app, pilot, "", set(by_customer.values()))
        await pilot.press("q")

    browse(script)
