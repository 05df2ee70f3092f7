"""The Client facade: one namespace per resource over any Backend, with lazy pagination."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from convrisk.api_client.defaults import DEFAULT_PAGE_SIZE
from convrisk.api_client.errors import ConvriskError, InvalidRequestError
from convrisk.api_client.page import Page, View
from convrisk.api_client.pagination import paginate
from convrisk.api_client.params import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    check_conversation_create,
    check_conversation_update,
    check_risk_profile_create,
    check_risk_profile_update,
)
from convrisk.api_client.protocol import Backend, ResourceBackend
from convrisk.api_client.record_types import (
    Conversation,
    ConversationCreateParams,
    ConversationFilters,
    ConversationUpdateParams,
    RiskProfile,
    RiskProfileCreateParams,
    RiskProfileFilters,
    RiskProfileUpdateParams,
)
from convrisk.api_client.records import Created, Deleted, Record

if TYPE_CHECKING:
    from convrisk.api_client.raw import RawAnswer

M = TypeVar("M", bound=Record)
C = TypeVar("C")
U = TypeVar("U")
F = TypeVar("F")


def check_page_size(page_size: object) -> int:
    """`page_size` must be an integer from 1 to 100 (the largest page the service gives)."""
    if (
        isinstance(page_size, bool)
        or not isinstance(page_size, int)
        or not 1 <= page_size <= MAX_LIMIT
    ):
        raise InvalidRequestError(
            f"page_size must be an integer from 1 to {MAX_LIMIT}.", param="page_size"
        )
    return page_size


class ResourceClient(Generic[M, C, U, F]):
    """The five verbs of one resource, plus iteration across pages and bulk creation.

    `check_create` and `check_update` are the interface's input rules for this resource's
    bodies (api_client.params), for checking a body without sending it (a dry run).
    """

    def __init__(
        self,
        backend: ResourceBackend[M, C, U, F],
        *,
        page_size: int = DEFAULT_PAGE_SIZE,
        check_create: Callable[[object], C],
        check_update: Callable[[object], U],
    ) -> None:
        self._backend = backend
        self._page_size = check_page_size(page_size)
        self.check_create = check_create
        self.check_update = check_update

    def list(
        self,
        filters: F | None = None,
        *,
        limit: int = DEFAULT_LIMIT,
        starting_after: str | None = None,
        ending_before: str | None = None,
        view: View = "records",
    ) -> Page[M]:
        """One page as the backend returns it, read for `view` (api_client.page)."""
        return self._backend.list(
            filters,
            limit=limit,
            starting_after=starting_after,
            ending_before=ending_before,
            view=view,
        )

    def iter_pages(
        self,
        filters: F | None = None,
        *,
        limit: int | None = None,
        starting_after: str | None = None,
        ending_before: str | None = None,
        page_size: int | None = None,
        view: View = "records",
    ) -> Iterator[Page[M]]:
        """Pages until `limit` items in all (None: every page), fetched lazily.

        Each request asks for `page_size` items (default: the client's), fewer for the last.
        The last page's `has_more` says whether more items exist than were yielded. A service
        that hands back a cursor already seen raises ServiceError instead of looping.

        With `ending_before` the walk goes backwards, towards the newest: each page holds the
        items just newer than the last one yielded, and its items are yielded oldest first
        (the reverse of the list order), so that the last item yielded is always the cursor
        that continues the walk.

        `view` is what the caller reads of each page: records, their JSON text (which the local
        backend builds in SQLite, several times faster for a long export than dumping each
        record) or their ids (the local backend reads the ids only, and builds no record).
        """
        per_page, limit = self._check_iteration(limit, page_size)
        if starting_after is not None and ending_before is not None:
            raise InvalidRequestError(
                "Give at most one of starting_after and ending_before.", param="ending_before"
            )

        def fetch(size: int, cursor: str | None) -> Page[M]:
            return self._backend.list(filters, limit=size, starting_after=cursor, view=view)

        def fetch_backwards(size: int, cursor: str | None) -> Page[M]:
            page = self._backend.list(filters, limit=size, ending_before=cursor, view=view)
            page.reverse()  # newest first -> oldest first, the walk's order
            return page

        if ending_before is not None:
            return paginate(fetch_backwards, limit, ending_before, per_page)
        return paginate(fetch, limit, starting_after, per_page)

    def _check_iteration(self, limit: int | None, page_size: int | None) -> tuple[int, int | None]:
        """The page size to ask for, and the checked total."""
        per_page = self._page_size if page_size is None else check_page_size(page_size)
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 0
        ):
            raise InvalidRequestError("limit must be an integer of 0 or more.", param="limit")
        return per_page, limit

    def iterate(
        self,
        filters: F | None = None,
        *,
        limit: int | None = None,
        starting_after: str | None = None,
        ending_before: str | None = None,
        page_size: int | None = None,
    ) -> Iterator[M]:
        """Every item across pages, up to `limit` (None: all), in flat memory."""
        pages = self.iter_pages(
            filters,
            limit=limit,
            starting_after=starting_after,
            ending_before=ending_before,
            page_size=page_size,
        )
        return (item for page in pages for item in page.records)

    def scanned_filters(self, filters: F | None) -> tuple[str, ...]:
        """The given filters a list applies by reading every record (filters the service's
        interface lacks, on a remote service: `conv list --contact-id`); empty for a query."""
        return self._backend.scanned_filters(filters)

    def watch_scan(self, report: Callable[[int, int], None] | None) -> None:
        """Have `report(scanned, matched)` called after each page such a list reads."""
        self._backend.watch_scan(report)

    def read_ahead(self, on: bool) -> None:
        """While on, a remote list asks for its next page while this one is handled (for a
        walk of every page: a shorter one would leave a request unused)."""
        self._backend.read_ahead(on)

    def create(self, params: C, *, idempotency_key: str | None = None) -> M:
        """Create an object."""
        return self._backend.create(params, idempotency_key=idempotency_key)

    def create_many(
        self, items: Sequence[tuple[C, str | None]], *, stop_on_error: bool = False
    ) -> builtins.list[Created[M] | ConvriskError]:
        """Create several objects, each `(params, idempotency_key)`; one result per item, in
        order: the object and whether it was replayed, or the error of that item (see
        ResourceBackend.create_many)."""
        return self._backend.create_many(items, stop_on_error=stop_on_error)

    def replays(self, items: Sequence[tuple[C, str | None]]) -> builtins.list[M | None] | None:
        """The answer each create would replay, read-only; None when the backend cannot tell
        (see ResourceBackend.replays)."""
        return self._backend.replays(items)

    def retrieve(self, id: str) -> M:
        """The object with this id."""
        return self._backend.retrieve(id)

    def update(self, id: str, params: U, *, expect: Mapping[str, Any] | None = None) -> M:
        """Change the supplied attributes; with `expect`, only if the record holds those values
        when it is written (else `errors.ChangedSince`, nothing written)."""
        if expect is None:
            return self._backend.update(id, params)
        return self._backend.change(id, params, expect=expect).after

    def delete(self, id: str, *, expect: Mapping[str, Any] | None = None) -> Deleted:
        """Remove the object for good; with `expect`, only if the record holds those values
        when it is removed (else `errors.ChangedSince`, nothing removed)."""
        if expect is None:
            return self._backend.delete(id)
        return self._backend.remove(id, expect=expect).answer


ConversationsClient = ResourceClient[
    Conversation, ConversationCreateParams, ConversationUpdateParams, ConversationFilters
]
RiskProfilesClient = ResourceClient[
    RiskProfile, RiskProfileCreateParams, RiskProfileUpdateParams, RiskProfileFilters
]


class Client:
    """One typed client over any Backend: `client.conversations`, `client.risk_profiles`."""

    def __init__(self, backend: Backend, *, page_size: int = DEFAULT_PAGE_SIZE) -> None:
        self.backend = backend
        self.page_size = check_page_size(page_size)
        self.conversations: ConversationsClient = ResourceClient(
            backend.conversations,
            page_size=page_size,
            check_create=check_conversation_create,
            check_update=check_conversation_update,
        )
        self.risk_profiles: RiskProfilesClient = ResourceClient(
            backend.risk_profiles,
            page_size=page_size,
            check_create=check_risk_profile_create,
            check_update=check_risk_profile_update,
        )

    def send(self, method: str, target: str, body: bytes | None = None) -> RawAnswer:
        """One request to the interface as it is, the answer whatever its status (see
        api_client.raw); `target` as made by `raw.api_target`."""
        return self.backend.send(method, target, body)

    def raw_pages(self, target: str) -> Iterator[Page[Any]]:
        """Each page of the list at `target`, following has_more (raw.pages); pages of
        `page_size` items unless the target's query sets `limit`."""
        from convrisk.api_client.raw import (  # only `convrisk api --paginate` needs it
            pages,
            with_default,
        )

        return pages(self.backend.send, with_default(target, "limit", str(self.page_size)))

    def close(self) -> None:
        """Release the backend's connections and files."""
        self.backend.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
