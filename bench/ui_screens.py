"""Screenshots (SVG, Textual's own) of each screen of `convrisk ui`, written to docs/ui/.

.venv/bin/python bench/ui_screens.py
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from textual.pilot import Pilot
from textual.widgets import Input

from bench.fill import fill
from convrisk.cli.context import AppContext
from convrisk.cli.ui_app import Browser
from convrisk.local_backend.store import LocalBackend

DOCS = Path(__file__).resolve().parents[1] / "docs" / "ui"
START, END = 1_714_000_000, 1_716_000_000  # May 2024: dates that do not move


async def settle(pilot: Pilot[int], app: Browser) -> None:
    """Wait (at most 10 s) until no tab is loading."""
    for _ in range(200):
        await pilot.pause(0.05)
        if not any(view.fetching for view in app.views.values()):
            return


def shoot(
    size: tuple[int, int], name: str, keys: list[str], filter_text: str = "", tab: str = ""
) -> None:
    """Start the app at `size` (on `tab`), press `keys`, and save docs/ui/<name>.svg."""
    app = Browser(AppContext())

    async def go() -> None:
        async with app.run_test(size=size) as pilot:
            await settle(pilot, app)
            if tab:
                app.tabs.active = tab
                await settle(pilot, app)
            for key in keys:
                await pilot.press(key)
                await settle(pilot, app)
            if filter_text:
                app.view().query_one(Input).value = filter_text
            await pilot.pause(0.2)
            app.save_screenshot(f"{name}.svg", str(DOCS))
            await pilot.press("escape", "q")

    asyncio.run(go())
    print(DOCS / f"{name}.svg")


def main() -> None:
    DOCS.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "screens.db"
        backend = LocalBackend(db)
        fill(backend, "conversations", 200, start=START, end=END)
        fill(backend, "risk_profiles", 200, start=START, end=END)
        backend.close()
        os.environ.update(CONVRISK_DB=str(db), CONVRISK_JOURNAL="off", NO_COLOR="")
        os.environ.pop("CONVRISK_BASE_URL", None)
        os.environ.pop("CONVRISK_PROFILE", None)
        shoot((120, 40), "conversations-120x40", ["down", "space", "down", "space"])
        shoot((80, 24), "conversations-80x24", [])
        shoot((40, 12), "conversations-40x12", [])
        shoot((120, 40), "filter-120x40", ["slash"], "--not-archived --contact-id ct_00000007")
        shoot((120, 40), "risk-profiles-120x40", ["down"], tab="risk_profiles")
        shoot((120, 40), "keys-120x40", ["question_mark"])
        shoot((120, 40), "delete-question-120x40", ["d"])
        shoot((120, 40), "edit-risk-profile-120x40", ["e"], tab="risk_profiles")


if __name__ == "__main__":
    main()
