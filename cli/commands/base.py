"""The command classes of every sub-command: global options accepted after the command too, and
help written in convrisk's words (`ID...`, `KEY`, a "Global options" section).

`convrisk conv list --debug` is `convrisk --debug conv list`: each command and sub-group also
takes copies of the root's global options (`--profile`, `--base-url`, `--db`, `--debug`,
`--version`), except where it has an option of that name itself (`config ... --profile`,
`serve --db`). A copy sets the same flag on the run's AppContext; the last one given wins.
`--version` anywhere prints the version and exits, as gh's does.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import typer
from click.exceptions import UsageError
from typer.core import TyperCommand, TyperGroup

from convrisk.cli.context import AppContext
from convrisk.cli.errors import UsageProblem

GLOBAL_OPTIONS = ("profile", "base_url", "db", "debug", "as_curl")
# Commands that send no request to the service: --as-curl has nothing to print there.
_NO_REQUESTS = ("config", "serve", "history")
_copies: dict[int, list[Any]] = {}


def _set_flag(ctx: Any, param: Any, value: Any) -> Any:
    """The callback of a copy: the value given after the command, set as the root's would be."""
    if value is None or value is False:
        return value
    run = ctx.ensure_object(AppContext)
    if param.name == "as_curl":
        start_as_curl(run, _top_command(ctx))
        return value
    run.flags = dataclasses.replace(run.flags, **{param.name: value})
    if param.name == "debug":
        run.start_debug_log()
    return value


def _top_command(ctx: Any) -> str | None:
    """The name of the root's command that `ctx` is under (`conv` for `conv list`)."""
    while ctx.parent is not None and ctx.parent.parent is not None:
        ctx = ctx.parent
    return ctx.info_name if ctx.parent is not None else None


def start_as_curl(run: AppContext, command: str | None) -> None:
    """--as-curl for this run: requests printed, none sent; refused where none would be."""
    if command in _NO_REQUESTS:
        raise UsageProblem(
            f"--as-curl prints the requests a command sends to the service; `{command}` sends "
            "none.",
            param="--as-curl",
        )
    run.as_curl = True


def global_options(ctx: Any) -> list[Any]:
    """Copies of the root command's global options, for a command under it (made once)."""
    root = ctx.find_root().command
    if root is ctx.command:
        return []
    made = _copies.get(id(root))
    if made is None:
        made = []
        for param in root.params:
            if param.name in GLOBAL_OPTIONS or param.name == "version":
                twin = copy.copy(param)
                twin.expose_value = False  # the command's function does not take it
                if param.name != "version":  # --version keeps its eager callback: print, exit
                    twin.callback = _set_flag
                    twin.is_eager = False
                made.append(twin)
        _copies[id(root)] = made
    return made


class GlobalOptions:
    """A command (mixin) that takes the global options too and lists them apart in its help."""

    def get_params(self, ctx: Any) -> list[Any]:
        """Its own parameters, then the global options it does not define itself."""
        params: list[Any] = super().get_params(ctx)  # type: ignore[misc]
        own = {opt for param in params for opt in [*param.opts, *param.secondary_opts]}
        return params + [p for p in global_options(ctx) if not own & set(p.opts)]

    def format_options(self, ctx: Any, formatter: Any) -> None:
        """Arguments, options, and the global options, each in its own section."""
        extra = {id(p) for p in global_options(ctx)}
        sections: dict[str, list[tuple[str, str]]] = {
            "Arguments": [],
            "Options": [],
            "Global options (before or after the command)": [],
        }
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                if not getattr(param, "hidden", False):
                    sections["Arguments"].append(_argument_help(param))
                continue
            record = param.get_help_record(ctx)
            if record is not None:
                title = "Options" if id(param) not in extra else list(sections)[2]
                sections[title].append(record)
        for title, rows in sections.items():
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)
        format_commands = getattr(self, "format_commands", None)
        if format_commands is not None:
            format_commands(ctx, formatter)


def argument_metavar(param: Any) -> str:
    """`ID...`, `KEY`, `[VALUE]`: an argument as the usage line shows it."""
    name = str(param.metavar or param.name.upper())
    if param.nargs != 1:
        name += "..."
    return name if param.required else f"[{name}]"


def _argument_help(param: Any) -> tuple[str, str]:
    help = getattr(param, "help", None) or ""
    name = param.metavar or param.name.upper()
    return (name + ("..." if param.nargs != 1 else ""), help)


class Command(GlobalOptions, TyperCommand):
    """A leaf command (`conv list`, `serve`) with the global options."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        """`[OPTIONS] ID...`: the arguments by their metavar, required or in brackets."""
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                pieces.append(argument_metavar(param))
        return pieces


class OneSuggestion:
    """A group (mixin) whose "No such command" suggests the closest names once.

    typer adds a suggestion to click's error and click (8.4 on) adds its own: the error is
    made here instead, the same whatever their versions.
    """

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        """The command named by args[0], or a usage error naming the closest commands."""
        try:
            return super().resolve_command(ctx, args)  # type: ignore[misc]
        except UsageError:
            name = args[0] if args else ""
            names = list(self.list_commands(ctx))  # type: ignore[attr-defined]
            if not name or name.startswith("-") or name in names:
                raise  # an option's error, or a command's own
            from difflib import get_close_matches

            message = f"No such command {name!r}."
            matches = get_close_matches(name, names)
            if matches:
                message += f" Did you mean {', '.join(repr(m) for m in matches)}?"
            raise UsageError(message, ctx) from None


class Group(OneSuggestion, GlobalOptions, TyperGroup):
    """A sub-group (`conv`, `risk`, `config`) with the global options."""


def with_global_options(sub_app: typer.Typer) -> typer.Typer:
    """The sub-app, its commands made with Command (unless they chose a class of their own),
    and those of its own sub-apps (`sandbox fault`)."""
    for info in sub_app.registered_commands:
        if info.cls in (None, TyperCommand):
            info.cls = Command
    for group in sub_app.registered_groups:
        if group.typer_instance is not None:
            with_global_options(group.typer_instance)
    return sub_app
