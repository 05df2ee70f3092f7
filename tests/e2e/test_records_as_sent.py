"""JSON output of a remote record is exactly the service's object (DESIGN 4.1): a missing field
stays missing, an extra one stays, an oddly typed value comes out as it was sent.

A real HTTP server on loopback answers such objects; the installed console script reads them,
each behaviour once: both resources in-process, in tests/cli/test_records_as_sent.py.
"""

from __future__ import annotations

import json
from pathlib import Path

from .both_backends import isolated_env
from .console import assert_loads_none_of
from .odd_service import CONVERSATIONS, PROFILES, stdout_against


def test_get_prints_each_object_exactly_as_sent(service: str, tmp_path: Path) -> None:
    command, sent = "conv", CONVERSATIONS
    for record in sent:
        printed = stdout_against(service, tmp_path, command, "get", record["id"], "-o", "json")
        assert json.loads(printed) == record
        assert list(json.loads(printed)) == list(record)  # the same keys in the same order
    ids = [record["id"] for record in sent]
    lines = stdout_against(service, tmp_path, command, "get", *ids, "-o", "jsonl").splitlines()
    assert [json.loads(line) for line in lines] == sent
    assert json.loads(stdout_against(service, tmp_path, command, "get", *ids, "-o", "json")) == sent


def test_list_prints_each_object_exactly_as_sent(service: str, tmp_path: Path) -> None:
    command, sent = "risk", PROFILES
    printed = stdout_against(service, tmp_path, command, "list", "-o", "json")
    assert json.loads(printed) == sent
    lines = stdout_against(service, tmp_path, command, "list", "--all", "-o", "jsonl").splitlines()
    assert [json.loads(line) for line in lines] == sent
    assert [list(json.loads(line)) for line in lines] == [list(record) for record in sent]


def test_a_table_still_shows_odd_values_tolerantly(service: str, tmp_path: Path) -> None:
    rows = stdout_against(service, tmp_path, "conv", "list").splitlines()
    header, first, second, third = (row.split("\t") for row in rows)
    one = dict(zip(header, first, strict=True))
    assert one["created_at"] == "2024-05-01 12:00:00Z"  # milliseconds shown as the date
    assert one["is_pinned"] == one["contact_id"] == ""  # missing: empty, not invented
    two = dict(zip(header, second, strict=True))
    assert two["is_pinned"] == "yes" and two["archived_at"] == "last tuesday"
    assert two["group_id"] == '{"nested":[1,null,"é"]}'
    assert dict(zip(header, third, strict=True))["created_at"] == ""


def test_a_remote_answer_is_checked_without_importing_pydantic(
    service: str, tmp_path: Path
) -> None:
    """The edge check is pydantic's core alone: `import pydantic` would add a third to the
    remote cold start. What a process loads shows only in a fresh one: an object, and a list,
    each checked in a child of its own."""
    env = isolated_env(tmp_path, CONVRISK_TOKEN="tok", CONVRISK_MAX_RETRIES="0")
    for args in (["get", "conv_2", "-o", "json"], ["list", "--all", "-o", "jsonl"]):
        call = (
            "from convrisk.cli.app import main\n"
            f"code = main({['--base-url', service, 'conv', *args]!r})\n"
            "assert 'pydantic_core' in sys.modules, 'the answer was not checked'\n"
        )
        assert_loads_none_of(env, call, {"pydantic"})
