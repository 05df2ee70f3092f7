"""Screenshots (SVG, Textual's own) of each screen of `convrisk ui` on fixed data (ids, times,
the database's path masked), written to docs/ui/; tests/cli/test_ui_snapshots.py compares the
same screens with the files it keeps.

.venv/bin/python bench/ui_screens.py
"""

from __future__ import annotations

import asyncio
import itertools
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import cast

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from textual.pilot import Pilot
from textual.widgets import Input

from convrisk.api_client.resources import CONVERSATIONS, ConversationUpdateParams
from convrisk.cli.context import AppContext
from convrisk.cli.ui.browser import Browser
from convrisk.local_backend.backend import LocalBackend
from convrisk.local_backend.store.ids import seeded

DOCS = Path(__file__).resolve().parents[1] / "docs" / "ui"
START = 1_714_000_000  # 2024-04-24: times that do not move
STEP = 3_607  # seconds between two writes of the fixed data
ROWS = 60  # of each resource
SHOWN_DB = "~/support/convrisk.db"  # the path the status bar shows instead of the real one


@dataclass(frozen=True)
class Shot:
    """A screen: its name, the terminal's size, the tab, the keys pressed, the filter typed."""

    name: str
    size: tuple[int, int]
    keys: tuple[str, ...] = ()
    tab: str = ""
    filter_text: str = ""


def shots(size: tuple[int, int]) -> list[Shot]:
    """Every screen at one size."""
    at = f"{size[0]}x{size[1]}"
    return [
        Shot(f"conversations-{at}", size, ("down", "space", "down", "space")),
        Shot(f"risk-profiles-{at}", size, ("down",), tab="risk_profiles"),
        Shot(f"filter-{at}", size, ("slash",), filter_text="--not-archived --contact-id ct_0007"),
        Shot(f"keys-{at}", size, ("question_mark",)),
        Shot(f"delete-question-{at}", size, ("d",)),
        Shot(f"edit-risk-profile-{at}", size, ("e",), tab="risk_profiles"),
    ]


# The screens of docs/ui.
DOC_SHOTS = [*shots((120, 40)), shots((80, 24))[0], Shot("conversations-40x12", (40, 12))]


def fixed_changes(n: int) -> ConversationUpdateParams:
    """What the n-th fixed conversation has set, from the description: its k-th settable flag
    on every (7 - 2k)th row (7, 5, 3), each settable time on every 11th from the 4th."""
    changes: dict[str, object] = {}
    flags = [f.name for f in CONVERSATIONS.updatable() if f.type == "boolean"]
    for k, name in enumerate(flags):
        if n % max(7 - 2 * k, 2) == 0:
            changes[name] = True
    for field in CONVERSATIONS.updatable():
        if field.type == "timestamp" and n % 11 == 3:
            changes[field.name] = START + STEP * n
    return cast(ConversationUpdateParams, changes)


def fill_fixed(db: Path) -> None:
    """ROWS conversations and ROWS risk profiles, the same ids and times on every run."""
    ticks = itertools.count()
    backend = LocalBackend(
        db,
        clock=lambda: START + STEP * next(ticks),
        id_sources={name: seeded(22, name) for name in ("conversations", "risk_profiles")},
    )
    try:
        for n in range(ROWS):
            made = backend.conversations.create({"contact_id": f"ct_{n % 12:04d}"})
            changes = fixed_changes(n)
            if changes:
                backend.conversations.update(str(made["id"]), changes)
        types = ("fraud", "chargeback", "aml", "abuse")
        for n in range(ROWS):
            backend.risk_profiles.create(
                {
                    "customer_id": f"cus_{n:04d}",
                    "profile_type": types[n % len(types)],
                    "score": round((n * 37 % 100) / 100, 2),
                    "details": {"reason": f"rule {n % 9}", "signals": n % 4},
                }
            )
    finally:
        backend.close()


class Masked(Browser):
    """The browser with the database's path shown as SHOWN_DB, so screens do not depend on it."""

    def where(self) -> str:
        return super().where().replace(f"db {self.settings.db}", f"db {SHOWN_DB}")


async def settle(pilot: Pilot[int], app: Browser) -> None:
    """Wait (at most 10 s) until no tab is loading."""
    for _ in range(200):
        await pilot.pause(0.05)
        if not any(view.fetching for view in app.views.values()):
            return


def screenshot(shot: Shot, env: dict[str, str]) -> str:
    """The SVG of a screen: the app started with `env` at the shot's size, keys pressed."""
    run = AppContext(env)
    app = Masked(run)
    svg = ""

    async def go() -> None:
        nonlocal svg
        async with app.run_test(size=shot.size) as pilot:
            await settle(pilot, app)
            if shot.tab:
                app.tabs.active = shot.tab
                await settle(pilot, app)
            for key in shot.keys:
                await pilot.press(key)
                await settle(pilot, app)
            if shot.filter_text:
                app.view().query_one(Input).value = shot.filter_text
            for field in app.screen.query(Input):
                field.cursor_blink = False  # a blinking cursor would make two shots differ
            await pilot.pause(0.2)
            svg = app.export_screenshot()
            await pilot.press("escape", "q")
        run.close()

    asyncio.run(go())
    return svg


def screen_env(db: Path, home: Path) -> dict[str, str]:
    """The environment of a screenshot: the fixed database, no journal, no profile."""
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_DATA_HOME": str(home / "data"),
        "CONVRISK_DB": str(db),
        "CONVRISK_JOURNAL": "off",
    }


def main() -> None:
    DOCS.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "screens.db"
        fill_fixed(db)
        env = screen_env(db, Path(folder))
        for shot in DOC_SHOTS:
            (DOCS / f"{shot.name}.svg").write_text(screenshot(shot, env))
            print(DOCS / f"{shot.name}.svg")


if __name__ == "__main__":
    os.environ.pop("CONVRISK_BASE_URL", None)
    main()
