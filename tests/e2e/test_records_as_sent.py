"""JSON output of a remote record is exactly the service's object (DESIGN 4.1): a missing field
stays missing, an extra one stays, an oddly typed value comes out as it was sent.

A real HTTP server on loopback answers such objects; the installed console script reads them.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.loopback import JSONService, on_loopback, running, url_of

from .test_remote_cli import CONVRISK, isolated_env

SAFETY_TIMEOUT = 60

CONVERSATIONS: list[dict[str, Any]] = [
    {"id": "conv_1", "created_at": 1714564800123, "extra": "x"},
    {
        "id": "conv_2",
        "is_pinned": "yes",
        "is_muted": 1,
        "contact_id": 42,
        "group_id": {"nested": [1, None, "é"]},
        "archived_at": "last tuesday",
        "created_at": 1714564800.5,
        "labels": ["vip", None],
    },
    {"id": "conv_3"},
]
PROFILES: list[dict[str, Any]] = [
    {"id": "rp_1", "score": "high", "details": [1, 2], "owner": None},
    {"id": "rp_2", "customer_id": "c", "score": 1e300, "details": {"f": 0.1, "big": 2**70}},
]
OBJECTS = {f"/v1/conversations/{o['id']}": o for o in CONVERSATIONS} | {
    f"/v1/risk-profiles/{o['id']}": o for o in PROFILES
}
PAGES = {
    "/v1/conversations": {"object": "list", "has_more": False, "data": CONVERSATIONS, "ids": [1]},
    "/v1/risk-profiles": {"has_more": False, "data": PROFILES, "url": "/v1/risk-profiles"},
}


class _Handler(JSONService):
    """Answers each known path with its object, as JSON; anything else is a 404."""

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        answer = OBJECTS.get(path) or PAGES.get(path)
        if answer is None:
            self.send_json(404, {"error": {"message": "no"}})
        else:
            self.send_json(200, answer)


@pytest.fixture(scope="module")
def service() -> Iterator[str]:
    """The odd service on 127.0.0.1, its base URL."""
    with running(on_loopback(_Handler)) as server:
        yield url_of(server)


def stdout_against(base_url: str, home: Path, *args: str) -> str:
    """stdout of `convrisk --base-url BASE_URL ARGS` (no retries), which must succeed."""
    result = subprocess.run(
        [CONVRISK, "--base-url", base_url, *args],
        env=isolated_env(home, CONVRISK_TOKEN="tok", CONVRISK_MAX_RETRIES="0"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=SAFETY_TIMEOUT,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize(
    ("command", "sent"), [("conv", CONVERSATIONS), ("risk", PROFILES)], ids=["conv", "risk"]
)
def test_get_prints_each_object_exactly_as_sent(
    service: str, tmp_path: Path, command: str, sent: list[dict[str, Any]]
) -> None:
    for record in sent:
        printed = stdout_against(service, tmp_path, command, "get", record["id"], "-o", "json")
        assert json.loads(printed) == record
        assert list(json.loads(printed)) == list(record)  # the same keys in the same order
    ids = [record["id"] for record in sent]
    lines = stdout_against(service, tmp_path, command, "get", *ids, "-o", "jsonl").splitlines()
    assert [json.loads(line) for line in lines] == sent
    assert json.loads(stdout_against(service, tmp_path, command, "get", *ids, "-o", "json")) == sent


@pytest.mark.parametrize(
    ("command", "sent"), [("conv", CONVERSATIONS), ("risk", PROFILES)], ids=["conv", "risk"]
)
def test_list_prints_each_object_exactly_as_sent(
    service: str, tmp_path: Path, command: str, sent: list[dict[str, Any]]
) -> None:
    printed = stdout_against(service, tmp_path, command, "list", "-o", "json")
    assert json.loads(printed) == sent
    lines = stdout_against(service, tmp_path, command, "list", "--all", "-o", "jsonl").splitlines()
    assert [json.loads(line) for line in lines] == sent
    assert [list(json.loads(line)) for line in lines] == [list(record) for record in sent]


def test_a_table_still_shows_odd_values_tolerantly(service: str, tmp_path: Path) -> None:
    rows = stdout_against(service, tmp_path, "conv", "list").splitlines()
    header, first, second, third = (row.split("\t") for row in rows)
    one = dict(zip(header, first, strict=True))
    assert one["created_at"] == "2024-05-01 12:00:00"  # milliseconds shown as the date
    assert one["is_pinned"] == one["contact_id"] == ""  # missing: empty, not invented
    two = dict(zip(header, second, strict=True))
    assert two["is_pinned"] == "yes" and two["archived_at"] == "last tuesday"
    assert two["group_id"] == '{"nested":[1,null,"é"]}'
    assert dict(zip(header, third, strict=True))["created_at"] == ""
