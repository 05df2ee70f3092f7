"""The convrisk command line: the root app, its global options, and main(), the one place where
an exception becomes an exit code."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Sequence
from typing import Annotated

import typer
from typer.core import TyperGroup

from . import config_cmd, conv, risk, serve
from .context import AppContext, app_context
from .errors import Failures, NotConfirmed, StdoutClosed, UsageProblem
from .output import ErrorInfo, describe_error
from .settings import Flags

# Exit codes (DESIGN section 3).
OK, FAILED, USAGE, NOT_FOUND, AUTHENTICATION, UNREACHABLE, INTERRUPTED = 0, 1, 2, 3, 4, 5, 130

app = typer.Typer(
    name="convrisk",
    help="""Conversations and risk profiles from the command line.

    Works at once on a local SQLite database; a profile (or --base-url) with a base_url talks to
    a remote service instead.

    \b
    Example:
      convrisk conv create --contact-id c_1
      convrisk conv list --muted -o json
      convrisk risk create --customer-id cus_1 --profile-type moderate --score 72
    """,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(conv.app, name="conv")
app.add_typer(risk.app, name="risk")
app.add_typer(config_cmd.app, name="config")
app.command("serve")(serve.serve)


def _version(ctx: typer.Context, value: bool) -> None:
    if value:
        # The version pyproject.toml reads too; importlib.metadata would cost ~15 ms of start-up.
        from api_client import __version__

        app_context(ctx).plain_printer().line(f"convrisk {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    profile: Annotated[
        str | None,
        typer.Option(
            "--profile", metavar="P", help="Config profile to use (env CONVRISK_PROFILE)."
        ),
    ] = None,
    base_url: Annotated[
        str | None,
        typer.Option(
            "--base-url",
            metavar="URL",
            help="Use the remote service at URL (env CONVRISK_BASE_URL, key base_url).",
        ),
    ] = None,
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            metavar="PATH",
            help="Use this local SQLite file (env CONVRISK_DB, key db; "
            "default $XDG_DATA_HOME/convrisk/convrisk.db).",
        ),
    ] = None,
    debug: Annotated[
        bool, typer.Option("--debug", help="Debug log and tracebacks on stderr.")
    ] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Global options, read before any command."""
    run = app_context(ctx)
    run.flags = Flags(profile=profile, base_url=base_url, db=db, debug=debug)
    if debug:
        run.start_debug_log()
    ctx.call_on_close(run.close)


def exit_code(exc: BaseException) -> int:
    """The exit code of an exception (DESIGN section 3)."""
    from typer._click.exceptions import ClickException

    if isinstance(exc, Failures):
        return exit_code(exc.first)
    if isinstance(exc, UsageProblem | ClickException):
        return USAGE
    if isinstance(exc, NotConfirmed):
        return FAILED
    if isinstance(exc, KeyboardInterrupt | typer.Abort):
        return INTERRUPTED
    errors = sys.modules.get("api_client.errors")
    if errors is not None:
        if isinstance(exc, errors.NotFoundError):
            return NOT_FOUND
        if isinstance(exc, errors.AuthenticationError):
            return AUTHENTICATION
        if isinstance(exc, errors.APIConnectionError):
            return UNREACHABLE
    return FAILED


def _click_error(exc: BaseException) -> ErrorInfo:
    from typer._click.exceptions import BadParameter, ClickException, MissingParameter, UsageError

    assert isinstance(exc, ClickException)
    param: str | None = None
    if isinstance(exc, BadParameter | MissingParameter) and exc.param is not None:
        opts = [o for o in exc.param.opts if o.startswith("--")] or exc.param.opts
        param = opts[0] if opts else exc.param.name
    message = exc.format_message()
    if isinstance(exc, UsageError) and exc.ctx is not None:
        message = f"{message.rstrip('.')} (see '{exc.ctx.command_path} --help')."
    return ErrorInfo("usage_error", message, param=param)


@functools.cache
def command() -> TyperGroup:
    """The click command tree of the app, built once per process (tests run main() often)."""
    group = typer.main.get_command(app)
    assert isinstance(group, TyperGroup)
    return group


def main(args: Sequence[str] | None = None) -> int:
    """Run convrisk with these arguments (default: sys.argv) and return the exit code.

    The one error boundary: every exception ends here as a message on stderr and an exit code.
    `--debug` adds the traceback; `CONVRISK_RAISE_ERRORS=1` lets the exception through.
    """
    from typer._click.exceptions import ClickException, NoArgsIsHelpError

    # pydantic scans every installed distribution's entry points for plugins when it builds the
    # first model (~5 ms, more in a crowded environment); convrisk uses none. A value the user
    # set is kept: PYDANTIC_DISABLE_PLUGINS= (empty) turns plugins back on.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    argv = list(sys.argv[1:] if args is None else args)
    run = AppContext()
    try:
        result = command().main(argv, prog_name="convrisk", standalone_mode=False, obj=run)
        return result if isinstance(result, int) else OK
    except StdoutClosed:
        _silence_stdout()
        return OK
    except NoArgsIsHelpError as exc:
        run.plain_printer().notice(exc.format_message())
        return USAGE
    except (Exception, KeyboardInterrupt) as exc:
        if run.env.get("CONVRISK_RAISE_ERRORS") == "1":
            if isinstance(exc, Failures):
                raise exc.first from exc
            raise
        printer = run.error_printer()
        if run.flags.debug:
            import traceback

            shown = exc.first if isinstance(exc, Failures) else exc
            printer.notice("".join(traceback.format_exception(shown)).rstrip())
        if isinstance(exc, KeyboardInterrupt | typer.Abort):
            printer.notice("Interrupted.")
        elif isinstance(exc, ClickException):
            printer.error(_click_error(exc))
        elif not isinstance(exc, Failures):
            info = describe_error(exc, remote=printer.remote)
            if info.type == "internal_error" and not run.flags.debug:
                info.message += " (run with --debug for the traceback)"
            printer.error(info)
        return exit_code(exc)
    finally:
        run.stop_debug_log()


def _silence_stdout() -> None:
    # The reader is gone: point stdout at /dev/null so that the flush at exit cannot fail.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass
