"""A filter the service's interface lacks (`contact_id`), applied by the remote client on a scan
of the pages: the same pages a service with the filter would give, and nothing sent for it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import httpx
import pytest

from convrisk.api_client import Client
from convrisk.api_client.errors import ServiceError
from convrisk.api_client.page import Page
from convrisk.api_client.pagination import scan_page

from .conftest import Remote, conversation

MakeRemote = Callable[..., Remote]


def _ids(n: int) -> list[str]:
    """`n` ids, newest first, as the service lists them."""
    return [f"conv_{i:026d}" for i in range(n, 0, -1)]


class Listing:
    """A service's list route over fixed records (newest first): limit and both cursors, no
    contact_id (a request carrying it fails the test)."""

    def __init__(self, records: list[dict[str, Any]]) -> None:
        self.records = records

    def __call__(self, request: httpx.Request) -> httpx.Response:
        query = request.url.params
        assert "contact_id" not in query, "the interface has no contact_id filter"
        limit = int(query.get("limit", "10"))
        ids = [r["id"] for r in self.records]
        if "starting_after" in query:
            after = [r for r in self.records if r["id"] < query["starting_after"]]
            page, more = after[:limit], len(after) > limit
        elif "ending_before" in query:
            newer = [r for r in self.records if r["id"] > query["ending_before"]]
            page, more = newer[-limit:] if newer else [], len(newer) > limit
        else:
            page, more = self.records[:limit], len(ids) > limit
        return httpx.Response(200, json={"has_more": more, "data": page})


def _service(contacts: list[str]) -> Listing:
    """Records newest first, the i-th oldest with contacts[i]."""
    ids = _ids(len(contacts))
    by_age = list(reversed(contacts))
    return Listing([conversation(id, contact_id=c) for id, c in zip(ids, by_age, strict=True)])


def _steps(listing: Listing, n: int) -> list[Listing]:
    return [listing] * n


def test_a_remote_list_by_contact_scans_pages_and_keeps_that_contacts(remote: MakeRemote) -> None:
    contacts = ["c_1" if i % 50 == 0 else "c_2" for i in range(250)]
    listing = _service(contacts)
    r = remote(*_steps(listing, 10))
    client = Client(r.backend, page_size=100)
    wanted = [rec["id"] for rec in listing.records if rec["contact_id"] == "c_1"]
    assert client.conversations.scanned_filters({"contact_id": "c_1"}) == ("contact_id",)
    assert client.conversations.scanned_filters({"group_id": "g", "contact_id": None}) == ()
    got = [c["id"] for c in client.conversations.iterate({"contact_id": "c_1"})]
    assert got == wanted and len(got) == 5
    # Pages of the largest size, without the filter, until the end of the list.
    assert [req.url.params["limit"] for req in r.requests] == ["100", "100", "100"]


def test_a_scan_stops_after_limit_matches_and_its_cursor_goes_on(remote: MakeRemote) -> None:
    contacts = ["c_1" if i % 10 == 0 else "c_2" for i in range(300)]
    listing = _service(contacts)
    r = remote(*_steps(listing, 10))
    wanted = [rec["id"] for rec in listing.records if rec["contact_id"] == "c_1"]
    first = r.backend.conversations.list({"contact_id": "c_1"}, limit=3)
    assert [c["id"] for c in first["data"]] == wanted[:3] and first["has_more"]
    assert len(r.requests) == 1  # the three were on the first page read
    rest = r.backend.conversations.list(
        {"contact_id": "c_1"}, limit=100, starting_after=first["data"][-1]["id"]
    )
    assert [c["id"] for c in rest["data"]] == wanted[3:] and not rest["has_more"]
    back = r.backend.conversations.list({"contact_id": "c_1"}, limit=2, ending_before=wanted[5])
    assert [c["id"] for c in back["data"]] == wanted[3:5]  # just newer, newest first


def test_a_scan_reports_its_progress_after_each_page(remote: MakeRemote) -> None:
    listing = _service(["c_1"] + ["c_2"] * 230)  # the match is the oldest
    r = remote(*_steps(listing, 5))
    seen: list[tuple[int, int]] = []
    r.backend.conversations.watch_scan(lambda scanned, matched: seen.append((scanned, matched)))
    page = r.backend.conversations.list({"contact_id": "c_1"}, limit=10)
    assert len(page["data"]) == 1 and not page["has_more"]
    assert seen == [(100, 0), (200, 0), (231, 1)]


def test_a_scan_of_a_service_paging_in_a_circle_stops_with_an_error() -> None:
    same: Page[Any] = Page(True, records=[cast(Any, conversation("conv_2", contact_id="x"))])
    with pytest.raises(ServiceError, match="no progress"):
        scan_page(lambda cursor: same, lambda r: False, 5, backwards=False, start=None)


def test_a_scan_refuses_an_empty_page_that_claims_more() -> None:
    empty: Page[Any] = Page(True, records=[])
    with pytest.raises(ServiceError, match="empty page"):
        scan_page(lambda cursor: empty, lambda r: True, 5, backwards=False, start=None)
