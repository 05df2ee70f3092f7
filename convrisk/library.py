"""The public library, `convrisk.Client`: the local database, a remote service or a profile's
settings, and each resource's five verbs and a lazy walk with fields and filters as keywords.

A facade over the typed client (api_client.client): the backends check every keyword by the
interface's own rules (api_client.params) before anything is sent or written. The keyword types
are the generated TypedDicts of api_client.record_types, so no field is named here.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from convrisk.api_client.client import Client as TypedClient
from convrisk.api_client.client import ResourceClient
from convrisk.api_client.defaults import (
    DEFAULT_LIMIT,
    DEFAULT_MAX_RETRIES,
    DEFAULT_PAGE_SIZE,
    DEFAULT_TIMEOUT,
)
from convrisk.api_client.errors import InvalidRequestError, PermissionDeniedError
from convrisk.api_client.params import check_filters
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
from convrisk.api_client.resources import RESOURCES, ResourceName

if TYPE_CHECKING:
    from typing import Unpack

    from convrisk.api_client.page import Page
    from convrisk.api_client.protocol import Backend
    from convrisk.api_client.records import Deleted, Record

M = TypeVar("M", bound="Record")
C = TypeVar("C")
U = TypeVar("U")
F = TypeVar("F")


class Resource(Generic[M, C, U, F]):
    """What the resources share: the calls under the typed signatures of each."""

    def __init__(
        self, name: ResourceName, typed: ResourceClient[M, C, U, F], client: Client
    ) -> None:
        self._name: ResourceName = name
        self._typed = typed
        self._client = client

    def _list(
        self,
        filters: Mapping[str, Any],
        limit: int | None,
        starting_after: str | None,
        ending_before: str | None,
    ) -> Page[M]:
        checked: Any = check_filters(self._name, filters)
        return self._typed.list(
            checked,
            limit=DEFAULT_LIMIT if limit is None else limit,
            starting_after=starting_after,
            ending_before=ending_before,
        )

    def _iterate(self, filters: Mapping[str, Any]) -> Iterator[M]:
        # Checked now, not at the first next(): a wrong filter is told where it was written.
        checked: Any = check_filters(self._name, filters)
        return self._typed.iterate(checked)

    def _create(self, fields: Mapping[str, Any], idempotency_key: str | None) -> M:
        self._client._check_write(f"create a {RESOURCES[self._name].noun}")
        body: Any = dict(fields)
        return self._typed.create(body, idempotency_key=idempotency_key)

    def _update(self, id: str, fields: Mapping[str, Any]) -> M:
        self._client._check_write(f"update {id!r}")
        body: Any = dict(fields)
        return self._typed.update(id, body)

    def retrieve(self, id: str) -> M:
        """The record with this id (NotFoundError when there is none)."""
        return self._typed.retrieve(id)

    def delete(self, id: str) -> Deleted:
        """Remove the record for good: `{"id": id, "deleted": True}`."""
        self._client._check_write(f"delete {id!r}")
        return self._typed.delete(id)


class Conversations(
    Resource[Conversation, ConversationCreateParams, ConversationUpdateParams, ConversationFilters]
):
    """`client.conversations`: list, iterate, create, retrieve, update, delete."""

    def list(
        self,
        *,
        limit: int | None = None,
        starting_after: str | None = None,
        ending_before: str | None = None,
        **filters: Unpack[ConversationFilters],
    ) -> Page[Conversation]:
        """One page, newest first: `limit` records (1 to 100; the service's 10 by default)
        after the cursor `starting_after` (or before `ending_before`), filters combined."""
        return self._list(filters, limit, starting_after, ending_before)

    def iterate(self, **filters: Unpack[ConversationFilters]) -> Iterator[Conversation]:
        """Every matching record, newest first, read a page at a time as the loop goes on."""
        return self._iterate(filters)

    def create(
        self,
        *,
        idempotency_key: str | None = None,
        **fields: Unpack[ConversationCreateParams],
    ) -> Conversation:
        """Create one; with `idempotency_key`, a retry of the same create answers the same."""
        return self._create(fields, idempotency_key)

    def update(self, id: str, /, **fields: Unpack[ConversationUpdateParams]) -> Conversation:
        """Change the fields given, nothing else; the record as it is now."""
        return self._update(id, fields)


class RiskProfiles(
    Resource[RiskProfile, RiskProfileCreateParams, RiskProfileUpdateParams, RiskProfileFilters]
):
    """`client.risk_profiles`: list, iterate, create, retrieve, update, delete."""

    def list(
        self,
        *,
        limit: int | None = None,
        starting_after: str | None = None,
        ending_before: str | None = None,
        **filters: Unpack[RiskProfileFilters],
    ) -> Page[RiskProfile]:
        """One page, newest first: `limit` records (1 to 100; the service's 10 by default)
        after the cursor `starting_after` (or before `ending_before`), filters combined."""
        return self._list(filters, limit, starting_after, ending_before)

    def iterate(self, **filters: Unpack[RiskProfileFilters]) -> Iterator[RiskProfile]:
        """Every matching record, newest first, read a page at a time as the loop goes on."""
        return self._iterate(filters)

    def create(
        self,
        *,
        idempotency_key: str | None = None,
        **fields: Unpack[RiskProfileCreateParams],
    ) -> RiskProfile:
        """Create one; with `idempotency_key`, a retry of the same create answers the same."""
        return self._create(fields, idempotency_key)

    def update(self, id: str, /, **fields: Unpack[RiskProfileUpdateParams]) -> RiskProfile:
        """Change the fields given, nothing else; the record as it is now."""
        return self._update(id, fields)


class Client:
    """convrisk from Python: `Client.local()`, `Client.remote(url, token)` or
    `Client.from_profile()`, then `client.conversations` and `client.risk_profiles`.

    Close it (or use it in a `with` block) to release its connections or database file.
    """

    def __init__(self, backend: Backend, *, page_size: int = DEFAULT_PAGE_SIZE) -> None:
        """A client over any Backend; `page_size` is what `iterate` asks for per request."""
        typed = TypedClient(backend, page_size=page_size)
        self.backend = backend
        self.conversations = Conversations("conversations", typed.conversations, self)
        self.risk_profiles = RiskProfiles("risk_profiles", typed.risk_profiles, self)
        # Why every write is refused (a read-only profile), else None.
        self._refusal: str | None = None

    @classmethod
    def local(cls, db: str | os.PathLike[str] | None = None) -> Client:
        """The local backend on the SQLite file `db`, whose folder must exist (the file is made
        on the first call); None: the database `convrisk` uses when nothing chooses another."""
        from convrisk.local_backend.backend import LocalBackend, database_problem

        if db is None:
            from convrisk.cli.settings import default_db_path

            path, default = default_db_path(os.environ), True
        else:
            if not isinstance(db, str | os.PathLike) or not os.fspath(db):
                raise InvalidRequestError("db must be the path of a database file.", param="db")
            path, default = Path(db).expanduser(), False
        problem = database_problem(path, default=default)
        if problem is not None:
            raise InvalidRequestError(problem, param="db")
        return cls(LocalBackend(path))

    @classmethod
    def remote(
        cls,
        base_url: str,
        token: str | None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        allow_insecure_http: bool = False,
    ) -> Client:
        """The service at `base_url` with the bearer `token`: `timeout` seconds an attempt,
        `max_retries` more attempts where a retry is safe. Nothing is sent until a call; a
        base_url or token the command line refuses is refused here alike (InvalidRequestError).
        A token goes over plain http:// to a loopback host only, unless `allow_insecure_http`."""
        from convrisk.api_client.remote.http import HTTPBackend

        _check_range("timeout", timeout)
        _check_range("max_retries", max_retries)
        backend = HTTPBackend(
            base_url,
            token,
            timeout=timeout,
            max_retries=max_retries,
            allow_insecure_http=allow_insecure_http,
        )
        return cls(backend)

    @classmethod
    def from_profile(cls, name: str | None = None) -> Client:
        """The backend the command line would use, from the same settings: the profile `name`
        (None: CONVRISK_PROFILE, else the config file's default profile), CONVRISK_* variables
        over it. Settings that the command line refuses raise InvalidRequestError with its
        message; a read-only profile's writes raise PermissionDeniedError, nothing sent."""
        import warnings

        from convrisk.cli.connect import backend_for
        from convrisk.cli.errors import CliError
        from convrisk.cli.settings import Flags, config_path, mark_source, read_config, resolve

        env = os.environ
        try:
            config = read_config(config_path(env))
            warning = config.exposed_token_warning()
            if warning is not None:
                warnings.warn(warning, stacklevel=2)
            settings = resolve(Flags(profile=name, profile_flag="name"), env, config)
            client = cls(backend_for(settings), page_size=settings.page_size)
        except CliError as exc:
            raise InvalidRequestError(exc.message, param=exc.param) from exc
        if settings.read_only:
            source = mark_source(settings.sources, "read_only")
            client._refusal = f"The profile {settings.profile!r} is read-only ({source})"
        return client

    def _check_write(self, what: str) -> None:
        """Refuse a write of a read-only profile before anything is sent."""
        if self._refusal is not None:
            raise PermissionDeniedError(f"{self._refusal}: refusing to {what}; nothing was sent.")

    def close(self) -> None:
        """Release the backend's connections and files; the client cannot be used afterwards."""
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


def _check_range(key: str, value: object) -> None:
    """timeout or max_retries within the range its setting has on the command line, else
    InvalidRequestError naming it (bounds from api_client.defaults: no command line loaded)."""
    from convrisk.api_client import defaults

    timeout = key == "timeout"
    low, high = (
        (defaults.MIN_TIMEOUT, defaults.MAX_TIMEOUT) if timeout else (0, defaults.MAX_RETRIES)
    )
    number = value if isinstance(value, int | float) and not isinstance(value, bool) else None
    if number is not None and not timeout and not isinstance(number, int):
        number = None
    if number is None or not low <= number <= high:
        what = "a number of seconds" if timeout else "a whole number"
        raise InvalidRequestError(
            f"{key} must be {what} from {low:g} to {high:g}, not {value!r}.", param=key
        )
