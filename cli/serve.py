"""`convrisk serve`: the service over HTTP on a local SQLite file, until SIGINT or SIGTERM."""

import dataclasses
from pathlib import Path
from typing import Annotated

import typer

from .context import app_context, database_path
from .options import whole_number


def serve(
    ctx: typer.Context,
    host: Annotated[
        str, typer.Option("--host", metavar="HOST", help="Address to bind (loopback by default).")
    ] = "127.0.0.1",
    port: Annotated[
        str, typer.Option("--port", metavar="PORT", help="0 to 65535; 0 picks a free port.")
    ] = "8000",
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            metavar="PATH",
            help="The SQLite file to serve (default: as for other commands).",
        ),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            metavar="T",
            help="The bearer token clients must send (env CONVRISK_SERVE_TOKEN; "
            "none: one is generated and printed once).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Serve the conversations and risk-profiles service over HTTP on a local database.

    Stops cleanly on Ctrl-C (SIGINT) or SIGTERM. The access log goes to stderr.

    \b
    Example:
      convrisk serve --port 8000
      CONVRISK_SERVE_TOKEN=s3cret convrisk serve --port 0 --db /tmp/demo.db
      convrisk --base-url http://127.0.0.1:8000 conv list   # with CONVRISK_TOKEN=s3cret
    """
    import secrets

    from local_backend.server import run_server

    port_number = whole_number(port, "--port", 0, 65535)
    run = app_context(ctx)
    env = {k: v for k, v in run.env.items() if k != "CONVRISK_BASE_URL"}
    flags = dataclasses.replace(run.flags, base_url=None, db=db or run.flags.db)
    db_path = database_path(run.resolve(flags, env))
    printer = run.plain_printer()
    secret = token or run.env.get("CONVRISK_SERVE_TOKEN") or ""
    generated = not secret
    if generated:
        secret = secrets.token_urlsafe(32)

    def ready(url: str) -> None:
        """Listening: only now is a generated token worth printing (a failed start shows none)."""
        if generated:
            printer.notice(f"convrisk serve: token: {secret}")
        printer.notice(f"convrisk serve: listening on {url}")

    run_server(
        host=host,
        port=port_number,
        db_path=Path(db_path),
        token=secret,
        on_ready=ready,
        log=printer.notice,
    )
