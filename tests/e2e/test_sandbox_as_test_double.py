"""The sandbox as another team's test double: a pretend client application (a few lines of
httpx) whose own pytest suite resets a real `convrisk serve` between tests with `convrisk
sandbox reset` and asserts the calls it made with `convrisk sandbox verify`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from .both_backends import Serve, isolated_env, serving
from .console import CONVRISK, SAFETY_TIMEOUT, run

APP = '''
"""The pretend application: it opens conversations and mutes them, over HTTP."""
import os

import httpx


def _client() -> httpx.Client:
    token = os.environ["CONVRISK_TOKEN"]
    return httpx.Client(
        base_url=os.environ["CONVRISK_BASE_URL"],
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )


def open_conversation(contact_id: str) -> dict:
    with _client() as client:
        answer = client.post("/v1/conversations", json={"contact_id": contact_id})
        answer.raise_for_status()
        return answer.json()


def mute(conversation_id: str) -> None:
    muted = os.environ.get("PRETEND_BUG") != "1"  # the bug a test must catch
    with _client() as client:
        client.put(f"/v1/conversations/{conversation_id}", json={"is_muted": muted})
'''

APP_TESTS = f'''
"""The application's own tests, with the sandbox as their test double."""
import subprocess

import pytest

import app

CONVRISK = {str(CONVRISK)!r}


def sandbox(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [CONVRISK, "sandbox", *args], capture_output=True, text=True, timeout=60
    )


@pytest.fixture(autouse=True)
def clean_sandbox():
    reset = sandbox("reset")
    assert reset.returncode == 0, reset.stderr


def verify(*args: str) -> None:
    result = sandbox("verify", *args)
    assert result.returncode == 0, result.stderr


def test_opening_posts_the_contact_once():
    app.open_conversation("c_1")
    verify("--method", "POST", "--path", "/v1/conversations", "--count", "1",
           "--body-jq", '.contact_id == "c_1"')


def test_muting_puts_the_flag():
    conversation = app.open_conversation("c_2")
    app.mute(conversation["id"])
    verify("--method", "PUT", "--path", "/v1/conversations/conv_*", "--count", "1",
           "--body-jq", ".is_muted == true")
    # Reset between tests: the first test's POST is gone.
    verify("--method", "POST", "--path", "/v1/conversations", "--count", "1")
'''


def _app_suite(folder: Path) -> Path:
    """The pretend application and its tests, in a folder of their own."""
    folder.mkdir()
    (folder / "app.py").write_text(APP)
    (folder / "test_app.py").write_text(APP_TESTS)
    return folder


def _run_suite(
    folder: Path, served: Serve, home: Path, **extra: str
) -> subprocess.CompletedProcess[str]:
    """The application's pytest suite, run as its CI would, against the sandbox."""
    env = isolated_env(home, CONVRISK_BASE_URL=served.url, CONVRISK_TOKEN=served.token, **extra)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            str(folder),
        ],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=SAFETY_TIMEOUT,
        stdin=subprocess.DEVNULL,
    )


def test_a_client_applications_suite_resets_and_verifies_against_serve(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    suite = _app_suite(tmp_path / "pretend_app")
    (home / "served").mkdir()
    with serving(home / "served") as served:
        passed = _run_suite(suite, served, home)
        assert passed.returncode == 0, passed.stdout + passed.stderr
        assert "2 passed" in passed.stdout
        # The last test left its own two requests, and only those.
        env = {
            **isolated_env(home),
            "CONVRISK_BASE_URL": served.url,
            "CONVRISK_TOKEN": served.token,
        }
        listed = run(env, "sandbox", "requests", "-o", "json")
        assert listed.returncode == 0, listed.stderr
        assert [(r["method"], r["status"]) for r in json.loads(listed.stdout)] == [
            ("POST", 200),
            ("PUT", 200),
        ]
        caught = _run_suite(suite, served, home, PRETEND_BUG="1")
    assert caught.returncode == 1, caught.stdout + caught.stderr
    assert "1 failed, 1 passed" in caught.stdout
    assert ": --body-jq is false on its body" in caught.stdout
    assert "Expected exactly 1 PUT /v1/conversations/conv_* with a body where" in caught.stdout
