"""serve's list answers: the JSON text of the page `list` returns, byte for byte, made without a
record per row where SQLite writes the rows' JSON; and the heads of answers as they were."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import pytest
from starlette.responses import Response
from starlette.types import Message

from convrisk.api_client.errors import ServiceError
from convrisk.api_client.page import Page
from convrisk.local_backend.backend import LocalBackend
from convrisk.local_backend.sandbox.wire import SERVER_FAILED, Answer, Wire, _parse_query, _Reply
from convrisk.local_backend.serve.asgi_app import ServeApp
from convrisk.local_backend.store import json_export
from tests.local_backend.varied import fill_varied

from .conftest import TOKEN

AUTH = [("authorization", f"Bearer {TOKEN}")]
PATHS = {"conversations": "/v1/conversations", "risk_profiles": "/v1/risk-profiles"}


@pytest.fixture(scope="module")
def varied(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database of varied rows (SQLite writes most of them, Python the rest); only read."""
    path = tmp_path_factory.mktemp("varied") / "varied.db"
    fill_varied(path)
    return path


@pytest.fixture
def store(varied: Path) -> Iterator[LocalBackend]:
    """A backend on the varied database."""
    with LocalBackend(varied) as backend:
        yield backend


def _dumped(page: object) -> bytes:
    """A page as json.dumps writes it: compact, non-ASCII kept, no NaN."""
    if isinstance(page, Page):
        page = page.as_dict()
    text = json.dumps(page, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.encode("utf-8")


def _walk(store: LocalBackend, name: str, size: int, forward: bool, **filters: str) -> int:
    """Every page of a walk through the wire, each checked against the page `list` returns;
    how many pages there were."""
    wire = Wire(store, TOKEN)
    resource = getattr(store, name)
    booleans = {key: value == "true" for key, value in filters.items() if key != "customer_id"}
    typed = {**filters, **booleans}
    # Forwards from the newest; backwards from the oldest (the last id of every id).
    cursor: str | None = None if forward else _oldest(resource)
    pages = 0
    while True:
        key = "starting_after" if forward else "ending_before"
        paging: dict[str, Any] = {"limit": size, key: cursor}
        query = "&".join(f"{k}={v}" for k, v in {**filters, **paging}.items() if v is not None)
        answer = wire.handle("GET", PATHS[name], query, AUTH)
        page = resource.list(typed or None, **paging)
        try:
            expected = (200, _dumped(page))
        except UnicodeEncodeError:  # a lone surrogate (`\ud800` in a file written by hand)
            expected = (500, json.dumps(ServiceError(SERVER_FAILED).to_body()).encode())
            answer = Answer(answer.status, json.dumps(answer.json()).encode())
        assert (answer.status, answer.body) == expected, query
        pages += 1
        if not page["has_more"]:
            return pages
        cursor = page["data"][-1 if forward else 0]["id"]


def _oldest(resource: Any) -> str:
    """The oldest id of a resource."""
    page = resource.list(limit=100, view="ids")
    ids: list[str] = page.ids
    while page.has_more:
        page = resource.list(limit=100, starting_after=ids[-1], view="ids")
        ids += page.ids
    return ids[-1]


@pytest.mark.parametrize("size", [1, 7, 100])
@pytest.mark.parametrize("forward", [True, False], ids=["starting_after", "ending_before"])
@pytest.mark.parametrize("name", ["conversations", "risk_profiles"])
def test_a_list_answer_is_the_listed_page_dumped_as_json_byte_for_byte(
    store: LocalBackend, name: str, forward: bool, size: int
) -> None:
    assert _walk(store, name, size, forward) >= (1 if size == 100 else 3)


@pytest.mark.parametrize(
    ("name", "filters"),
    [
        ("conversations", {"pinned": "true"}),
        ("conversations", {"muted": "false", "archived": "true"}),
        ("risk_profiles", {"customer_id": "cus_raw"}),
        ("risk_profiles", {"customer_id": "cus_d"}),
    ],
)
def test_a_filtered_list_answer_is_the_listed_page_byte_for_byte(
    store: LocalBackend, name: str, filters: dict[str, str]
) -> None:
    assert _walk(store, name, 3, True, **filters) > 1


def test_a_list_answer_is_the_same_from_a_sqlite_that_writes_json_otherwise(
    varied: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A build whose floats come out as SQLite's own `%!.15g`: its JSON is not used at all.
    monkeypatch.setattr(json_export, "_json_float", lambda value: f"{value:.15g}")
    with LocalBackend(varied) as store:
        assert _walk(store, "risk_profiles", 100, True) == 1


def _counting_records(store: LocalBackend, name: str) -> list[str]:
    """The ids of the rows made into records (to_record) from now on."""
    table = getattr(store, name)
    seen: list[str] = []
    spec = table._spec
    original = spec.to_record

    def counting(row: Any) -> Any:
        seen.append(row[0])
        return original(row)

    table._spec = dataclasses.replace(spec, to_record=counting)
    return seen


def test_a_list_answer_makes_no_record_of_rows_sqlite_writes(tmp_path: Path) -> None:
    with LocalBackend(tmp_path / "plain.db") as store:
        made = [store.conversations.create({"contact_id": f"ct_{n}"})["id"] for n in range(30)]
        seen = _counting_records(store, "conversations")
        answer = Wire(store, TOKEN).handle("GET", "/v1/conversations", "limit=100", AUTH)
        assert [record["id"] for record in answer.json()["data"]] == made[::-1]
        assert seen == []


def test_a_list_of_a_row_no_json_can_carry_fails_as_before(tmp_path: Path) -> None:
    path = tmp_path / "bad.db"
    with LocalBackend(path) as store:
        bad = store.conversations.create({"contact_id": "ct_bad"})["id"]
        store.conversations.create({"contact_id": "ct_after"})
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE conversations SET last_active_at = 9e999 WHERE id = ?", (bad,))
    conn.close()
    with LocalBackend(path) as store:
        answer = Wire(store, TOKEN).handle("GET", "/v1/conversations", "", AUTH)
    assert answer.status == 500
    assert answer.json()["error"]["message"] == SERVER_FAILED
    assert answer.internal is not None and bad in answer.internal


@pytest.mark.parametrize(
    "query",
    [
        "limit=5",
        "limit=5&&starting_after=conv_1",
        "&limit",
        "=x&limit=",
        "a=b=c",
        "pinned=true&pinned=false",
        "limit=1+2",
        "starting_after=conv%5F1&limit=%31",
        "muted=%zz&x=%",
        "é=ü",
        "&".join(["a=1"] * 49) + "&b=2",
    ],
)
def test_query_parameters_are_read_as_parse_qsl_reads_them(query: str) -> None:
    pairs = parse_qsl(query, keep_blank_values=True)
    names = [name for name, _ in pairs]
    if len(set(names)) < len(names):
        with pytest.raises(_Reply, match="given more than once"):
            _parse_query(query)
    else:
        assert _parse_query(query) == dict(pairs)


def test_too_many_query_parameters_are_refused_as_before(tmp_path: Path) -> None:
    with LocalBackend(tmp_path / "q.db") as store:
        query = "&".join(["limit=1"] * 51)
        answer = Wire(store, TOKEN).handle("GET", "/v1/conversations", query, AUTH)
    assert (answer.status, answer.json()["error"]["message"]) == (400, "Too many query parameters.")


ANSWERS = [
    (Answer(200, b'{"has_more":false,"data":[]}'), False, False),
    (Answer(200, b""), False, False),
    (Answer(401, b"{}", (("www-authenticate", 'Bearer realm="convrisk"'),)), False, False),
    (Answer(405, b"{}", (("allow", "GET, POST"),)), True, False),
    (Answer(503, b"{}", (("retry-after", "1"),)), True, False),
    (Answer(200, b"{}", (("idempotent-replayed", "true"),)), False, False),
    (Answer(200, b"x\n", (("content-type", "application/x-ndjson"),)), False, False),
    (Answer(200, b"{}", (("Cache-Control", "max-age=5"), ("X-Up", "1"))), False, True),
    (Answer(200, b"{}", (("cache-control", "private"),)), False, True),
    (Answer(204, b"", (("content-type", "application/json"),)), False, True),
    (Answer(304, b"", ()), False, True),
    (Answer(201, b"{}", (("content-length", "2"),)), False, True),
    (Answer(413, b"{}"), True, False),
]


def test_a_header_an_answer_gives_twice_is_sent_twice() -> None:
    answer = Answer(405, b"{}", (("allow", "GET"), ("allow", "POST"), ("x-up", "1")))
    start = _sent(answer, False, True)[0]
    assert [value for name, value in start["headers"] if name == b"allow"] == [b"GET", b"POST"]


@pytest.mark.parametrize(("answer", "close", "as_sent"), ANSWERS)
def test_an_answer_is_sent_with_the_head_starlette_s_response_sent(
    answer: Answer, close: bool, as_sent: bool
) -> None:
    # The answer's own Cache-Control, in any letter case, replaces the default.
    own = any(name.lower() == "cache-control" for name, _ in answer.headers)
    headers = ({} if own else {"cache-control": "no-store"}) | dict(answer.headers)
    if close:
        headers["connection"] = "close"
    media_type = None if as_sent else "application/json"
    before = Response(answer.body, answer.status, headers=headers, media_type=media_type)
    assert _sent(answer, close, as_sent) == [
        {"type": "http.response.start", "status": answer.status, "headers": before.raw_headers},
        {"type": "http.response.body", "body": answer.body},
    ]


def _sent(answer: Answer, close: bool, as_sent: bool) -> list[Message]:
    """The ASGI messages ServeApp sends for an answer."""
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    async def receive() -> Message:
        return {"type": "http.disconnect"}

    scope = {"type": "http"}
    asyncio.run(ServeApp._send(scope, receive, send, answer, close=close, as_sent=as_sent))
    return sent
