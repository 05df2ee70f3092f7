"""A demo test whose verify is wrong on purpose (a path without its `s`): not collected by
default (not test_*.py); tests/test_demo_team.py runs it to show the near misses it lists."""

from __future__ import annotations

from convrisk.testing import Sandbox

from .app import open_conversation


def test_a_verify_of_the_wrong_path_lists_the_near_misses(convrisk_sandbox: Sandbox) -> None:
    open_conversation(convrisk_sandbox.base_url, convrisk_sandbox.token, "c_1")
    convrisk_sandbox.verify("POST", "/v1/conversation", count=1)
