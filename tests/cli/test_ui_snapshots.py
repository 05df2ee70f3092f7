"""Snapshots of every screen of `convrisk ui` at 80x24 and 120x40, on fixed data.

After a change that alters a screen on purpose, look at the new SVG and keep it with
`CONVRISK_UPDATE_SNAPSHOTS=1 .venv/bin/pytest tests/cli/test_ui_snapshots.py`.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
from pathlib import Path

import pytest

from bench.ui_screens import DOC_SHOTS, DOCS, Shot, fill_fixed, screen_env, screenshot, shots

# Slow (most of a second each: a whole Textual screen drawn to SVG): out of the quick loop.
pytestmark = pytest.mark.e2e

SNAPSHOTS = Path(__file__).resolve().parent / "snapshots" / "ui"
SHOTS = [*shots((80, 24)), *shots((120, 40))]
# The Textual the snapshots were drawn with: another release draws the same screen with other
# bytes (its own widgets' spacing and colours), so they are compared on that release only (the
# README's install, which CI runs first); .ci/lowest's older Textual is held to the pilot tests.
MADE_WITH = SNAPSHOTS / "TEXTUAL_VERSION"
INSTALLED = importlib.metadata.version("textual")


@pytest.fixture(scope="module")
def fixed_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of a database with the fixed data (made once for these tests)."""
    home = tmp_path_factory.mktemp("ui-snapshots")
    fill_fixed(home / "screens.db")
    return screen_env(home / "screens.db", home)


def screen_text(svg: str) -> str:
    """The characters of a screenshot, line by line: what a failure shows."""
    lines = re.findall(r"<text [^>]*>(.*?)</text>", svg)
    return "\n".join(line.replace("&#160;", " ") for line in lines)


# Read as the module loads: the isolation fixture takes every CONVRISK_ variable away from a test.
UPDATING = os.environ.get("CONVRISK_UPDATE_SNAPSHOTS") == "1"


@pytest.mark.writes_into("tests/cli/snapshots/ui")  # with CONVRISK_UPDATE_SNAPSHOTS=1 only
@pytest.mark.parametrize("shot", SHOTS, ids=[shot.name for shot in SHOTS])
def test_each_screen_looks_as_its_snapshot(
    shot: Shot, fixed_env: dict[str, str], tmp_path: Path
) -> None:
    kept = SNAPSHOTS / f"{shot.name}.svg"
    updating = UPDATING
    if not updating and MADE_WITH.read_text().strip() != INSTALLED:
        pytest.skip(
            f"snapshots drawn with Textual {MADE_WITH.read_text().strip()}, not {INSTALLED}"
        )
    svg = screenshot(shot, fixed_env)
    if updating:
        kept.write_text(svg)
        MADE_WITH.write_text(INSTALLED + "\n")
    assert kept.exists(), f"no snapshot {kept.name}: CONVRISK_UPDATE_SNAPSHOTS=1 makes it"
    if svg != kept.read_text():
        new = tmp_path / kept.name
        new.write_text(svg)
        assert screen_text(svg) == screen_text(kept.read_text()), (
            f"{shot.name} differs from {kept} (new: {new}); if on purpose: "
            "CONVRISK_UPDATE_SNAPSHOTS=1 .venv/bin/pytest tests/cli/test_ui_snapshots.py"
        )
        raise AssertionError(f"{shot.name}: the same text as {kept}, other colours (new: {new})")


def comparable() -> None:
    """Skip unless the kept snapshots were drawn with the Textual installed."""
    if MADE_WITH.read_text().strip() != INSTALLED:
        pytest.skip(
            f"snapshots drawn with Textual {MADE_WITH.read_text().strip()}, not {INSTALLED}"
        )


DOCS_KEPT = sorted(path.name for path in DOCS.glob("*.svg") if (SNAPSHOTS / path.name).exists())
DOCS_ONLY = [shot for shot in DOC_SHOTS if not (SNAPSHOTS / f"{shot.name}.svg").exists()]


def test_every_docs_screenshot_is_a_screen_the_tests_draw() -> None:
    assert DOCS_KEPT and DOCS_ONLY  # the lists below are not empty by mistake
    assert {path.name for path in DOCS.glob("*.svg")} == {f"{s.name}.svg" for s in DOC_SHOTS}


@pytest.mark.parametrize("name", DOCS_KEPT)
def test_each_docs_screenshot_shows_the_text_of_its_snapshot(name: str) -> None:
    comparable()
    docs, kept = (DOCS / name).read_text(), (SNAPSHOTS / name).read_text()
    assert screen_text(docs) == screen_text(kept), (
        f"docs/ui/{name} is out of date: .venv/bin/python bench/ui_screens.py draws it again"
    )


@pytest.mark.parametrize("shot", DOCS_ONLY, ids=[shot.name for shot in DOCS_ONLY])
def test_each_docs_screenshot_without_a_snapshot_shows_the_screen_as_drawn_now(
    shot: Shot, fixed_env: dict[str, str]
) -> None:
    comparable()
    docs = (DOCS / f"{shot.name}.svg").read_text()
    assert screen_text(docs) == screen_text(screenshot(shot, fixed_env)), (
        f"docs/ui/{shot.name}.svg is out of date: .venv/bin/python bench/ui_screens.py draws it "
        "again"
    )
