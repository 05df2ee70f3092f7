"""The remote Backend: the service's ten operations over HTTP (DESIGN 1.2 and 1.3), each a
request on one Session (api_client.remote.session), each answer checked for what the client relies
on."""

from __future__ import annotations

import builtins
import functools
import json
import random as _random
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, TypeVar
from urllib.parse import quote

from convrisk.api_client.defaults import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT
from convrisk.api_client.errors import (
    ChangedSince,
    ConvriskError,
    InvalidRequestError,
    NotFoundError,
    ServiceError,
    stops_every_request,
)
from convrisk.api_client.page import (
    Page,
    View,
    check_json_page,
    load_page,
    quick_id_page,
    quick_json_page,
)
from convrisk.api_client.pagination import Ahead, scan_page
from convrisk.api_client.params import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    ResourceName,
    check_conversation_create,
    check_conversation_update,
    check_filters,
    check_paging,
    check_remote_cursor,
    check_remote_id,
    check_risk_profile_create,
    check_risk_profile_update,
)
from convrisk.api_client.protocol import ConversationsBackend, RiskProfilesBackend
from convrisk.api_client.raw import RawAnswer
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
    REPLAYED_HEADER,
    Change,
    Created,
    Deleted,
    Record,
    Removal,
    ShapeError,
    check_page,
    check_record,
    differs,
    read_json,
)
from convrisk.api_client.remote.concurrently import each_at_once
from convrisk.api_client.remote.deadline import when_sent
from convrisk.api_client.remote.session import (
    CREATE_MANY_CONCURRENCY,
    DEFAULT_MAX_RESPONSE_BYTES,
    Answer,
    Session,
    Transport,
)
from convrisk.api_client.resources import CONVERSATIONS, RESOURCES, RISK_PROFILES

# Methods `convrisk api` retries: idempotent ones, and POST (it carries an Idempotency-Key).
_RETRIED_AS_SENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE", "POST"})

M = TypeVar("M", bound=Record)
C = TypeVar("C", bound=Mapping[str, Any])
U = TypeVar("U", bound=Mapping[str, Any])
F = TypeVar("F", bound=Mapping[str, Any])


def _json_body(response: Answer, what: str, loads: Callable[[bytes], Any] = read_json) -> Any:
    """The decoded body of an answer (NaN, Infinity and 1e400 read as floats: `read_json`);
    ServiceError when it is empty or not JSON."""
    status = response.status_code
    if not response.content.strip():
        raise ServiceError(
            f"The service answered HTTP {status} with an empty body where {what} was expected.",
            status=status,
        )
    try:
        return loads(response.content)
    except (ValueError, RecursionError):
        kind = response.headers.get("Content-Type", "").split(";")[0].strip() or "unknown type"
        raise ServiceError(
            f"The service answered HTTP {status} with a body that is not JSON ({kind}) where "
            f"{what} was expected.",
            status=status,
        ) from None


def _validate(check: Callable[[object], Any], data: object, status: int, what: str) -> Any:
    """`data` as sent, once `check` finds in it what the client relies on; else ServiceError."""
    try:
        return check(data)
    except ShapeError as exc:
        raise ServiceError(
            f"The service answered HTTP {status} with {what} that does not fit: {exc}.",
            status=status,
        ) from None


def _guessed_cursor(body: bytes) -> str | None:
    """The id a compact page (`{"id":"...` first in each record) ends on, if it says more
    exist, found without reading the body: a guess, checked when the page is taken."""
    if b'"has_more":true' not in body:
        return None
    at = body.rfind(b'{"id":"')
    end = body.find(b'"', at + 7)
    id = body[at + 7 : end]
    if at < 0 or end < 0 or not id or b"\\" in id or not id.isascii():
        return None
    return id.decode()


def _next_cursor(data: object) -> str | None:
    """The cursor after a page's body as sent, if it says more items exist: its last item's id
    (a body that does not fit has none; its check says why)."""
    if not isinstance(data, dict) or data.get("has_more") is not True:
        return None
    items = data.get("data")
    last = items[-1] if isinstance(items, list) and items else None
    id = last.get("id") if isinstance(last, dict) else None
    return id if isinstance(id, str) and id else None


def deleted_answer(status: int, content: bytes, id: str, *, gone: bool = False) -> Deleted:
    """The result of a delete of `id` from the service's 2xx answer, or ServiceError.

    The interface does not show the answer (DESIGN 1.3): no body at all (204) is taken as done,
    but for a 202, which says only that the delete was accepted for later; a body must be the
    delete shape, `{"id": id, "deleted": true}` (extra fields are left out of the result), and
    one that says otherwise or is something else is a broken answer. `gone`: a retry found the
    object gone after an attempt that may have deleted it (its answer was lost).
    """
    if gone or (not content.strip() and status != 202):
        return Deleted(id=id, deleted=True)
    what = f"HTTP {status} to the delete of {id!r}"
    try:
        data = read_json(content) if content.strip() else None
    except (ValueError, RecursionError):
        data = None
    if not isinstance(data, dict):
        shown = "no body" if not content.strip() else "a body that is not a JSON object"
        raise ServiceError(
            f'The service answered {what} with {shown}, not {{"id": ..., "deleted": true}}: '
            "it cannot be told that the object was deleted.",
            status=status,
        )
    if data.get("deleted") is not True:
        said = _shown(data["deleted"]) if "deleted" in data else "absent"
        raise ServiceError(
            f"The service answered {what}, but its answer does not say it was deleted "
            f"(deleted: {said}).",
            status=status,
        )
    if "id" in data and data["id"] != id:
        raise ServiceError(
            f"The service answered {what} with the id of another object ({_shown(data['id'])}).",
            status=status,
        )
    return Deleted(id=id, deleted=True)


def _shown(value: object) -> str:
    """A value from an answer as a short JSON text for a message."""
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:59] + "…"


def _query_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _made_before(record: Mapping[str, Any], date: str | None, elapsed: float) -> bool:
    """Whether a replayed object was created before this call's first attempt, on the
    service's own clock: its `Date` now, less the seconds since that attempt was sent, against
    the object's `created_at` (seconds or milliseconds).

    Both are whole seconds, so an object created within about two seconds before the call
    counts as this call's create (never the reverse); so does one from a service that sends
    no Date or no created_at.
    """
    from email.utils import parsedate_to_datetime

    created = record.get("created_at")
    if date is None or isinstance(created, bool) or not isinstance(created, int | float):
        return False
    try:
        now = parsedate_to_datetime(date).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return False
    seconds = created / 1000 if created > 1e11 else created  # milliseconds (DESIGN 1.3)
    # This call's own create has created_at > Date - elapsed - 1 (each is floored to a second).
    return seconds <= now - elapsed - 1


class HTTPResource(Generic[M, C, U, F]):
    """list / create / retrieve / update / delete of one resource over HTTP; records as sent."""

    def __init__(
        self,
        transport: Session,
        *,
        name: ResourceName,
        path: str,
        noun: str,
        check_create: Callable[[object], C],
        check_update: Callable[[object], U],
    ) -> None:
        self._t = transport
        self._name: ResourceName = name
        self._path = path
        self._noun = noun
        self._check_create = check_create
        self._check_update = check_update
        # The filters the interface lacks, by name: the record's field each compares.
        self._scanned = {f.name: f.column for f in RESOURCES[name].filters if not f.interface}
        self._scan_report: Callable[[int, int], None] | None = None
        self._reading_ahead = False
        # The next page, asked for before it is needed: its query, and the call making it.
        self._ahead: tuple[dict[str, str], Ahead[Answer]] | None = None

    def _item_path(self, id: str) -> str:
        # `.` and `..` are ids no URL path can carry (they are its own segments); an empty or
        # blank id is refused as locally, by check_remote_id.
        if id in (".", ".."):
            raise NotFoundError(f"No such {self._noun}: {id!r}.", param="id")
        check_remote_id(self._name, id)
        return f"{self._path}/{quote(id, safe='')}"

    def _one(self, response: Answer) -> M:
        what = f"a {self._noun}"
        data = _json_body(response, what)
        result: M = _validate(check_record, data, response.status_code, what)
        return result

    def list(
        self,
        filters: F | None = None,
        *,
        limit: int = DEFAULT_LIMIT,
        starting_after: str | None = None,
        ending_before: str | None = None,
        view: View = "records",
    ) -> Page[M]:
        """One page; the service judges the cursors (its ids may have any form). A filter the
        interface lacks (`contact_id`) is applied here, on a scan of the pages (`scan_page`).

        The page's answer is read for `view`: JSON text as sent where it is each record's
        `json_text` (`quick_json_page`), ids without a record's text where they can be
        (`quick_id_page`); every record is checked as for records. A view read later comes
        from the same answer."""
        query, cursors, kept = self._list_query(filters, limit, starting_after, ending_before)
        if not kept:
            return self._page({**query, **cursors, "limit": str(limit)}, view)
        columns = {self._scanned[name]: value for name, value in kept.items()}
        walk = "ending_before" if ending_before is not None else "starting_after"

        def fetch(cursor: str | None) -> Page[M]:
            at = {} if cursor is None else {walk: cursor}
            return self._page({**query, **at, "limit": str(MAX_LIMIT)}, "records")

        def keep(record: M) -> bool:
            return all(record.get(column) == value for column, value in columns.items())

        return scan_page(
            fetch,
            keep,
            limit,
            backwards=ending_before is not None,
            start=cursors.get(walk),
            report=self._scan_report,
        )

    def _list_query(
        self,
        filters: F | None,
        limit: int,
        starting_after: str | None,
        ending_before: str | None,
    ) -> tuple[dict[str, str], dict[str, str], dict[str, Any]]:
        """A list's checked arguments: its query's filters, its cursors, and the filters the
        interface lacks (applied on a scan)."""
        checked = check_filters(self._name, filters)
        check_paging(self._name, limit, None, None)
        if starting_after is not None and ending_before is not None:
            raise InvalidRequestError(
                "Give at most one of starting_after and ending_before.", param="ending_before"
            )
        cursors: dict[str, str] = {}
        for key, cursor in (("starting_after", starting_after), ("ending_before", ending_before)):
            checked_cursor = check_remote_cursor(self._name, key, cursor)
            if checked_cursor is not None:
                cursors[key] = checked_cursor
        query = {k: _query_value(v) for k, v in checked.items() if k not in self._scanned}
        kept = {k: v for k, v in checked.items() if k in self._scanned}
        return query, cursors, kept

    def scanned_filters(self, filters: F | None) -> tuple[str, ...]:
        """The given filters the interface lacks: a list applies them on a scan."""
        given = (filters or {}).items()
        return tuple(name for name, value in given if name in self._scanned and value is not None)

    def watch_scan(self, report: Callable[[int, int], None] | None) -> None:
        """Have `report(scanned, matched)` called after each page a scan reads."""
        self._scan_report = report

    def read_ahead(self, on: bool) -> None:
        """While on, each page of a forward walk asks for the next one (after its last id) as
        soon as it arrives, so that the service makes it while this one is checked and printed.
        """
        self._reading_ahead = on
        if not on:
            # Not waited for: a stopped list (Ctrl-C) ends now; the request ends by its timeout.
            self._ahead = None

    def _page(self, query: dict[str, str], view: View) -> Page[M]:
        """One page as the service sends it, checked, read for `view`."""
        response = self._page_response(query)
        quick: Page[M] | None = None
        more = functools.partial(self._again, response)
        if view == "json":
            quick = quick_json_page(response.content, more)
        elif view == "ids":
            quick = quick_id_page(response.content, more)
        if quick is not None:
            self._read_ahead_unless_asked(query, quick.cursor if quick.has_more else None)
            return quick
        data, texts = self._page_body(query, response)
        what = f"a page of {self._noun}s"
        status = response.status_code
        if view == "records":
            checked: dict[str, Any] = _validate(check_page, data, status, what)
            return Page(checked["has_more"], records=checked["data"], more=more, sent=checked)
        page: Page[M] = _validate(
            lambda data: check_json_page(data, texts, more), data, status, what
        )
        return page

    def _again(self, response: Answer, view: View) -> Page[M]:
        """A view of a page read earlier, from its answer (no request made)."""
        data, texts = _json_body(response, f"a page of {self._noun}s", load_page)
        what = f"a page of {self._noun}s"
        if view == "records":
            checked: dict[str, Any] = _validate(check_page, data, response.status_code, what)
            return Page(checked["has_more"], records=checked["data"], sent=checked)
        status = response.status_code
        page: Page[M] = _validate(lambda data: check_json_page(data, texts), data, status, what)
        return page

    def _page_body(
        self, query: dict[str, str], response: Answer
    ) -> tuple[Any, builtins.list[str | None] | None]:
        """The decoded body of one page's answer (not yet checked), with its items' texts as
        sent (`load_page`); reading ahead, the next page is asked for now if it was not yet."""
        data, texts = _json_body(response, f"a page of {self._noun}s", load_page)
        self._read_ahead_unless_asked(query, _next_cursor(data))
        return data, texts

    def _page_response(self, query: dict[str, str]) -> Answer:
        """The answer to one page's request: the one read ahead for this query, or one asked
        for now.

        Reading ahead, the next page is asked for as soon as its cursor is known: guessed from
        the body's last bytes before it is read, else from the body read (a wrong guess costs
        only a request asked for again: the page taken is always the one asked for)."""
        ahead, self._ahead = self._ahead, None
        if ahead is not None and ahead[0] == query:
            response = ahead[1].take()
        else:
            if ahead is not None:
                ahead[1].drop()  # not the page it guessed: its connection back, then this one
            response = self._t.request("GET", self._path, params=query)
        if self._reading_ahead and "ending_before" not in query:
            self._read_ahead_after(query, _guessed_cursor(response.content))
        return response

    def _read_ahead_unless_asked(self, query: dict[str, str], cursor: str | None) -> None:
        """Once a page is read, ask for the one after it if no guess asked for it already."""
        if self._reading_ahead and self._ahead is None and "ending_before" not in query:
            self._read_ahead_after(query, cursor)

    def _read_ahead_after(self, query: dict[str, str], cursor: str | None) -> None:
        """Ask now, on the read-ahead thread, for the page after `cursor` (None: none)."""
        if cursor is not None:
            after = {**query, "starting_after": cursor}

            def fetch(sent: Callable[[], None]) -> Answer:
                with when_sent(sent):
                    return self._t.request("GET", self._path, params=after)

            self._ahead = (after, Ahead(fetch))

    def create(self, params: C, *, idempotency_key: str | None = None) -> M:
        """Create an object; the same Idempotency-Key is sent on each retry."""
        return self._create(params, idempotency_key, None).record

    def _create(self, params: C, key: str | None, stop: threading.Event | None) -> Created[M]:
        """Create an object, its retries ending once `stop` is set (create_many's shared signal);
        replayed when the service says so (`Idempotent-Replayed: true`) of an object that this
        call did not create (see `_made_before`)."""
        checked = self._check_create(params)
        body = {k: v for k, v in checked.items() if v is not None}
        started = time.monotonic()
        response = self._t.request("POST", self._path, body=body, idempotency_key=key, stop=stop)
        record: M = self._one(response)
        replayed = response.headers.get(REPLAYED_HEADER, "").strip().lower() == "true"
        if replayed and response.earlier_attempt_may_have_landed:
            # The replayed answer may be of this call's own first attempt, whose answer was lost.
            elapsed = time.monotonic() - started
            replayed = _made_before(record, response.headers.get("Date"), elapsed)
        return Created(record, replayed)

    def create_many(
        self,
        items: Sequence[tuple[C, str | None]],
        *,
        stop_on_error: bool = False,
    ) -> builtins.list[Created[M] | ConvriskError]:
        """Create several objects, one request each, results in the order of `items`.

        Up to CREATE_MANY_CONCURRENCY requests are in flight at once (so the objects may be
        created in a slightly different order); with `stop_on_error` one at a time, and nothing
        after the first error is sent; with a capturing transport (api_client.remote.capture) one
        at a
        time too, so that requests are shown in order. Each request has its retries and its own
        key. An error that every request would meet (a refused token, an unreachable service)
        stops the batch: the other requests give up their retries and the items not yet sent
        are `NotSent`.
        """
        if stop_on_error or len(items) < 2 or self._t.one_at_a_time:
            results: builtins.list[Created[M] | ConvriskError] = []
            for params, key in items:
                result = self._create_or_error(params, key, None)
                results.append(result)
                if stop_on_error and isinstance(result, ConvriskError):
                    break
            return results
        # Its Idempotency-Key makes a re-run replay a create abandoned in flight if it landed.
        return each_at_once(
            items,
            lambda item, stop: self._create_or_error(*item, stop),
            at_once=CREATE_MANY_CONCURRENCY,
        )

    def _create_or_error(
        self, params: C, key: str | None, stop: threading.Event | None
    ) -> Created[M] | ConvriskError:
        try:
            return self._create(params, key, stop)
        except ConvriskError as exc:
            return exc

    def replays(self, items: Sequence[tuple[C, str | None]]) -> builtins.list[M | None] | None:
        """None: the interface has no read-only way to ask whether a key has an answer."""
        return None

    def retrieve(self, id: str) -> M:
        """The object with this id."""
        return self._one(self._t.request("GET", self._item_path(id)))

    def update(self, id: str, params: U) -> M:
        """Change the supplied attributes."""
        checked = self._check_update(params)
        path = self._item_path(id)
        return self._one(self._t.request("PUT", path, body=checked))

    def delete(self, id: str) -> Deleted:
        """Remove the object; the answer says so (`deleted_answer`), or ServiceError."""
        response = self._t.request("DELETE", self._item_path(id), gone_is_done=True)
        return deleted_answer(response.status_code, response.content, id, gone=response.gone)

    def change(self, id: str, params: U, *, expect: Mapping[str, Any] | None = None) -> Change[M]:
        """Update, the record read right before (see ResourceBackend.change)."""
        checked = self._check_update(params)
        before = self._read_before(id, expect)
        return Change(before, self._one(self._t.request("PUT", self._item_path(id), body=checked)))

    def remove(self, id: str, *, expect: Mapping[str, Any] | None = None) -> Removal[M]:
        """Delete, the record read right before (see ResourceBackend.remove)."""
        before = self._read_before(id, expect)
        return Removal(before, self.delete(id))

    def _read_before(self, id: str, expect: Mapping[str, Any] | None) -> M | None:
        """The record right before a write to it, compared with `expect` (ChangedSince). With
        nothing expected, a read that fails is None and the write goes on to say why, unless
        every request would fail alike (the token refused, the service unreachable)."""
        try:
            current = self.retrieve(id)
        except ConvriskError as exc:
            if expect is not None or stops_every_request(exc):
                exc.before_write = True  # the write is not sent: nothing to journal
                raise
            return None
        if expect is not None and (fields := differs(current, expect)):
            raise ChangedSince(id, fields, dict(current))
        return current


class HTTPBackend:
    """The Backend of a remote service at `base_url`, over one Session (its pool of connections).

    `timeout` bounds each attempt from connect to last byte; `max_response_bytes` bounds each
    answer once decoded. With a `transport` of your own, the deadline is checked only between
    chunks of the body (the whole-attempt deadline lives in the default transport). A token
    goes over plain http:// only to a loopback host unless `allow_insecure_http`: otherwise the
    backend is refused (InvalidRequestError) before any connection.
    """

    def __init__(
        self,
        base_url: str,
        token: str | None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        transport: Transport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        random: Callable[[], float] = _random.random,
        allow_insecure_http: bool = False,
    ) -> None:
        self._transport = Session(
            base_url,
            token,
            timeout=timeout,
            max_retries=max_retries,
            max_response_bytes=max_response_bytes,
            transport=transport,
            sleep=sleep,
            random=random,
            allow_insecure_http=allow_insecure_http,
        )
        self._conversations: HTTPResource[
            Conversation, ConversationCreateParams, ConversationUpdateParams, ConversationFilters
        ] = HTTPResource(
            self._transport,
            name="conversations",
            path=CONVERSATIONS.path,
            noun=CONVERSATIONS.noun,
            check_create=check_conversation_create,
            check_update=check_conversation_update,
        )
        self._risk_profiles: HTTPResource[
            RiskProfile, RiskProfileCreateParams, RiskProfileUpdateParams, RiskProfileFilters
        ] = HTTPResource(
            self._transport,
            name="risk_profiles",
            path=RISK_PROFILES.path,
            noun=RISK_PROFILES.noun,
            check_create=check_risk_profile_create,
            check_update=check_risk_profile_update,
        )

    def send(self, method: str, target: str, body: bytes | None) -> RawAnswer:
        """One request as it is (`target`: a path under /v1/ with its query, percent-encoded),
        with the token and retries; the answer whatever its status."""
        transport = self._transport
        # A method outside the interface (PATCH, ...) may not be idempotent and carries no
        # Idempotency-Key: sent once, never retried, so it cannot take effect twice.
        retries = None if method in _RETRIED_AS_SENT else 0
        # Made here, not by the session, so that the answer can say which key was sent.
        key = str(uuid.uuid4()) if method == "POST" else None
        # A DELETE whose retry finds the object gone after a lost answer is done, as for `delete`.
        answer = transport.request(
            method,
            target,
            content=body,
            any_status=True,
            retries=retries,
            gone_is_done=method == "DELETE",
            idempotency_key=key,
        )
        # The token never reaches output (DESIGN 3), even from a service that echoes it back.
        return RawAnswer(
            answer.status_code,
            transport.scrub_bytes(answer.content),
            transport.scrub(answer.reason_phrase),
            transport.scrub(answer.headers.get("Location", "")),
            gone=answer.gone,
            idempotency_key=key,
            content_type=transport.scrub(answer.headers.get("Content-Type", "")),
        )

    @property
    def conversations(self) -> ConversationsBackend:
        """The conversations resource."""
        return self._conversations

    @property
    def risk_profiles(self) -> RiskProfilesBackend:
        """The risk profiles resource."""
        return self._risk_profiles

    def close(self) -> None:
        """Close the pooled connections."""
        self._transport.close()

    def __enter__(self) -> HTTPBackend:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
