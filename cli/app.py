"""The convrisk command line: the root app, its global options, and main(), the one place where
an exception becomes an exit code."""

import functools
import os
import sys
from collections.abc import Callable, Iterator, MutableMapping, Sequence
from importlib import import_module
from typing import Annotated, Any

import typer
import typer.main
from click import Command, Context
from typer.core import TyperGroup
from typer.models import CommandInfo, TyperInfo

from convrisk.cli.commands.base import OneSuggestion, start_as_curl
from convrisk.cli.context import AppContext, app_context
from convrisk.cli.errors import (
    INTERRUPTED,
    OK,
    USAGE,
    Failures,
    NotConfirmed,
    OutputFailed,
    StdoutClosed,
    describe,
    exit_code,
)
from convrisk.cli.options import complete
from convrisk.cli.settings import Flags


class LazyCommands(MutableMapping[str, Command]):
    """The root's commands, each built (module imported, signature read) on first access.

    `convrisk conv list` then imports and builds the `conv` group only; `--help`, completion
    and anything that walks `.items()` still see every command, in the order of `builders`.
    """

    def __init__(self, builders: dict[str, Callable[[], Command]]) -> None:
        self._builders = builders
        self._built: dict[str, Command] = {}

    def __getitem__(self, name: str) -> Command:
        if name not in self._built:
            self._built[name] = self._builders[name]()  # KeyError for an unknown name
        return self._built[name]

    def __setitem__(self, name: str, command: Command) -> None:
        self._builders.setdefault(name, lambda: command)
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        del self._builders[name]
        self._built.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self._builders

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._builders))

    def __len__(self) -> int:
        return len(self._builders)


class LazyGroup(OneSuggestion, TyperGroup):
    """The root group: its sub-apps and `serve` are imported and built when first looked up."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        builders: dict[str, Callable[[], Command]] = {
            "serve": functools.partial(_single_command, "serve", "serve"),
            "conv": functools.partial(_sub_group, "conv", "conv"),
            "risk": functools.partial(_sub_group, "risk", "risk"),
            "config": functools.partial(_sub_group, "config", "config"),
            "status": functools.partial(_single_command, "status", "status"),
            "api": functools.partial(_single_command, "api", "api"),
            "history": functools.partial(_single_command, "history", "history"),
            "undo": functools.partial(_single_command, "undo", "undo"),
            "sandbox": functools.partial(_sub_group, "sandbox", "sandbox"),
            "check": functools.partial(_single_command, "check", "check"),
            "ui": functools.partial(_single_command, "ui", "ui"),
        }
        lazy = LazyCommands(builders)
        for name, registered in self.commands.items():  # none today; kept if any are added
            lazy[name] = registered
        self.commands = lazy

    def list_commands(self, ctx: Context) -> list[str]:
        """The names in order, without building the commands."""
        return list(self.commands)


def _sub_group(name: str, module: str) -> Command:
    """The group of a sub-app, built as `app.add_typer(sub_app, name=name)` would build it."""
    from convrisk.cli.commands.base import Group, with_global_options

    sub_app = with_global_options(import_module(f"{__package__}.commands.{module}").app)
    return typer.main.get_group_from_info(
        TyperInfo(sub_app, name=name, cls=Group),
        pretty_exceptions_short=app.pretty_exceptions_short,
        suggest_commands=app.suggest_commands,
        rich_markup_mode=app.rich_markup_mode,
    )


def _single_command(name: str, module: str) -> Command:
    """The command `name` (the function of that name in `module`), built as
    `app.command(name)(function)` would build it; its module is imported only now."""
    from convrisk.cli.commands.base import Command as ConvriskCommand

    callback = getattr(import_module(f"{__package__}.commands.{module}"), name)
    return typer.main.get_command_from_info(
        CommandInfo(name=name, callback=callback, cls=ConvriskCommand),
        pretty_exceptions_short=app.pretty_exceptions_short,
        rich_markup_mode=app.rich_markup_mode,
    )


app = typer.Typer(
    name="convrisk",
    cls=LazyGroup,
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


def _version(ctx: typer.Context, value: bool) -> None:
    if value:
        # The version pyproject.toml reads too; importlib.metadata would cost ~15 ms of start-up.
        from convrisk.api_client import __version__

        app_context(ctx).plain_printer().line(f"convrisk {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    profile: Annotated[
        str | None,
        typer.Option(
            "--profile",
            metavar="P",
            help="Config profile to use (env CONVRISK_PROFILE).",
            autocompletion=complete.profiles,
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
    as_curl: Annotated[
        bool,
        typer.Option(
            "--as-curl",
            help="Print each request as a curl command line (token as $CONVRISK_TOKEN); "
            "send nothing.",
        ),
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
    if as_curl:
        start_as_curl(run, ctx.invoked_subcommand)
    ctx.call_on_close(run.close)


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
    from click.exceptions import NoArgsIsHelpError

    # pydantic scans every installed distribution's entry points for plugins when it builds the
    # first model (~5 ms, more in a crowded environment); convrisk uses none. A value the user
    # set is kept: PYDANTIC_DISABLE_PLUGINS= (empty) turns plugins back on.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    argv = list(sys.argv[1:] if args is None else args)
    run = AppContext()
    run.argv = argv
    restore_ctrl_c = _interrupt_once()
    try:
        result = command().main(argv, prog_name="convrisk", standalone_mode=False, obj=run)
        if result == INTERRUPTED:
            # typer turns Ctrl-C into Exit(130) and returns the code: report it as one.
            raise KeyboardInterrupt
        _requests_printed(run)
        return result if isinstance(result, int) else OK
    except StdoutClosed:
        _silence_stdout()
        return OK
    except NoArgsIsHelpError as exc:
        run.plain_printer().block(exc.format_message())
        return USAGE
    except (Exception, KeyboardInterrupt) as exc:
        if _captured(exc):
            # --as-curl: a request was printed, not sent, and the command cannot go on without
            # its answer. Nothing failed.
            _requests_printed(run)
            return OK
        if run.env.get("CONVRISK_RAISE_ERRORS") == "1":
            if isinstance(exc, Failures):
                raise exc.first from exc
            raise
        printer = run.error_printer()
        if run.flags.debug:
            printer.traceback(exc.first if isinstance(exc, Failures) else exc)
        if isinstance(exc, KeyboardInterrupt | typer.Abort):
            printer.notice("Interrupted.")
        elif isinstance(exc, NotConfirmed):
            printer.notice(exc.message)  # the user's own answer: not an error to report
        elif not isinstance(exc, Failures):
            hint = not run.flags.debug
            printer.error(
                describe(exc, remote=printer.remote, settings=run.settings, debug_hint=hint)
            )
        if isinstance(exc, OutputFailed):
            _silence_stdout()  # what is left in its buffer cannot be written at exit either
        elif run.requests_printed:
            _requests_printed(run)
        return exit_code(exc)
    finally:
        run.stop_debug_log()
        restore_ctrl_c()


def _captured(exc: BaseException) -> bool:
    """Whether `exc` is --as-curl's stop (a request printed, not sent); the module is loaded
    only when a capture was made."""
    capture = sys.modules.get("convrisk.api_client.remote.capture")
    return capture is not None and isinstance(exc, capture.Captured)


def _requests_printed(run: AppContext) -> None:
    """--as-curl: say on stderr how many requests were printed, that none was sent, and what
    the lines need from the environment."""
    if not run.as_curl:
        return
    printer = run.plain_printer()
    count = run.requests_printed
    if not count:
        printer.notice("--as-curl: this command made no request; nothing was sent.")
        return
    lines = "a curl command line" if count == 1 else "curl command lines"
    request = "1 request" if count == 1 else f"{count:,} requests"
    printer.notice(f"--as-curl: {request} printed as {lines}; nothing was sent.")
    settings = run.settings()
    them = "it" if count == 1 else "them"
    if not settings.is_remote:
        printer.hint(
            f"Before running {them}, set CONVRISK_BASE_URL (the service's URL, without a final /) "
            "and CONVRISK_TOKEN."
        )
    elif settings.token:
        printer.hint(f"Before running {them}, set CONVRISK_TOKEN (named in the line, not written).")
    marks = [mark for mark in ("protected", "read_only") if getattr(settings, mark, False)]
    if run.writes_printed and marks:
        # Printing is not writing, so the profile's guards let it pass; a line run by hand does
        # write, and no guard of convrisk's stands in its way.
        printer.warning(
            f"The profile {settings.profile!r} is {' and '.join(marks).replace('_', '-')}: "
            "the printed writes, run by hand, change its service with no question asked."
        )


def _interrupt_once() -> Callable[[], object]:
    """Make Ctrl-C interrupt the run once: later ones are ignored while it winds down (the
    report of what was done, "Interrupted.", the exit), so they cannot cut that short with a
    traceback. Returns what puts Python's handler back. Only in the main thread, and only over
    Python's own handler (an ignored SIGINT stays ignored)."""
    import signal
    import threading

    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        return lambda: None

    def once(signum: int, frame: object) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, once)
    return lambda: signal.signal(signal.SIGINT, signal.default_int_handler)


def _silence_stdout() -> None:
    # The reader is gone: point stdout at /dev/null so that the flush at exit cannot fail.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass
