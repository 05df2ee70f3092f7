"""The variants of tests/e2e/test_output_failures.py in-process: each command whose output goes
to a full disk (stdout on /dev/full), and each JSON argument read from a file without end."""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

import pytest

from convrisk.cli.app import main
from convrisk.local_backend.backend import LocalBackend
from tests.cli.conftest import Invoke


def count(db_path: Path, resource: str) -> int:
    """How many objects of a resource the database holds (one page of 100 is plenty here)."""
    with LocalBackend(db_path) as store:
        return len(getattr(store, resource).list(limit=100)["data"])


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["conv", "list", "-o", "json"], ["api", "/v1/conversations"]])
def test_output_to_a_full_disk_is_one_clear_error_with_exit_1(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    invoke("conv", "create", "--contact-id", "c_1").ok()
    err = io.StringIO()
    with open("/dev/full", "w", encoding="utf-8") as full, monkeypatch.context() as patch:
        patch.setattr(sys, "stdout", full)
        patch.setattr(sys, "stderr", err)
        code = main(args)
    assert code == 1
    message = "Cannot write the output to stdout: No space left on device."
    if "-o" in args:  # -o json: the error is a JSON line
        assert json.loads(err.getvalue()) == {"error": {"type": "output_error", "message": message}}
    else:
        assert err.getvalue() == f"Error: {message}\n"


@pytest.mark.parametrize(
    ("args", "source"),
    [
        (["api", "/v1/conversations", "-d", "@/dev/zero"], "-d: /dev/zero"),
        (
            [
                "risk",
                "create",
                "--customer-id",
                "c",
                "--profile-type",
                "t",
                "--score",
                "1",
                "--details",
                "@/dev/zero",
            ],
            "--details: /dev/zero",
        ),
    ],
)
def test_a_json_argument_without_end_is_refused_not_read_whole(
    invoke: Invoke, db_path: Path, args: list[str], source: str
) -> None:
    result = invoke(*args)
    assert result.code == 2
    assert result.stderr == f"Error: {source} is over 64 MiB.\n"
    assert count(db_path, "risk_profiles") == 0 and count(db_path, "conversations") == 0
