"""The variants of tests/e2e/test_records_as_sent.py in-process: both resources' objects, by id
and listed, printed exactly as the odd service on loopback sent them."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import Invoke
from tests.e2e.odd_service import CONVERSATIONS, PROFILES, OddRecords
from tests.loopback import on_loopback, running, url_of


@pytest.fixture(scope="module")
def service() -> Iterator[str]:
    """A service on 127.0.0.1 whose records lack fields, carry extra ones or odd types: its URL."""
    with running(on_loopback(OddRecords)) as server:
        yield url_of(server)


Against = Callable[..., str]


@pytest.fixture
def against(service: str, invoke: Invoke, home: Path, monkeypatch: pytest.MonkeyPatch) -> Against:
    """stdout of `convrisk --base-url SERVICE ARGS` (no retries), which must succeed."""
    monkeypatch.setenv("CONVRISK_TOKEN", "tok")
    monkeypatch.setenv("CONVRISK_MAX_RETRIES", "0")

    def stdout(*args: str) -> str:
        return invoke("--base-url", service, *args).ok().stdout

    return stdout


@pytest.mark.parametrize(
    ("command", "sent"), [("conv", CONVERSATIONS), ("risk", PROFILES)], ids=["conv", "risk"]
)
def test_get_prints_each_object_exactly_as_sent(
    against: Against, command: str, sent: list[dict[str, Any]]
) -> None:
    for record in sent:
        printed = against(command, "get", record["id"], "-o", "json")
        assert json.loads(printed) == record
        assert list(json.loads(printed)) == list(record)  # the same keys in the same order
    ids = [record["id"] for record in sent]
    lines = against(command, "get", *ids, "-o", "jsonl").splitlines()
    assert [json.loads(line) for line in lines] == sent
    assert json.loads(against(command, "get", *ids, "-o", "json")) == sent


@pytest.mark.parametrize(
    ("command", "sent"), [("conv", CONVERSATIONS), ("risk", PROFILES)], ids=["conv", "risk"]
)
def test_list_prints_each_object_exactly_as_sent(
    against: Against, command: str, sent: list[dict[str, Any]]
) -> None:
    printed = against(command, "list", "-o", "json")
    assert json.loads(printed) == sent
    lines = against(command, "list", "--all", "-o", "jsonl").splitlines()
    assert [json.loads(line) for line in lines] == sent
    assert [list(json.loads(line)) for line in lines] == [list(record) for record in sent]
