"""Output that cannot be written, and input that never ends: one clear line, never a traceback.
Each behaviour once; every command of it in-process, in tests/cli/test_output_failures.py."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from .both_backends import local_cli
from .console import CONVRISK, SAFETY_TIMEOUT


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_output_to_a_full_disk_is_one_clear_error_with_exit_1(tmp_path: Path) -> None:
    args = ["conv", "list", "-o", "json"]  # and `api`, in-process
    local = local_cli(tmp_path)
    assert local.run("conv", "create", "--contact-id", "c_1").returncode == 0
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            [CONVRISK, *args],
            env=local.env,
            stdin=subprocess.DEVNULL,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=SAFETY_TIMEOUT,
        )
    assert result.returncode == 1
    message = "Cannot write the output to stdout: No space left on device."
    if "-o" in args:  # -o json: the error is a JSON line
        assert json.loads(result.stderr) == {"error": {"type": "output_error", "message": message}}
    else:
        assert result.stderr == f"Error: {message}\n"
    local.close()


def test_output_to_a_closed_stdout_is_one_clear_error_with_exit_1(tmp_path: Path) -> None:
    local = local_cli(tmp_path)
    result = subprocess.run(
        ["sh", "-c", '"$0" conv list >&-', str(CONVRISK)],
        env=local.env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=SAFETY_TIMEOUT,
    )
    assert result.returncode == 1
    assert result.stderr == "Error: stdout is closed: there is nowhere to print the output.\n"
    local.close()


def test_a_json_argument_without_end_is_refused_not_read_whole(tmp_path: Path) -> None:
    # `api -d` here; `risk create --details` too, in-process.
    args, source = ["api", "/v1/conversations", "-d", "@/dev/zero"], "-d: /dev/zero"
    local = local_cli(tmp_path)
    result = local.run(*args)
    assert result.returncode == 2
    assert result.stderr == f"Error: {source} is over 64 MiB.\n"
    assert local.count("risk_profiles") == 0 and local.count("conversations") == 0
    local.close()
