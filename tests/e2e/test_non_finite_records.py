"""Records from a service holding numbers JSON cannot hold (`1e400`, `-1e400`, `NaN`,
`Infinity`), read by the installed script (issue 29, finding 7): get and list print valid JSON
(RFC 8259) with each such number a string and one note on stderr, exit 0; an update answered with
such a record journals valid JSON, and undo of it is refused with the reason.

A real HTTP server on 127.0.0.1 answers the records (tests/e2e/odd_service.NonFiniteRecords).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.loopback import on_loopback, running, url_of

from .both_backends import isolated_env
from .console import run
from .odd_service import FINITE_PROFILE, NON_FINITE, NonFiniteRecords, printed_profile

NOTE = (
    "Note: numbers that JSON cannot hold (NaN, or too large for a float, such as 1e400) are "
    'printed as the strings "NaN", "Infinity" and "-Infinity".'
)
EVERY = [printed_profile(n, printed) for n, (_, printed) in enumerate(NON_FINITE)]


def strict(text: str) -> Any:
    """JSON text as RFC 8259 has it: NaN and Infinity are errors, not numbers."""

    def refuse(name: str) -> None:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """The environment of a convrisk pointed at NonFiniteRecords on loopback, no retries."""
    NonFiniteRecords.seen = []
    with running(on_loopback(NonFiniteRecords)) as server:
        yield isolated_env(
            tmp_path,
            CONVRISK_BASE_URL=url_of(server),
            CONVRISK_TOKEN="e2e-non-finite-token-4c1d",
            CONVRISK_MAX_RETRIES="0",
            CONVRISK_PAGE_SIZE="2",  # --all reads three pages
        )


def test_get_and_list_print_valid_json_with_strings_and_one_note(env: dict[str, str]) -> None:
    ids = [f"rp_nf{n}" for n in range(len(NON_FINITE))]
    listed = [*EVERY, strict(FINITE_PROFILE)]
    runs = {
        "get json": (["risk", "get", *ids, "-o", "json"], EVERY),
        "get jsonl": (["risk", "get", *ids, "-o", "jsonl"], EVERY),
        "list json": (["risk", "list", "-o", "json"], listed),
        "list --all jsonl": (["risk", "list", "--all", "-o", "jsonl"], listed),
    }
    for name, (args, expected) in runs.items():
        result = run(env, *args)
        assert result.returncode == 0, (name, result.stderr)
        if "jsonl" in name:
            printed = [strict(line) for line in result.stdout.splitlines()]
        else:
            printed = strict(result.stdout)
        assert printed == expected, name
        assert result.stderr.splitlines() == [NOTE], name


def test_jq_reads_each_as_a_string(env: dict[str, str]) -> None:
    result = run(env, "risk", "list", "--all", "-o", "jsonl", "--jq", ".score")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["Infinity", "-Infinity", "NaN", "Infinity", "1.5"]
    assert result.stderr.splitlines() == [NOTE]
    one = run(env, "risk", "get", "rp_nf1", "--jq", ".score")
    assert (one.returncode, one.stdout, one.stderr.splitlines()) == (0, "-Infinity\n", [NOTE])


def test_an_update_answered_with_one_journals_json_and_its_undo_is_refused(
    env: dict[str, str], tmp_path: Path
) -> None:
    journal = tmp_path / "journal.jsonl"
    env["CONVRISK_JOURNAL"] = str(journal)
    updated = run(env, "risk", "update", "rp_nf0", "--score", "5", "-o", "jsonl")
    assert updated.returncode == 0, updated.stderr
    assert strict(updated.stdout) == EVERY[0] and updated.stderr.splitlines() == [NOTE]
    (entry,) = [strict(line) for line in journal.read_text().splitlines()]
    assert entry["operation"] == "update" and entry["id"] == "rp_nf0"
    assert entry["before"] == entry["after"] == EVERY[0]
    assert entry["non_finite"] is True
    puts = [seen for seen in NonFiniteRecords.seen if seen.startswith("PUT")]
    undo = run(env, "undo", "--last")
    assert undo.returncode == 1, undo.stderr
    assert undo.stderr.splitlines() == [
        f"Error: {entry['entry']}: the journal holds rp_nf0 with numbers JSON cannot hold "
        "(NaN, Infinity, 1e400) written as strings: undo would write the strings in their "
        "place, so it leaves it alone."
    ]
    assert [seen for seen in NonFiniteRecords.seen if seen.startswith("PUT")] == puts
    for line in journal.read_text().splitlines():
        strict(line)
    history = run(env, "history", "-o", "jsonl")
    assert history.returncode == 0 and strict(history.stdout)["non_finite"] is True
