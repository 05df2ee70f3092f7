"""Ids that cannot be ids, and `conv list --contact-id` (issue 18, items 8 and 6): the installed
convrisk against a `convrisk serve` on loopback (and the local database where only it checks);
the two-backend variants run in-process in tests/cli/test_ids_and_contacts.py."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from .both_backends import Cli, remote_cli
from .both_backends import over_serve as over_serve  # a fixture: convrisk against its own serve
from .console import CONVRISK, SAFETY_TIMEOUT, run
from .screen import Terminal

WELL_FORMED_MISSING = "conv_01ARZ3NDEKTSV4RRFFQ69G5FAV"


def _one_short_line(stderr: str, limit: int = 300) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr[:2000]
    assert len(lines[0]) <= limit, lines[0][:2000]
    return lines[0]


def _seed(cli: Cli, contacts: list[str]) -> list[str]:
    """One conversation per contact, in order; their ids."""
    return [cli.store.conversations.create({"contact_id": c})["id"] for c in contacts]


# -- item 8: ids that cannot be ids ---------------------------------------------------------------


def test_a_short_cursor_is_refused_not_an_empty_list(over_serve: Cli) -> None:
    _seed(over_serve, ["c_1", "c_2"])
    result = over_serve.run("conv", "list", "--starting-after", "conv_01M8")
    line = _one_short_line(result.stderr)
    assert "conv_01M8" in line and "not a conversation id" in line
    assert result.stdout == ""
    # Locally the shape is ours to check (exit 2); a remote service judges ids of its own form
    # itself (serve refuses it with a 400: exit 1).
    assert result.returncode == (1 if over_serve.remote else 2)


def test_the_help_placeholder_as_a_cursor_is_refused(over_serve: Cli) -> None:
    _seed(over_serve, [f"c_{i}" for i in range(25)])
    result = over_serve.run("conv", "list", "--ending-before", "conv_01HV...", "--limit", "20")
    assert result.returncode == (1 if over_serve.remote else 2), result.stderr
    assert result.stdout == ""
    assert "not a conversation id" in _one_short_line(result.stderr)


def test_an_id_of_64_kib_is_a_usage_error_of_one_short_line(over_serve: Cli) -> None:
    huge = "conv_" + "A" * (64 * 1024)
    for args in (["conv", "get", huge], ["conv", "list", "--starting-after", huge]):
        result = over_serve.run(*args)
        assert result.returncode == 2, result.stderr[:500]
        line = _one_short_line(result.stderr)
        assert "65541 characters" in line or "longer than" in line, line


def test_an_id_of_another_resource_or_alphabet_is_a_usage_error(over_serve: Cli) -> None:
    result = over_serve.run("conv", "get", "rp_01ARZ3NDEKTSV4RRFFQ69G5FAV")
    assert result.returncode == 2
    assert "not a conversation id" in _one_short_line(result.stderr)
    result = over_serve.run("conv", "get", "conv_01ARZ3\x1b[2J")
    assert result.returncode == 2
    line = _one_short_line(result.stderr)
    assert "\x1b" not in line and "\\x1b" in line


def test_a_well_formed_id_that_does_not_exist_is_still_not_found(over_serve: Cli) -> None:
    result = over_serve.run("conv", "get", WELL_FORMED_MISSING)
    assert result.returncode == 3
    assert "No such conversation" in result.stderr


def test_a_local_id_with_a_bad_body_is_refused_before_the_database(tmp_path: Path) -> None:
    from .both_backends import local_cli

    local = local_cli(tmp_path)
    for bad in ("conv_01ARZ3NDEKTSV4RRFFQ69G5FAU", "conv_01arz3ndektsv4rrffq69g5fav", "conv_1"):
        result = local.run("conv", "get", bad)
        assert result.returncode == 2, (bad, result.stderr)
        assert "26 characters" in _one_short_line(result.stderr)


# Runs a command and writes its peak RSS (KiB) to a file. Linux carries ru_maxrss across exec, so
# a child started straight from this (large) test process would report the test's own peak; a
# grandchild forked from this small interpreter reports its own.
_PEAK_PROBE = """
import os, subprocess, sys
proc = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(proc.pid, 0)
with open(sys.argv[1], "w") as out:
    out.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def test_a_giant_id_on_stdin_is_refused_in_bounded_memory_and_the_others_go_on(
    over_serve: Cli,
    tmp_path: Path,
) -> None:
    first, second = _seed(over_serve, ["c_1", "c_2"])
    # 64 MiB on one line, between two real ids.
    data = first.encode() + b"\nconv_" + b"A" * (64 * 1024 * 1024) + b"\n" + second.encode() + b"\n"
    peak_file = tmp_path / "peak"
    command = [str(CONVRISK), "conv", "get", "-", "-o", "id"]
    result = subprocess.run(
        [sys.executable, "-c", _PEAK_PROBE, str(peak_file), *command],
        env=over_serve.env,
        input=data,
        capture_output=True,
        timeout=SAFETY_TIMEOUT,
        start_new_session=True,
    )
    assert result.returncode == 2, result.stderr[:500]
    assert result.stdout.decode().split() == [first, second]
    line = _one_short_line(result.stderr.decode())
    assert "longer than 255 characters" in line
    # The line is never held whole: a 64 MiB line read at once would take several times that.
    peak_kib = int(peak_file.read_text())
    assert peak_kib < 110 * 1024, f"peak RSS {peak_kib} KiB"


# -- item 6: conv list --contact-id ----------------------------------------------------------------


def test_contact_id_lists_that_contacts_conversations_newest_first(over_serve: Cli) -> None:
    made = _seed(over_serve, ["c_1", "c_2", "c_1", "c_3", "c_1", "c_2"])
    ones = [made[4], made[2], made[0]]
    result = over_serve.run("conv", "list", "--contact-id", "c_1", "-o", "id")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ones
    # --limit stops after that many matches, and the hint's cursor goes on from there.
    first = over_serve.run("conv", "list", "--contact-id", "c_1", "--limit", "2", "-o", "id")
    assert first.stdout.split() == ones[:2]
    assert f"--starting-after {ones[1]}" in first.stderr
    rest = over_serve.run(
        "conv", "list", "--contact-id", "c_1", "--starting-after", ones[1], "--all", "-o", "jsonl"
    )
    assert [json.loads(line)["id"] for line in rest.stdout.splitlines()] == ones[2:]
    back = over_serve.run(
        "conv", "list", "--contact-id", "c_1", "--ending-before", made[0], "-o", "id"
    )
    assert back.stdout.split() == [made[2], made[4]]
    both = over_serve.run("conv", "list", "--contact-id", "c_2", "--not-muted", "-o", "json")
    assert [r["id"] for r in json.loads(both.stdout)] == [made[5], made[1]]
    none = over_serve.run("conv", "list", "--contact-id", "c_404", "--all", "-o", "json")
    assert none.returncode == 0 and json.loads(none.stdout) == []
    scanning = [line for line in result.stderr.splitlines() if "scan" in line]
    if over_serve.remote:
        # The service has no such filter: one line says the client scans every conversation.
        assert len(scanning) == 1, result.stderr
    else:
        assert scanning == [] and result.stderr == ""


def test_an_empty_contact_id_is_a_usage_error(over_serve: Cli) -> None:
    result = over_serve.run("conv", "list", "--contact-id", " ")
    assert result.returncode == 2
    assert "--contact-id" in _one_short_line(result.stderr)


@pytest.fixture
def remote(tmp_path: Path) -> Iterator[Cli]:
    """convrisk against its own `convrisk serve` only (what a remote scan needs)."""
    made = remote_cli(tmp_path)
    assert made.serve is not None
    try:
        yield made
    finally:
        made.close()
        code, log = made.serve.stop()
        assert code == 0, log[-2000:]


def test_serve_does_not_take_contact_id_as_a_query_parameter(remote: Cli) -> None:
    result = remote.run("api", "/v1/conversations?contact_id=c_1")
    assert result.returncode == 1
    assert "contact_id" in result.stderr
    assert remote.serve is not None
    with urllib.request.urlopen(f"{remote.serve.url}/openapi.json", timeout=30) as answer:
        document = json.loads(answer.read())
    names = [p["name"] for p in document["paths"]["/v1/conversations"]["get"]["parameters"]]
    assert "contact_id" not in names


def test_a_remote_scan_shows_its_progress_on_a_terminal(remote: Cli) -> None:
    _seed(remote, ["c_1"] + ["c_2"] * 250)
    term = Terminal(remote.env, ["conv", "list", "--contact-id", "c_1"], columns=100)
    assert term.finish() == 0
    assert b"scanned" in term.output
    shown = "\n".join(term.text())
    assert "c_1" in shown and "scanned" not in shown  # the progress line was wiped


def test_the_contact_option_is_described_in_help(env: dict[str, str]) -> None:
    result = run(env, "conv", "list", "--help")
    assert result.returncode == 0
    assert "--contact-id C" in result.stdout and "A contact's conversations" in result.stdout
