"""The export path (SQLite writes each row's JSON) prints exactly what the general path prints."""

from __future__ import annotations

import dataclasses
import functools
import io
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from convrisk.api_client import Client
from convrisk.api_client.errors import ServiceError
from convrisk.api_client.page import View
from convrisk.api_client.record_types import RiskProfileCreateParams
from convrisk.api_client.records import json_text
from convrisk.api_client.text import printable_json
from convrisk.cli.output.printer import Printer
from convrisk.cli.output.resource_kinds import CONVERSATIONS, RISK_PROFILES
from convrisk.local_backend.backend import LocalBackend
from convrisk.local_backend.store import json_export

from .varied import RAW_DETAILS, fill_varied


@pytest.fixture(scope="module")
def varied(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database of varied rows, shared by the tests of this module (they only read it)."""
    path = tmp_path_factory.mktemp("varied") / "varied.db"
    fill_varied(path)
    return path


@pytest.fixture
def store(varied: Path) -> Iterator[LocalBackend]:
    """A backend on the varied database."""
    with LocalBackend(varied) as backend:
        yield backend


def _both(client: Client, name: str, page_size: int, **filters: Any) -> None:
    """Every page of both paths: the same ids, has_more and, byte for byte, the same text."""
    resource = getattr(client, name)
    general = list(resource.iter_pages(filters or None, page_size=page_size))
    fast = list(resource.iter_pages(filters or None, page_size=page_size, view="json"))
    assert [page.has_more for page in fast] == [page.has_more for page in general]
    assert [page.ids for page in fast] == [
        [record["id"] for record in page.records] for page in general
    ]
    for text_page, record_page in zip(fast, general, strict=True):
        for text, record in zip(text_page.json_texts, record_page.records, strict=True):
            assert text == json_text(record), record["id"]


@pytest.mark.parametrize("page_size", [1, 7, 100])
@pytest.mark.parametrize("name", ["conversations", "risk_profiles"])
def test_json_pages_are_byte_identical_to_dumped_records(
    store: LocalBackend, name: str, page_size: int
) -> None:
    _both(Client(store), name, page_size)


def _ids_agree(client: Client, name: str, page_size: int, **filters: Any) -> None:
    """Every page of ids alone: the ids and has_more of the record pages."""
    resource = getattr(client, name)
    general = list(resource.iter_pages(filters or None, page_size=page_size))
    ids = list(resource.iter_pages(filters or None, page_size=page_size, view="ids"))
    assert [(page.has_more, page.ids) for page in ids] == [
        (page.has_more, [record["id"] for record in page.records]) for page in general
    ]


@pytest.mark.parametrize("page_size", [1, 7, 100])
@pytest.mark.parametrize("name", ["conversations", "risk_profiles"])
def test_id_pages_are_the_ids_of_the_record_pages(
    store: LocalBackend, name: str, page_size: int
) -> None:
    _ids_agree(Client(store), name, page_size)


@pytest.mark.parametrize(
    ("name", "filters"),
    [
        ("conversations", {"pinned": True}),
        ("conversations", {"muted": False, "archived": True}),
        ("risk_profiles", {"customer_id": "cus_raw"}),
    ],
)
def test_id_pages_agree_with_filters(
    store: LocalBackend, name: str, filters: dict[str, Any]
) -> None:
    _ids_agree(Client(store), name, 3, **filters)


def test_id_pages_build_no_record(store: LocalBackend) -> None:
    seen = _counting_records(store, "conversations")
    pages = Client(store).conversations.iter_pages(view="ids")
    assert sum(len(page.ids) for page in pages) > 10
    assert seen == []


@pytest.mark.parametrize(
    ("name", "filters"),
    [
        ("conversations", {"pinned": True}),
        ("conversations", {"muted": False, "archived": True}),
        ("risk_profiles", {"customer_id": "cus_raw"}),
        ("risk_profiles", {"customer_id": "cus_d"}),
    ],
)
def test_json_pages_agree_with_filters(
    store: LocalBackend, name: str, filters: dict[str, Any]
) -> None:
    _both(Client(store), name, 3, **filters)


def _printed(store: LocalBackend, fmt: str, name: str, *, text: bool) -> str:
    """What the printer writes for the whole list, from record pages or from JSON text pages
    (from pages of ids alone for `-o id`)."""
    printer = Printer(fmt, env={})
    printer.stdout_is_terminal = lambda: False  # type: ignore[method-assign]
    resource = getattr(Client(store, page_size=9), name)
    kind = CONVERSATIONS if name == "conversations" else RISK_PROFILES
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("sys.stdout", out)
        if text:
            view: View = "ids" if fmt == "id" else "json"
            printer.pages(kind, resource.iter_pages(view=view), view=view, hint_more=False)
        else:
            printer.pages(kind, resource.iter_pages(), hint_more=False)
    return out.getvalue()


@pytest.mark.parametrize("fmt", ["jsonl", "json", "id"])
@pytest.mark.parametrize("name", ["conversations", "risk_profiles"])
def test_printed_output_is_the_same_from_either_path(
    store: LocalBackend, fmt: str, name: str
) -> None:
    printed = _printed(store, fmt, name, text=True)
    assert printed == _printed(store, fmt, name, text=False)
    if fmt == "id":
        assert len(printed.splitlines()) > 10
        return
    # Escaped for a terminal (DEL, C1, U+2028, bidi, lone surrogates) and encodable as UTF-8.
    assert printed == printable_json(printed)
    printed.encode("utf-8")
    assert "\\u2028" in printed and "\u2028" not in printed


def _counting_records(store: LocalBackend, name: str) -> list[str]:
    """Record the ids of rows that go through Python (to_record) rather than SQLite's JSON."""
    table = getattr(store, name)
    seen: list[str] = []
    spec = table._spec
    original = spec.to_record

    def counting(row: Any) -> Any:
        seen.append(row[0])
        return original(row)

    table._spec = dataclasses.replace(spec, to_record=counting)
    return seen


def test_sqlite_writes_most_rows_and_python_only_those_it_cannot_match(
    store: LocalBackend,
) -> None:
    client = Client(store)
    seen = _counting_records(store, "risk_profiles")
    pages = client.risk_profiles.iter_pages(view="json")
    texts = [text for page in pages for text in page.json_texts]
    assert 0 < len(seen) < len(texts) / 2
    # Every hand-written form that json.dumps would write otherwise went through Python...
    raw = client.risk_profiles.iter_pages({"customer_id": "cus_raw"})
    changed = {
        record["id"]
        for page in raw
        for record in page["data"]
        if json_text(record["details"]) not in RAW_DETAILS
    }
    assert changed and changed <= set(seen)
    # ... and conversations need Python only for the two flags stored as 2 and "yes".
    seen_conv = _counting_records(store, "conversations")
    list(client.conversations.iter_pages(view="json"))
    assert len(seen_conv) == 2


def test_a_sqlite_that_writes_json_otherwise_is_not_used(
    varied: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A build whose floats come out as SQLite's own `%!.15g` (-0.0 as 0.0, 1e300 as 1.0e+300).
    monkeypatch.setattr(json_export, "_json_float", lambda value: f"{value:.15g}")
    with LocalBackend(varied) as store:
        seen = _counting_records(store, "conversations")
        client = Client(store)
        pages = client.conversations.iter_pages(view="json")
        total = sum(len(page.json_texts) for page in pages)
        assert len(seen) == total
        _both(client, "risk_profiles", 100)


@pytest.mark.parametrize(
    ("column", "sql_value"),
    [("contact_id", "x'00ff'"), ("archived_at", "9e999"), ("last_active_at", "-9e999")],
)
def test_a_row_no_json_can_carry_fails_both_paths_alike(
    tmp_path: Path, column: str, sql_value: str
) -> None:
    path = tmp_path / "bad.db"
    with LocalBackend(path) as store:
        for n in range(5):
            store.conversations.create({"contact_id": f"ct_{n}"})
        bad = store.conversations.create({"contact_id": "ct_bad"})["id"]
        store.conversations.create({"contact_id": "ct_after"})
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(f"UPDATE conversations SET {column} = {sql_value} WHERE id = ?", (bad,))
    conn.close()
    with LocalBackend(path) as store:
        messages = []
        listings: tuple[Callable[..., object], ...] = (
            store.conversations.list,
            functools.partial(store.conversations.list, view="json"),
        )
        for pages in listings:
            with pytest.raises(ServiceError) as caught:
                pages(limit=100)
            messages.append(caught.value.message)
        assert messages[0] == messages[1]
        assert bad in messages[0] and "cannot be read back" in messages[0]


def test_ids_alone_list_a_row_no_record_can_be_made_of(tmp_path: Path) -> None:
    """`-o id` reads ids only: a record whose other columns cannot be read is still listed, so
    that it can be named (and deleted) by its id."""
    path = tmp_path / "bad.db"
    with LocalBackend(path) as store:
        made = [store.conversations.create({"contact_id": f"ct_{n}"})["id"] for n in range(3)]
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE conversations SET archived_at = 9e999 WHERE id = ?", (made[1],))
    conn.close()
    with LocalBackend(path) as store:
        with pytest.raises(ServiceError):
            store.conversations.list(limit=100)
        page = store.conversations.list(limit=100, view="ids")
        assert (page.has_more, page.ids) == (False, made[::-1])


@pytest.mark.parametrize(
    "details_text",
    [
        "NaN",
        '{"a":NaN}',
        '{"a":Infinity}',
        '{"a":1e999}',
        "[1]",
        "{not json",
        '"text"',
        '{"k":' * 64 + "{}" + "}" * 64,
    ],
    ids=["nan", "nan-inside", "infinity", "overflow", "array", "not-json", "string", "65-deep"],
)
def test_details_no_json_object_can_carry_fail_both_paths_alike(
    tmp_path: Path, details_text: str
) -> None:
    path = tmp_path / "bad.db"
    body: RiskProfileCreateParams = {
        "customer_id": "c",
        "profile_type": "t",
        "score": 1,
        "details": {},
    }
    with LocalBackend(path) as store:
        bad = store.risk_profiles.create(body)["id"]
        store.risk_profiles.create(body)
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE risk_profiles SET details = ? WHERE id = ?", (details_text, bad))
    conn.close()
    with LocalBackend(path) as store:
        messages = []
        listings: tuple[Callable[..., object], ...] = (
            store.risk_profiles.list,
            functools.partial(store.risk_profiles.list, view="json"),
        )
        for pages in listings:
            with pytest.raises(ServiceError) as caught:
                pages(limit=100)
            messages.append(caught.value.message)
        assert messages[0] == messages[1]
        assert bad in messages[0]


def test_a_page_lists_though_the_row_just_after_it_cannot_be_read(tmp_path: Path) -> None:
    """A page asks for one row more than its limit only to tell whether more follow: that row
    is not on the page, so a row no record can be made of (a file repaired by hand) fails the
    page it is on, not the one before it, on the export path (`-o jsonl`, serve's list) as on
    the general one, also when a row of the page is one that Python writes (spaced details)."""
    path = tmp_path / "bad.db"
    body: RiskProfileCreateParams = {
        "customer_id": "c",
        "profile_type": "t",
        "score": 1,
        "details": {},
    }
    with LocalBackend(path) as store:
        bad = store.risk_profiles.create(body)["id"]
        store.risk_profiles.create(body)
        spaced = store.risk_profiles.create(body)["id"]
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE risk_profiles SET details = '[1]' WHERE id = ?", (bad,))
        conn.execute("UPDATE risk_profiles SET details = '{\"a\": 1}' WHERE id = ?", (spaced,))
    conn.close()
    with LocalBackend(path) as store:
        resource = store.risk_profiles
        general = resource.list(limit=2)
        assert general["has_more"] and bad not in [record["id"] for record in general["data"]]
        records = [json_text(record) for record in general["data"]]
        assert resource.list(limit=2, view="json").json_texts == records
        assert resource.list_text(limit=2) == json_text({"has_more": True, "data": general["data"]})
        with pytest.raises(ServiceError) as caught:
            resource.list(limit=3, view="json")
        assert bad in caught.value.message
