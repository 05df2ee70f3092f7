"""Ids that cannot be ids, and `conv list --contact-id` (issue 18, items 8 and 6): convrisk
in-process on the local database and against a serve over HTTP; the installed script runs each
once against `convrisk serve` (tests/e2e/test_ids_and_contacts.py)."""

from __future__ import annotations

import json

from .e2e_twin import Twin
from .e2e_twin import twin as twin  # a fixture: each test on the local db and on serve

WELL_FORMED_MISSING = "conv_01ARZ3NDEKTSV4RRFFQ69G5FAV"


def _one_short_line(stderr: str, limit: int = 300) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr[:2000]
    assert len(lines[0]) <= limit, lines[0][:2000]
    return lines[0]


def _seed(twin: Twin, contacts: list[str]) -> list[str]:
    """One conversation per contact, in order; their ids."""
    return [twin.store.conversations.create({"contact_id": c})["id"] for c in contacts]


# -- item 8: ids that cannot be ids ---------------------------------------------------------------


def test_a_short_cursor_is_refused_not_an_empty_list(twin: Twin) -> None:
    _seed(twin, ["c_1", "c_2"])
    result = twin.run("conv", "list", "--starting-after", "conv_01M8")
    line = _one_short_line(result.stderr)
    assert "conv_01M8" in line and "not a conversation id" in line
    assert result.stdout == ""
    # Locally the shape is ours to check (exit 2); a remote service judges ids of its own form
    # itself (serve refuses it with a 400: exit 1).
    assert result.code == (1 if twin.remote else 2)


def test_the_help_placeholder_as_a_cursor_is_refused(twin: Twin) -> None:
    _seed(twin, [f"c_{i}" for i in range(25)])
    result = twin.run("conv", "list", "--ending-before", "conv_01HV...", "--limit", "20")
    assert result.code == (1 if twin.remote else 2), result.stderr
    assert result.stdout == ""
    assert "not a conversation id" in _one_short_line(result.stderr)


def test_an_id_of_64_kib_is_a_usage_error_of_one_short_line(twin: Twin) -> None:
    huge = "conv_" + "A" * (64 * 1024)
    for args in (["conv", "get", huge], ["conv", "list", "--starting-after", huge]):
        result = twin.run(*args)
        assert result.code == 2, result.stderr[:500]
        line = _one_short_line(result.stderr)
        assert "65541 characters" in line or "longer than" in line, line


def test_an_id_of_another_resource_or_alphabet_is_a_usage_error(twin: Twin) -> None:
    result = twin.run("conv", "get", "rp_01ARZ3NDEKTSV4RRFFQ69G5FAV")
    assert result.code == 2
    assert "not a conversation id" in _one_short_line(result.stderr)
    result = twin.run("conv", "get", "conv_01ARZ3\x1b[2J")
    assert result.code == 2
    line = _one_short_line(result.stderr)
    assert "\x1b" not in line and "\\x1b" in line


def test_a_well_formed_id_that_does_not_exist_is_still_not_found(twin: Twin) -> None:
    result = twin.run("conv", "get", WELL_FORMED_MISSING)
    assert result.code == 3
    assert "No such conversation" in result.stderr


def test_a_giant_id_on_stdin_is_refused_in_bounded_memory_and_the_others_go_on(
    twin: Twin,
) -> None:
    # The bound on memory is measured on the installed script's own process (its peak RSS) in
    # tests/e2e/test_ids_and_contacts.py; here, what it prints on both backends.
    first, second = _seed(twin, ["c_1", "c_2"])
    # 64 MiB on one line, between two real ids.
    data = first + "\nconv_" + "A" * (64 * 1024 * 1024) + "\n" + second + "\n"
    result = twin.run("conv", "get", "-", "-o", "id", input=data)
    assert result.code == 2, result.stderr[:500]
    assert result.stdout.split() == [first, second]
    line = _one_short_line(result.stderr)
    assert "longer than 255 characters" in line


# -- item 6: conv list --contact-id ----------------------------------------------------------------


def test_contact_id_lists_that_contacts_conversations_newest_first(twin: Twin) -> None:
    made = _seed(twin, ["c_1", "c_2", "c_1", "c_3", "c_1", "c_2"])
    ones = [made[4], made[2], made[0]]
    result = twin.run("conv", "list", "--contact-id", "c_1", "-o", "id")
    assert result.code == 0, result.stderr
    assert result.stdout.split() == ones
    # --limit stops after that many matches, and the hint's cursor goes on from there.
    first = twin.run("conv", "list", "--contact-id", "c_1", "--limit", "2", "-o", "id")
    assert first.stdout.split() == ones[:2]
    assert f"--starting-after {ones[1]}" in first.stderr
    rest = twin.run(
        "conv", "list", "--contact-id", "c_1", "--starting-after", ones[1], "--all", "-o", "jsonl"
    )
    assert [json.loads(line)["id"] for line in rest.stdout.splitlines()] == ones[2:]
    back = twin.run("conv", "list", "--contact-id", "c_1", "--ending-before", made[0], "-o", "id")
    assert back.stdout.split() == [made[2], made[4]]
    both = twin.run("conv", "list", "--contact-id", "c_2", "--not-muted", "-o", "json")
    assert [r["id"] for r in json.loads(both.stdout)] == [made[5], made[1]]
    none = twin.run("conv", "list", "--contact-id", "c_404", "--all", "-o", "json")
    assert none.code == 0 and json.loads(none.stdout) == []
    scanning = [line for line in result.stderr.splitlines() if "scan" in line]
    if twin.remote:
        # The service has no such filter: one line says the client scans every conversation.
        assert len(scanning) == 1, result.stderr
    else:
        assert scanning == [] and result.stderr == ""


def test_an_empty_contact_id_is_a_usage_error(twin: Twin) -> None:
    result = twin.run("conv", "list", "--contact-id", " ")
    assert result.code == 2
    assert "--contact-id" in _one_short_line(result.stderr)
