"""Settings -> backend: the remote service of a base_url, else the local SQLite file (no typer:
`convrisk.Client.from_profile` builds its backend here too)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from convrisk.cli.errors import UsageProblem
from convrisk.cli.settings import Settings

if TYPE_CHECKING:
    from convrisk.api_client.protocol import Backend


def backend_for(settings: Settings) -> Backend:
    """The remote HTTPBackend for a base_url, else the local SQLite file."""
    if settings.base_url is not None:
        from convrisk.api_client.errors import ConvriskError
        from convrisk.api_client.remote.http import HTTPBackend

        try:
            remote = HTTPBackend(
                settings.base_url,
                settings.token,
                timeout=settings.timeout,
                max_retries=settings.max_retries,
                max_response_bytes=settings.max_response_mb * 1024 * 1024,
                allow_insecure_http=settings.allow_insecure_http,
            )
        except ConvriskError as exc:
            # Nothing was sent: the settings are what is wrong (exit 2), not an HTTP answer.
            raise UsageProblem(f"{exc}", param=getattr(exc, "param", None)) from exc
        return remote
    from convrisk.local_backend.backend import LocalBackend

    return LocalBackend(database_path(settings))


def database_path(settings: Settings) -> Path:
    """The local database file of the settings, checked (local_backend.backend.database_problem):
    the default one's folder is made, a chosen one's must exist."""
    from convrisk.local_backend.backend import database_problem

    default = settings.sources.get("db") == "default"
    problem = database_problem(settings.db, default=default)
    if problem is not None:
        raise UsageProblem(problem, param="--db")
    return settings.db
