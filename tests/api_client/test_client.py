"""The Client facade: the same behaviour over the local backend and over the remote one.

The `client` fixture runs each test twice: on a LocalBackend over a SQLite file, and on the
HTTPBackend talking to `convrisk serve`'s server (over another LocalBackend) on loopback.
Faults only a misbehaving remote can produce are scripted with MockTransport below.
"""

from __future__ import annotations

import gc
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from convrisk.api_client import Client
from convrisk.api_client.errors import InvalidRequestError, NotFoundError, ServiceError
from convrisk.api_client.pagination import CursorGuard
from convrisk.api_client.record_types import Conversation
from convrisk.api_client.records import json_text
from convrisk.api_client.remote.http import HTTPBackend
from convrisk.local_backend.backend import LocalBackend
from tests.shared_server import SharedServer, shared_server

from .conftest import Remote, conversation

MakeRemote = Callable[..., Remote]
PAGE_SIZE = 7


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedServer]:
    """One server for the module's remote clients (each over the database of its own test)."""
    with shared_server(tmp_path_factory.mktemp("facade"), "facade-token") as running:
        yield running


@pytest.fixture(params=["local", "remote"])
def client(
    request: pytest.FixtureRequest, tmp_path: Path, shared: SharedServer
) -> Iterator[Client]:
    """A Client with a small page size over each backend in turn."""
    local = LocalBackend(tmp_path / "facade.db")
    if request.param == "local":
        with Client(local, page_size=PAGE_SIZE) as c:
            yield c
        return
    try:
        with (
            shared.serving(local, []) as server,
            Client(HTTPBackend(server.url, "facade-token"), page_size=PAGE_SIZE) as c,
        ):
            yield c
    finally:
        local.close()


def make_conversations(client: Client, n: int, **every: Any) -> list[Conversation]:
    """Create `n` conversations; returned newest first, as lists are ordered."""
    bodies: list[Any] = [{"contact_id": f"ct_{i}", **every} for i in range(n)]
    made = [client.conversations.create(body) for body in bodies]
    return made[::-1]


def test_the_five_verbs_of_a_conversation(client: Client) -> None:
    conv = client.conversations.create({"contact_id": "ct_1"})
    assert conv["id"].startswith("conv_")
    assert (conv["is_pinned"], conv["is_muted"], conv["archived_at"]) == (False, False, None)
    assert client.conversations.retrieve(conv["id"]) == conv
    muted = client.conversations.update(
        conv["id"], {"is_muted": True, "archived_at": 1_700_000_000}
    )
    assert (muted["is_muted"], muted["archived_at"]) == (True, 1_700_000_000)
    assert client.conversations.update(conv["id"], {}) == muted
    gone = client.conversations.delete(conv["id"])
    assert gone == {"id": conv["id"], "deleted": True}
    with pytest.raises(NotFoundError):
        client.conversations.retrieve(conv["id"])
    with pytest.raises(NotFoundError):
        client.conversations.delete(conv["id"])


def test_the_five_verbs_of_a_risk_profile(client: Client) -> None:
    prof = client.risk_profiles.create(
        {"customer_id": "cus_1", "profile_type": "moderate", "score": 55, "details": {"a": 1}}
    )
    assert prof["updated_at"] == prof["created_at"]
    changed = client.risk_profiles.update(prof["id"], {"score": 72.5, "details": {"b": [1, 2]}})
    assert (changed["score"], changed["details"], changed["customer_id"]) == (
        72.5,
        {"b": [1, 2]},
        "cus_1",
    )
    assert client.risk_profiles.retrieve(prof["id"]) == changed
    assert client.risk_profiles.delete(prof["id"])["id"] == prof["id"]
    with pytest.raises(NotFoundError):
        client.risk_profiles.retrieve(prof["id"])


def test_iterate_follows_pages_newest_first(client: Client) -> None:
    made = make_conversations(client, 3 * PAGE_SIZE + 2)
    assert [c["id"] for c in client.conversations.iterate()] == [c["id"] for c in made]
    pages = list(client.conversations.iter_pages())
    assert [len(p["data"]) for p in pages] == [7, 7, 7, 2]
    assert [p["has_more"] for p in pages] == [True, True, True, False]


def test_limit_is_a_total_and_has_more_tells_if_more_exist(client: Client) -> None:
    made = make_conversations(client, 20)
    pages = list(client.conversations.iter_pages(limit=10))
    assert [len(p["data"]) for p in pages] == [7, 3]
    assert pages[-1]["has_more"] is True
    assert [c["id"] for c in client.conversations.iterate(limit=10)] == [c["id"] for c in made[:10]]
    exact = list(client.conversations.iter_pages(limit=20))
    assert sum(len(p["data"]) for p in exact) == 20
    assert list(client.conversations.iterate(limit=0)) == []
    assert len(list(client.conversations.iterate(limit=500))) == 20


def test_page_size_can_be_given_per_call(client: Client) -> None:
    make_conversations(client, 10)
    pages = list(client.conversations.iter_pages(page_size=3))
    assert [len(p["data"]) for p in pages] == [3, 3, 3, 1]
    with pytest.raises(InvalidRequestError) as info:
        client.conversations.iter_pages(page_size=101)
    assert info.value.param == "page_size"


def test_iterate_from_a_cursor_and_with_filters(client: Client) -> None:
    made = make_conversations(client, 12)
    after = [c["id"] for c in client.conversations.iterate(starting_after=made[4]["id"])]
    assert after == [c["id"] for c in made[5:]]
    for conv in made[::3]:
        client.conversations.update(conv["id"], {"is_muted": True})
    muted = [c["id"] for c in client.conversations.iterate({"muted": True})]
    assert muted == [c["id"] for c in made[::3]]
    unmuted = list(client.conversations.iterate({"muted": False, "archived": False}, limit=5))
    assert [c["id"] for c in unmuted] == [c["id"] for i, c in enumerate(made) if i % 3][:5]


def test_an_empty_listing(client: Client) -> None:
    assert list(client.conversations.iterate()) == []
    pages = list(client.risk_profiles.iter_pages())
    assert len(pages) == 1
    assert (pages[0]["data"], pages[0]["has_more"]) == ([], False)


def test_a_repeated_idempotency_key_replays_the_first_create(client: Client) -> None:
    first = client.conversations.create({"contact_id": "ct_1"}, idempotency_key="key-1")
    again = client.conversations.create({"contact_id": "ct_1"}, idempotency_key="key-1")
    assert again["id"] == first["id"]
    assert len(list(client.conversations.iterate())) == 1


@pytest.mark.parametrize(
    ("call", "error", "param"),
    [
        (lambda c: c.conversations.retrieve(f"conv_{'0' * 26}"), NotFoundError, None),
        (lambda c: c.risk_profiles.update(f"rp_{'0' * 26}", {"score": 1}), NotFoundError, None),
        # An id that is not of the form the sandbox mints (serve's, or the local backend's).
        (lambda c: c.conversations.retrieve("conv_nope"), InvalidRequestError, "id"),
        (
            lambda c: c.conversations.create({"contact_id": "a", "group_id": "b"}),
            InvalidRequestError,
            "group_id",
        ),
        (lambda c: c.conversations.create({}), InvalidRequestError, "contact_id"),
        (lambda c: c.conversations.list(limit=0), InvalidRequestError, "limit"),
        (
            lambda c: c.conversations.list(starting_after="rp_1"),
            InvalidRequestError,
            "starting_after",
        ),
        (
            lambda c: c.risk_profiles.create(
                {"customer_id": "c", "profile_type": "t", "score": True, "details": {}}
            ),
            InvalidRequestError,
            "score",
        ),
        (
            lambda c: c.risk_profiles.update("rp_1", {"customer_id": "c2"}),
            InvalidRequestError,
            "customer_id",
        ),
    ],
)
def test_the_same_errors_from_either_backend(
    client: Client, call: Callable[[Client], object], error: type[Exception], param: str | None
) -> None:
    with pytest.raises(error) as info:
        call(client)
    if param is not None:
        assert getattr(info.value, "param", None) == param


# -- faults only a remote service can produce ---------------------------------------------------


def ids_page(*ids: str, has_more: bool) -> httpx.Response:
    """A list answer with conversations of these ids."""
    return httpx.Response(200, json={"has_more": has_more, "data": [conversation(i) for i in ids]})


def test_a_page_that_repeats_a_cursor_stops_with_an_error(remote: MakeRemote) -> None:
    # A service that ignores starting_after hands back the first page again.
    first = ids_page("conv_3", "conv_2", "conv_1", has_more=True)
    r = remote(first, ids_page("conv_3", "conv_2", "conv_1", has_more=True))
    seen: list[str] = []
    with pytest.raises(ServiceError, match="makes no progress"):
        seen.extend(c["id"] for c in Client(r.backend, page_size=3).conversations.iterate())
    assert seen == ["conv_3", "conv_2", "conv_1"]
    assert len(r.requests) == 2
    assert r.requests[1].url.params["starting_after"] == "conv_1"


def test_a_page_that_circles_back_later_stops(remote: MakeRemote) -> None:
    r = remote(
        ids_page("conv_6", "conv_5", has_more=True),
        ids_page("conv_4", "conv_3", has_more=True),
        ids_page("conv_7", "conv_5", has_more=True),
    )
    with pytest.raises(ServiceError, match="conv_5"):
        list(Client(r.backend, page_size=2).conversations.iterate())
    assert len(r.requests) == 3


def test_a_page_ending_on_the_starting_cursor_stops(remote: MakeRemote) -> None:
    r = remote(ids_page("conv_9", "conv_5", has_more=True))
    with pytest.raises(ServiceError, match="makes no progress"):
        list(Client(r.backend).conversations.iterate(starting_after="conv_5"))


def test_has_more_with_an_empty_page_stops_with_an_error(remote: MakeRemote) -> None:
    r = remote(ids_page(has_more=True))
    with pytest.raises(ServiceError, match="empty page"):
        list(Client(r.backend).conversations.iterate())
    assert len(r.requests) == 1


def test_a_page_longer_than_asked_is_cut_to_the_limit(remote: MakeRemote) -> None:
    r = remote(ids_page("conv_4", "conv_3", "conv_2", "conv_1", has_more=False))
    pages = list(Client(r.backend).conversations.iter_pages(limit=2))
    assert [c["id"] for c in pages[0]["data"]] == ["conv_4", "conv_3"]
    assert pages[0]["has_more"] is True
    assert len(r.requests) == 1


def test_client_page_size_is_what_each_request_asks_for(remote: MakeRemote) -> None:
    r = remote(
        ids_page(*[f"conv_{i:03d}" for i in range(250, 150, -1)], has_more=True),
        ids_page(*[f"conv_{i:03d}" for i in range(150, 50, -1)], has_more=True),
        ids_page(*[f"conv_{i:03d}" for i in range(50, 0, -1)], has_more=True),
    )
    items = list(Client(r.backend).conversations.iterate(limit=250))
    assert len(items) == 250
    assert [req.url.params["limit"] for req in r.requests] == ["100", "100", "50"]
    assert [req.url.params.get("starting_after") for req in r.requests] == [
        None,
        "conv_151",
        "conv_051",
    ]


def test_json_pages_are_the_same_pages_as_json_text(remote: MakeRemote) -> None:
    odd = {"id": "conv_2", "is_pinned": "yes", "extra": [1, None], "note": "é \x1b"}
    answers = [
        httpx.Response(200, json={"has_more": True, "data": [conversation("conv_3"), odd]}),
        ids_page("conv_1", has_more=False),
    ]
    r = remote(*answers, *answers)
    client = Client(r.backend, page_size=2)
    pages = list(client.conversations.iter_pages())
    texts = list(client.conversations.iter_pages(view="json"))
    assert [page["has_more"] for page in texts] == [page["has_more"] for page in pages]
    assert [page.ids for page in texts] == [["conv_3", "conv_2"], ["conv_1"]]
    assert [page.json_texts for page in texts] == [
        [json_text(record) for record in page["data"]] for page in pages
    ]
    assert json.loads(texts[0].json_texts[1]) == odd


def test_json_pages_stop_on_a_repeated_cursor_and_are_cut_to_the_limit(
    remote: MakeRemote,
) -> None:
    same = ids_page("conv_3", "conv_2", has_more=True)
    r = remote(same, same, ids_page("conv_4", "conv_3", "conv_2", has_more=False))
    with pytest.raises(ServiceError, match="makes no progress"):
        list(Client(r.backend, page_size=2).conversations.iter_pages(view="json"))
    (page,) = Client(r.backend).conversations.iter_pages(limit=2, view="json")
    assert page.ids == ["conv_4", "conv_3"] and len(page.json_texts) == 2
    assert page["has_more"] is True


def test_id_pages_are_the_same_pages_as_ids_and_are_cut_to_the_limit(remote: MakeRemote) -> None:
    answers = [ids_page("conv_4", "conv_3", has_more=True), ids_page("conv_2", has_more=False)]
    r = remote(*answers, *answers, ids_page("conv_4", "conv_3", "conv_2", has_more=True))
    client = Client(r.backend, page_size=2)
    pages = list(client.conversations.iter_pages())
    ids = list(client.conversations.iter_pages(view="ids"))
    assert [(page.has_more, page.ids) for page in ids] == [
        (page["has_more"], [record["id"] for record in page["data"]]) for page in pages
    ]
    (page,) = Client(r.backend).conversations.iter_pages(limit=2, view="ids")
    assert (page.has_more, page.ids) == (True, ["conv_4", "conv_3"])


def test_an_id_page_of_a_broken_answer_is_the_same_service_error(remote: MakeRemote) -> None:
    r = remote(httpx.Response(200, json={"has_more": False, "data": [{"x": 1}]}))
    with pytest.raises(ServiceError, match=r"data\.0\.id: missing"):
        list(Client(r.backend).conversations.iter_pages(view="ids"))


@pytest.mark.parametrize("page_size", [0, 101, -5])
def test_an_impossible_page_size_is_refused(remote: MakeRemote, page_size: int) -> None:
    with pytest.raises(InvalidRequestError) as info:
        Client(remote().backend, page_size=page_size)
    assert info.value.param == "page_size"


def test_iteration_is_lazy_and_keeps_no_page_it_has_passed(remote: MakeRemote) -> None:
    counter = iter(range(10_000, 0, -1))

    def endless(request: httpx.Request) -> httpx.Response:
        ids = [f"conv_{next(counter):05d}" for _ in range(int(request.url.params["limit"]))]
        return ids_page(*ids, has_more=True)

    r = remote(*[endless] * 50)
    items = Client(r.backend, page_size=100).conversations.iterate()
    assert r.requests == []
    first = next(items)
    assert len(r.requests) == 1
    # Records are plain dicts (no weak references): count who holds the first one instead.
    assert sys.getrefcount(first) > 2  # this name, the call's argument, and its page
    for _ in range(100 * 40):
        next(items)
    gc.collect()
    assert sys.getrefcount(first) == 2  # only this name and the call's argument
    assert len(r.requests) == 41


def test_cursor_guard_catches_a_circle_beyond_what_it_remembers() -> None:
    guard = CursorGuard(capacity=3)
    circle = [f"conv_{i}" for i in range(5)]
    steps = 0
    while not guard.repeated(circle[steps % 5]):
        steps += 1
        assert steps < 100, "a circle of five cursors was never caught"
    wide = CursorGuard(capacity=3)
    assert not any(wide.repeated(f"conv_{i}") for i in range(10_000))
