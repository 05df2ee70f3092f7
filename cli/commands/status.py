"""`convrisk status`: which backend and profile are in use, where the token comes from, and
whether one round trip to the service works."""

import time
from typing import Any

import typer

from convrisk.cli.context import app_context
from convrisk.cli.errors import describe, exit_code
from convrisk.cli.options import common as opt
from convrisk.cli.output.kinds import STATUS


def status(ctx: typer.Context, output: opt.Output = None) -> int:
    """Show the backend in use, the profile, where the token comes from (never the token), and
    try one round trip (a list of one conversation): ok with its time, or the error.

    Exits with the code of that error (4: the token is refused, 5: the service cannot be
    reached, ...), 0 when the round trip works.

    \b
    Example:
      convrisk status
      convrisk --profile staging status -o json
    """
    from convrisk.api_client.errors import ConvriskError

    run = app_context(ctx)
    settings = run.settings()
    printer = run.printer(output)
    printer.format_for(STATUS)  # a format it cannot print is refused before the round trip
    token = settings.sources.get("token") if settings.token else None
    row: dict[str, Any] = {
        "profile": settings.profile,
        "profile_source": settings.profile_source,
        "backend": "remote" if settings.is_remote else "local",
        "base_url": settings.base_url,
        "db": None if settings.is_remote else str(settings.db),
        "token_source": token,
        "protected": settings.protected,
        "read_only": settings.read_only,
    }
    started = time.perf_counter()
    try:
        run.client().conversations.list(limit=1)
    except ConvriskError as exc:
        code = exit_code(exc)
        info = describe(exc, remote=settings.is_remote, settings=run.settings)
        row.update(ok=False, exit_code=code, error=info.fields())
    else:
        row.update(ok=True, ms=round((time.perf_counter() - started) * 1000, 1), exit_code=0)
    printer.one(STATUS, row)
    return int(row["exit_code"])
