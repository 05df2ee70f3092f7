"""What every test shares: a HOME and XDG folders of its own, a guard that fails a test touching
the real user's convrisk files or writing into the checkout, and children started with SIGINT's
default action, whatever pytest got."""

from __future__ import annotations

import itertools
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest

from tests.isolation import ISOLATED_VARIABLES, Guard, guarding, real_user_folders

pytest_plugins = ["pytester"]
# The demo team's suite is another team's: tests/test_demo_team.py runs it as they would, in a
# pytest of its own (its own pytest.ini), never collected into this one.
collect_ignore = ["demo_team"]

CHECKOUT = Path(__file__).resolve().parent.parent
# Read once, before any test has changed the environment: the folders of whoever runs pytest.
REAL_USER_FOLDERS = real_user_folders(dict(os.environ))


def _ignore(signum: int, frame: FrameType | None) -> None:
    """Do nothing: pytest still ignores Ctrl-C, as it was started to."""


def pytest_configure(config: pytest.Config) -> None:
    """Started with SIGINT ignored (nohup, some CI runners), pytest would pass that on to every
    child it starts, and the Ctrl-C tests would see a convrisk that cannot be interrupted. A
    handler instead of SIG_IGN is not passed on: exec resets a handled signal to its default."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, _ignore)


def _quick_loop(config: pytest.Config) -> bool:
    """Whether this run is the quick loop: every e2e test left out (`-m "not e2e"`)."""
    return str(config.getoption("markexpr", "")).strip() == "not e2e"


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: unknown under -p no:xdist
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: a worker a core for the quick loop, two a core (at most 16) for a run with
    the e2e tests, which spend much of their time waiting for a child process or a socket: one
    worker a core left the cores idle a third of the time (docs/design/testing.md)."""
    cores = len(os.sched_getaffinity(0))
    return cores if _quick_loop(config) else min(16, 2 * cores)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """With -n and no --dist, a worker that runs out of tests takes some from another
    (worksteal): a few e2e tests take 10-15 s, and `load` left workers idle behind them at the
    end (336 s against 278 s for the suite, docs/design/testing.md)."""
    if config.getoption("numprocesses", None) and config.getoption("dist", "no") == "no":
        config.option.dist = "worksteal"


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """The quick loop does not even import tests/e2e, whose every test is e2e."""
    if _quick_loop(config) and collection_path == CHECKOUT / "tests" / "e2e":
        return True
    return None


@pytest.fixture(scope="session")
def homes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """HOMEs, a new one for each test: `next(homes)` (one folder listing per session, where
    mktemp per test would list every HOME made before it)."""
    folder = tmp_path_factory.mktemp("homes")
    return (folder / str(n) for n in itertools.count())


@pytest.fixture(autouse=True)
def own_home(
    request: pytest.FixtureRequest, homes: Iterator[Path], monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """Every test: its own empty HOME and XDG folders, no CONVRISK_* or NO_COLOR variable, and
    an error if it touched the real user's convrisk files or wrote into the checkout (but for
    the folders a `writes_into("tests/...")` mark names)."""
    home = next(homes)
    home.mkdir()
    for name in list(os.environ):
        if name.startswith("CONVRISK_") or name == "NO_COLOR":
            monkeypatch.delenv(name)
    for name in ISOLATED_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    writable = tuple(
        CHECKOUT / folder
        for mark in request.node.iter_markers("writes_into")
        for folder in mark.args
    )
    with guarding(Guard(REAL_USER_FOLDERS, CHECKOUT, writable)) as guard:
        yield home
    if guard.touched:
        pytest.fail(
            "the test touched the real user's files or the checkout:\n  "
            + "\n  ".join(dict.fromkeys(guard.touched)),
            pytrace=False,
        )
