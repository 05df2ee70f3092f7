"""Every test runs in a HOME of its own, and a test that touches the real user's convrisk
files, or writes into the checkout, is failed by the guard (tests/isolation.py)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import CHECKOUT, REAL_USER_FOLDERS
from tests.isolation import Guard, guarding, real_user_folders


def test_each_test_has_its_own_empty_home_and_no_convrisk_variables(own_home: Path) -> None:
    assert os.environ["HOME"] == str(own_home)
    assert list(own_home.iterdir()) == []
    assert not [name for name in os.environ if name.startswith("CONVRISK_")]
    assert "XDG_CONFIG_HOME" not in os.environ and "XDG_DATA_HOME" not in os.environ
    assert not any(own_home.is_relative_to(folder.parent) for folder in REAL_USER_FOLDERS)


def test_the_real_users_folders_follow_xdg_and_convrisk_variables(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "d"), "CONVRISK_DB": "/x.db"}
    folders = real_user_folders(env)
    assert tmp_path / ".config" / "convrisk" in folders
    assert tmp_path / "d" / "convrisk" in folders
    assert tmp_path / ".local" / "state" / "convrisk" in folders
    assert Path("/x.db") in folders


def test_the_guard_sees_a_read_a_listing_and_a_database_opened_in_a_forbidden_folder(
    tmp_path: Path,
) -> None:
    real = tmp_path / "real-user" / "convrisk"
    real.mkdir(parents=True)
    (real / "config.toml").write_text("")
    with guarding(Guard((real,))) as guard:
        (real / "config.toml").read_text()
        os.listdir(real)
        sqlite3.connect(real / "convrisk.db").close()
        (tmp_path / "elsewhere.txt").write_text("fine")
    assert [line.split()[0] for line in guard.touched] == ["open", "os.listdir", "sqlite3.connect"]


def test_the_guard_sees_a_write_into_the_checkout_but_not_a_read(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    (checkout / ".pytest_cache").mkdir(parents=True)
    (checkout / "README.md").write_text("x")
    with guarding(Guard((), checkout)) as guard:
        (checkout / "README.md").read_text()
        (checkout / ".pytest_cache" / "v").write_text("cache")
        (checkout / "left-behind.db").write_text("x")
    assert guard.touched == [f"open {checkout / 'left-behind.db'} (inside the checkout)"]


def test_this_suite_guards_the_checkout_it_runs_from() -> None:
    assert (CHECKOUT / "pyproject.toml").is_file()


@pytest.mark.e2e  # slow: about a second, or more (the quick loop leaves it out)
def test_a_test_that_touches_the_real_users_files_fails(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A pytest of its own, whose "real user" lives in a folder of this test's.
    real_home = pytester.mkdir("real-home")
    (real_home / ".config" / "convrisk").mkdir(parents=True)
    (real_home / ".config" / "convrisk" / "config.toml").write_text("[default]\n")
    monkeypatch.setenv("HOME", str(real_home))
    monkeypatch.setenv("PYTHONPATH", str(CHECKOUT))
    pytester.makeconftest("from tests.conftest import homes, own_home  # noqa: F401\n")
    pytester.makepyfile(
        test_touch="""
        from tests.conftest import REAL_USER_FOLDERS

        def test_reads_the_real_config():
            assert (REAL_USER_FOLDERS[0] / "config.toml").read_text() == "[default]\\n"

        def test_keeps_to_its_own_home(own_home):
            (own_home / "config.toml").write_text("mine")
        """
    )
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "-p", "no:xdist", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_reads_the_real_config*",
            "*touched the real user's files*",
            "  open */real-home/.config/convrisk/config.toml",
        ]
    )


def test_a_folder_written_on_purpose_is_not_a_touch(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    (checkout / "tests" / "snapshots").mkdir(parents=True)
    with guarding(Guard((), checkout, (checkout / "tests" / "snapshots",))) as guard:
        (checkout / "tests" / "snapshots" / "screen.svg").write_text("<svg/>")
        (checkout / "tests" / "stray.txt").write_text("x")
    assert guard.touched == [f"open {checkout / 'tests' / 'stray.txt'} (inside the checkout)"]
