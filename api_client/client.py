"""The Client facade: one namespace per resource over any Backend, with lazy pagination."""

from __future__ import annotations

from collections.abc import Iterator
from types import TracebackType
from typing import Generic, TypeVar

from .errors import ServiceError
from .models import Conversation, Deleted, Page, Resource, RiskProfile
from .params import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    ConversationCreateParams,
    ConversationFilters,
    ConversationUpdateParams,
    RiskProfileCreateParams,
    RiskProfileFilters,
    RiskProfileUpdateParams,
)
from .protocol import Backend, ResourceBackend

M = TypeVar("M", bound=Resource)
C = TypeVar("C")
U = TypeVar("U")
F = TypeVar("F")

DEFAULT_PAGE_SIZE = MAX_LIMIT


class ResourceClient(Generic[M, C, U, F]):
    """The five verbs of one resource, plus iteration across pages."""

    def __init__(self, backend: ResourceBackend[M, C, U, F], *, page_size: int) -> None:
        self._backend = backend
        self._page_size = max(1, min(page_size, MAX_LIMIT))

    def list(
        self,
        filters: F | None = None,
        *,
        limit: int = DEFAULT_LIMIT,
        starting_after: str | None = None,
        ending_before: str | None = None,
    ) -> Page[M]:
        """One page as the backend returns it."""
        return self._backend.list(
            filters, limit=limit, starting_after=starting_after, ending_before=ending_before
        )

    def iter_pages(
        self,
        filters: F | None = None,
        *,
        limit: int | None = None,
        starting_after: str | None = None,
    ) -> Iterator[Page[M]]:
        """Pages until `limit` items in all (None: every page), fetched lazily.

        The last page's `has_more` says whether more items exist than were yielded. A service
        that hands back a cursor already seen raises ServiceError instead of looping.
        """
        remaining = limit
        cursor = starting_after
        seen: set[str] = set()
        while remaining is None or remaining > 0:
            size = self._page_size if remaining is None else min(self._page_size, remaining)
            page = self._backend.list(filters, limit=size, starting_after=cursor)
            if len(page.data) > size:
                page.data = page.data[:size]
                page.has_more = True
            yield page
            if remaining is not None:
                remaining -= len(page.data)
            if not page.has_more:
                return
            if not page.data:
                raise ServiceError("The service said more items exist but sent an empty page.")
            cursor = page.data[-1].id
            if cursor in seen or cursor == starting_after:
                raise ServiceError(
                    f"The service sent a page that makes no progress (cursor {cursor} again)."
                )
            seen.add(cursor)

    def iterate(
        self,
        filters: F | None = None,
        *,
        limit: int | None = None,
        starting_after: str | None = None,
    ) -> Iterator[M]:
        """Every item across pages, up to `limit` (None: all), in flat memory."""
        for page in self.iter_pages(filters, limit=limit, starting_after=starting_after):
            yield from page.data

    def create(self, params: C, *, idempotency_key: str | None = None) -> M:
        """Create an object."""
        return self._backend.create(params, idempotency_key=idempotency_key)

    def retrieve(self, id: str) -> M:
        """The object with this id."""
        return self._backend.retrieve(id)

    def update(self, id: str, params: U) -> M:
        """Change the supplied attributes."""
        return self._backend.update(id, params)

    def delete(self, id: str) -> Deleted:
        """Remove the object for good."""
        return self._backend.delete(id)


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
        self.conversations: ConversationsClient = ResourceClient(
            backend.conversations, page_size=page_size
        )
        self.risk_profiles: RiskProfilesClient = ResourceClient(
            backend.risk_profiles, page_size=page_size
        )

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
