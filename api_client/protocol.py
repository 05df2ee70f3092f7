"""The Backend protocol: the service's ten operations, as two resources of one shape.

Every operation returns records as plain dicts (api_client.records), the same types on both
backends.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from convrisk.api_client.errors import ConvriskError
from convrisk.api_client.page import Page, View
from convrisk.api_client.params import DEFAULT_LIMIT
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
from convrisk.api_client.records import (
    Change,
    Created,
    Deleted,
    Record,
    Removal,
)

if TYPE_CHECKING:
    from convrisk.api_client.raw import RawAnswer

M = TypeVar("M", bound=Record)
C_contra = TypeVar("C_contra", contravariant=True)
U_contra = TypeVar("U_contra", contravariant=True)
F_contra = TypeVar("F_contra", contravariant=True)


class ResourceBackend(Protocol[M, C_contra, U_contra, F_contra]):
    """list / create / retrieve / update / delete of one resource.

    Implementations check their input with `api_client.params` and raise only
    `api_client.errors` exceptions.
    """

    def list(
        self,
        filters: F_contra | None = None,
        *,
        limit: int = DEFAULT_LIMIT,
        starting_after: str | None = None,
        ending_before: str | None = None,
        view: View = "records",
    ) -> Page[M]:
        """One page, newest first; cursors are ids (the id need not still exist).

        `view` is what the caller reads of it (api_client.page): the page is read for that view
        (JSON text not parsed, ids without their records); the other views are made on demand.
        """
        ...

    def scanned_filters(self, filters: F_contra | None) -> tuple[str, ...]:
        """The given filters a list applies by reading every record (filters the service's
        interface lacks, on a remote service); empty when the list is a plain query."""
        ...

    def watch_scan(self, report: Callable[[int, int], None] | None) -> None:
        """Have `report(scanned, matched)` called after each page such a list reads."""
        ...

    def read_ahead(self, on: bool) -> None:
        """While on, a list's next page may be asked for before it is needed (a remote one is:
        its wait overlaps the printing of this one); off, nothing is asked for unasked."""
        ...

    def create(self, params: C_contra, *, idempotency_key: str | None = None) -> M:
        """Create an object; a repeated idempotency key replays the first answer."""
        ...

    def create_many(
        self,
        items: Sequence[tuple[C_contra, str | None]],
        *,
        stop_on_error: bool = False,
    ) -> builtins.list[Created[M] | ConvriskError]:
        """Create several objects, each `(params, idempotency_key)`: one result per item, in order.

        A result is the object with whether the service replayed it (an earlier request with
        that key), or the error that refused or failed that item alone (the others go on). With
        `stop_on_error` nothing after the first error is attempted and the list ends there. An
        error that fails the whole batch before any item is done is raised.
        Remotely, an error every request would meet (`errors.stops_every_request`) stops the
        batch: the items not sent by then are `errors.NotSent`.
        """
        ...

    def replays(
        self, items: Sequence[tuple[C_contra, str | None]]
    ) -> builtins.list[M | None] | None:
        """Read-only, for a dry run: the answer each create would replay (None: it would be new),
        or None when the service cannot tell without sending it (a remote one)."""
        ...

    def retrieve(self, id: str) -> M:
        """The object with this id, or NotFoundError."""
        ...

    def update(self, id: str, params: U_contra) -> M:
        """Change the supplied attributes; an empty params returns the object unchanged."""
        ...

    def delete(self, id: str) -> Deleted:
        """Remove the object for good; NotFoundError if there is none."""
        ...

    def change(
        self, id: str, params: U_contra, *, expect: Mapping[str, Any] | None = None
    ) -> Change[M]:
        """Update, with the record as it was just before. With `expect`, the record must hold
        those values when it is written (`errors.ChangedSince` if not, nothing written): locally
        the read, the comparison and the write are one transaction; remotely the record is read
        right before the write (a window of one round trip)."""
        ...

    def remove(self, id: str, *, expect: Mapping[str, Any] | None = None) -> Removal[M]:
        """Delete, with the record as it was just before; `expect` as for `change`."""
        ...


ConversationsBackend = ResourceBackend[
    Conversation, ConversationCreateParams, ConversationUpdateParams, ConversationFilters
]
RiskProfilesBackend = ResourceBackend[
    RiskProfile, RiskProfileCreateParams, RiskProfileUpdateParams, RiskProfileFilters
]


class Backend(Protocol):
    """Where the operations run: the local SQLite store, or a remote service over HTTP."""

    @property
    def conversations(self) -> ConversationsBackend:
        """The conversations resource."""
        ...

    @property
    def risk_profiles(self) -> RiskProfilesBackend:
        """The risk profiles resource."""
        ...

    def send(self, method: str, target: str, body: bytes | None) -> RawAnswer:
        """One request to the interface as it is (`convrisk api`): `target` is a path under
        /v1/ with its query string, percent-encoded; `body` JSON text. The answer whatever its
        status; only a failure to get one (connection, timeout) is raised."""
        ...

    def close(self) -> None:
        """Release connections and files."""
        ...
