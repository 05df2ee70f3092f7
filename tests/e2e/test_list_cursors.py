"""`--ending-before` on both lists, and a listing that fails part way naming the cursor that
goes on: the installed convrisk, on the local database and against a `convrisk serve`. Each
behaviour once (every bad cursor: in-process, tests/cli/test_list_cursors.py)."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

from bench.fill import fill
from convrisk.api_client.resources import RISK_PROFILES
from convrisk.local_backend.backend import LocalBackend

from .both_backends import TOKEN, Remote, isolated_env, serving
from .console import CONVRISK, SAFETY_TIMEOUT, db_of, run


def test_ending_before_walks_towards_the_newest_oldest_first(
    env: dict[str, str],
    store: Any,
) -> None:
    made = [store.conversations.create({"contact_id": f"c_{i}"})["id"] for i in range(7)]
    result = run(env, "conv", "list", "--ending-before", made[1], "--limit", "3", "-o", "id")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == made[2:5]
    # The hint goes on in the same direction, from the last id printed.
    assert f"--ending-before {made[4]}" in result.stderr
    rest = run(env, "conv", "list", "--ending-before", made[4], "--all", "-o", "id")
    assert rest.stdout.split() == made[5:] and rest.stderr == ""


def test_risk_list_takes_ending_before_with_its_filters(
    env: dict[str, str],
    store: Any,
) -> None:
    made = [
        store.risk_profiles.create(
            {"customer_id": f"cus_{i % 2}", "profile_type": "moderate", "score": i, "details": {}}
        )["id"]
        for i in range(6)
    ]
    result = run(
        env, "risk", "list", "--customer-id", "cus_0", "--ending-before", made[0], "-o", "jsonl"
    )
    assert result.returncode == 0, result.stderr
    assert [json.loads(line)["id"] for line in result.stdout.splitlines()] == [made[2], made[4]]


def test_bad_cursors_are_usage_errors(env: dict[str, str]) -> None:
    args, message = ["--starting-after", "conv_1", "--ending-before", "conv_2"], "not both"
    result = run(env, "conv", "list", *args)
    assert result.returncode == 2
    assert message in result.stderr and result.stdout == ""


def test_a_listing_that_fails_part_way_names_the_cursor_that_goes_on(
    env: dict[str, str],
    store: Any,
) -> None:
    made = [store.conversations.create({"contact_id": f"c_{i}"})["id"] for i in range(250)]
    # A row an older tool wrote badly: it cannot be read back, so the page holding it fails.
    broken = made[100]
    with sqlite3.connect(db_of(env)) as raw:
        # A BLOB, which no JSON can carry.
        raw.execute("UPDATE conversations SET contact_id = X'00ff' WHERE id = ?", (broken,))
    # (`-o id` reads the ids alone, and lists the broken row's id too: JSON lines read all.)
    result = run(env, "conv", "list", "--all", "-o", "jsonl")
    assert result.returncode == 1
    printed = [json.loads(line)["id"] for line in result.stdout.splitlines()]
    assert printed == made[::-1][: len(printed)] and 0 < len(printed) < 150
    assert f"with --starting-after {printed[-1]}." in result.stderr
    assert broken in result.stderr


def test_a_remote_all_listing_cut_off_names_the_cursor_and_going_on_finishes_it(
    tmp_path: Path,
) -> None:
    """The server dies part way through `--all`: exit 5, the hint names the last id printed;
    the same command with that cursor against the restarted server prints the rest."""
    db_path = tmp_path / "serve.db"
    with LocalBackend(db_path) as seed:
        fill(seed, "conversations", 4000)
    with serving(tmp_path) as served:
        env_ = {"CONVRISK_PAGE_SIZE": "20", "CONVRISK_MAX_RETRIES": "0"}
        child = subprocess.Popen(
            [CONVRISK, "conv", "list", "--all", "-o", "id"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=isolated_env(tmp_path, CONVRISK_BASE_URL=served.url, CONVRISK_TOKEN=TOKEN, **env_),
        )
        try:
            assert child.stdout is not None
            first = child.stdout.readline().strip()
            assert first  # the pipe fills up, so the child waits for us part way through
            served.stop(signal.SIGKILL)
            # Read through the same buffered reader: it may already hold part of the rest.
            rest = child.stdout.read()
            assert child.stderr is not None
            err = child.stderr.read()
            child.wait(timeout=SAFETY_TIMEOUT)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait(timeout=SAFETY_TIMEOUT)
    printed = [first, *rest.split()]
    assert child.returncode == 5, err
    assert 0 < len(printed) < 4000
    assert f"with --starting-after {printed[-1]}." in err
    with serving(tmp_path) as again:
        cli = Remote(tmp_path, again.url, TOKEN)
        more = cli.run("conv", "list", "--all", "-o", "id", "--starting-after", printed[-1])
    assert more.returncode == 0, more.stderr
    every = printed + more.stdout.split()
    assert len(every) == len(set(every)) == 4000


def test_ending_before_against_serve_pages_back_the_same_way(tmp_path: Path) -> None:
    with serving(tmp_path) as served:
        cli = Remote(tmp_path, served.url, TOKEN)
        made = [cli.json("conv", "create", "--group-id", "g_back")["id"] for _ in range(5)]
        result = cli.run(
            "conv", "list", "--ending-before", made[0], "--limit", "2", "-o", "id",
            CONVRISK_PAGE_SIZE="1",
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert result.stdout.split() == made[1:3]
        assert f"--ending-before {made[2]}" in result.stderr
        risk = cli.run("risk", "list", "--ending-before", "rp_00000000000000000000000000")
        assert risk.returncode == 0 and risk.stdout == "\t".join(RISK_PROFILES.names()) + "\n"
