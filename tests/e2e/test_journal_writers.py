"""Eight processes writing the journal at once lose no line and interleave none."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from .console import CONVRISK, SAFETY_TIMEOUT, db_of

WRITERS = 8
WRITES = 200

_APPENDER = """
import sys
from pathlib import Path
from convrisk.cli.journal import entries as journal

path, writer = Path(sys.argv[1]), int(sys.argv[2])
for n in range(int(sys.argv[3])):
    entry = {
        "entry": journal.new_id("j_"), "run": f"r_{writer}", "time": journal.utc_now(),
        "operation": "create", "id": f"{writer}-{n}", "outcome": {"status": "ok"},
        # Lines of different lengths, some over the 4 KiB a pipe writes atomically.
        "after": {"padding": "x" * (n % 7) * 1500},
    }
    journal.append(path, [entry])
"""


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().decode("utf-8").splitlines()]


def _wait_all(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        _, err = proc.communicate(timeout=SAFETY_TIMEOUT)
        assert proc.returncode == 0, err.decode()


def test_eight_appenders_of_two_hundred_entries_lose_and_mix_nothing(tmp_path: Path) -> None:
    path = tmp_path / "state" / "journal.jsonl"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _APPENDER, str(path), str(writer), str(WRITES)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for writer in range(WRITERS)
    ]
    _wait_all(procs)
    lines = _lines(path)  # every line parses: none was written into another
    assert Counter(line["id"] for line in lines) == Counter(
        f"{w}-{n}" for w in range(WRITERS) for n in range(WRITES)
    )
    for writer in range(WRITERS):  # each writer's lines in its own order
        mine = [line["id"] for line in lines if line["run"] == f"r_{writer}"]
        assert mine == [f"{writer}-{n}" for n in range(WRITES)]


def test_eight_convrisk_commands_writing_at_once_journal_every_write(
    env: dict[str, str], store: Any
) -> None:
    """Eight `conv update -` of 200 ids each, at once, on one database: 1,600 entries."""
    made = store.conversations.create_many(
        [({"contact_id": f"c_{n}"}, None) for n in range(WRITERS * WRITES)]
    )
    ids = [result.record["id"] for result in made]
    path = Path(env["HOME"]) / ".local" / "state" / "convrisk" / "journal.jsonl"
    procs = []
    for writer in range(WRITERS):
        proc = subprocess.Popen(
            [str(CONVRISK), "conv", "update", "-", "--mute", "-o", "id"],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdin is not None
        proc.stdin.write("".join(i + "\n" for i in ids[writer::WRITERS]).encode())
        proc.stdin.close()
        proc.stdin = None  # communicate() must not flush the closed pipe
        procs.append(proc)
    _wait_all(procs)
    lines = _lines(path)
    assert sorted(line["id"] for line in lines) == sorted(ids)
    assert all(line["outcome"] == {"status": "ok"} for line in lines)
    assert all(line["after"]["is_muted"] and not line["before"]["is_muted"] for line in lines)
    assert len({line["run"] for line in lines}) == WRITERS
    assert db_of(env).exists()
