"""The demo team's suite (tests/demo_team/) run as another team runs theirs: `python -m pytest
-p convrisk.testing tests/demo_team` in a pytest of its own, with and without xdist, and with
a verify that is wrong, and a serve that cannot start."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from .both_backends import isolated_env

ROOT = Path(__file__).resolve().parent.parent.parent
DEMO = "tests/demo_team"
SAFETY_TIMEOUT = 180  # seconds; only so that a hung run cannot hang the suite
# The demo suite's tests, all of which pass.
DEMO_TESTS = 4


def demo(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The demo suite's pytest run to its end from the checkout, with `args`: as the brief's
    command line, no byte code or cache written into the checkout, nothing of this pytest's."""
    env = {
        name: value
        for name, value in isolated_env(home).items()
        if not name.startswith(("PYTEST_", "COV_", "PYTHONDONTWRITEBYTECODE"))
    }
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    command = [sys.executable, "-m", "pytest", "-p", "convrisk.testing", *args]
    return subprocess.run(
        [*command, "-q", "-p", "no:cacheprovider"],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=SAFETY_TIMEOUT,
    )


def test_the_demo_team_suite_passes_against_the_fixture(tmp_path: Path) -> None:
    result = demo(tmp_path, DEMO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{DEMO_TESTS} passed" in result.stdout


def test_the_demo_team_suite_passes_under_xdist_a_sandbox_per_worker(tmp_path: Path) -> None:
    result = demo(tmp_path, DEMO, "-n", "2")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{DEMO_TESTS} passed" in result.stdout


def test_a_wrong_verify_fails_the_test_listing_the_near_misses(tmp_path: Path) -> None:
    result = demo(tmp_path, f"{DEMO}/failing_verify.py")
    assert result.returncode == 1, result.stdout + result.stderr
    lines = [line.removeprefix("E ").strip() for line in result.stdout.splitlines()]
    assert "AssertionError: Expected exactly 1 POST /v1/conversation; the sandbox received 0." in (
        lines
    )
    assert "Near misses, the closest first:" in lines
    assert "#1 POST /v1/conversations -> 200: another path" in lines
    assert "1 failed" in result.stdout


def test_a_serve_that_cannot_start_errors_every_test_at_once_with_its_reason(
    tmp_path: Path,
) -> None:
    started = time.monotonic()
    result = demo(tmp_path, DEMO, "-o", "convrisk_clock=yesterday")
    took = time.monotonic() - started
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"{DEMO_TESTS} errors" in result.stdout
    assert (
        "convrisk.testing.SandboxError: convrisk serve did not start (exit 2): Error: --clock "
        "must be an ISO 8601 time with a zone"
    ) in result.stdout
    assert took < 30, f"{took:.1f} s"


def test_the_demo_suite_writes_nothing_into_the_checkout(tmp_path: Path) -> None:
    before = sorted(os.listdir(ROOT / DEMO))
    assert demo(tmp_path, DEMO).returncode == 0
    assert sorted(os.listdir(ROOT / DEMO)) == before


def test_pytest_plugins_in_a_conftest_loads_it_too_and_twice_is_once(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "pytest.ini").write_text("[pytest]\nconvrisk_seed = 3\n", encoding="utf-8")
    (suite / "conftest.py").write_text('pytest_plugins = ["convrisk.testing"]\n', encoding="utf-8")
    (suite / "test_one.py").write_text(
        "def test_the_fixture_is_there(convrisk_sandbox):\n"
        "    assert convrisk_sandbox.seed == 3 and convrisk_sandbox.requests() == []\n",
        encoding="utf-8",
    )
    env = {k: v for k, v in isolated_env(tmp_path).items() if not k.startswith("PYTEST_")}
    for loaded_twice in ([], ["-p", "convrisk.testing"]):
        result = subprocess.run(
            [sys.executable, "-m", "pytest", *loaded_twice, "-q", "-p", "no:cacheprovider"],
            cwd=suite,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=SAFETY_TIMEOUT,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        assert "1 passed" in result.stdout
