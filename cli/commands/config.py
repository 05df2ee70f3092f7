"""`convrisk config`: set, get, unset, show and path of the config file's profiles."""

import dataclasses
import re
from pathlib import Path
from typing import Annotated, Any

import click
import typer

from convrisk.cli.commands.base import Command
from convrisk.cli.context import AppContext, app_context
from convrisk.cli.errors import NotSet, UsageProblem
from convrisk.cli.options import common as opt
from convrisk.cli.options import complete
from convrisk.cli.options.values import read_secret
from convrisk.cli.output.kinds import PROFILES
from convrisk.cli.output.printer import Printer
from convrisk.cli.settings import (
    DEFAULT_PROFILE,
    GUARD_KEYS,
    KEYS,
    Config,
    ConfigFile,
    active_profile,
    check_key,
    check_profile_name,
    config_path,
    env_name,
    locked_config,
    mask_token,
    parse_value,
    save_config,
)

app = typer.Typer(
    help="""Settings in the config file, one table per profile.

    The file is $XDG_CONFIG_HOME/convrisk/config.toml (CONVRISK_CONFIG overrides it), written
    atomically with mode 0600 (through a symlink, to its target). Keys: base_url, token, db,
    output, timeout (0.1 to 3600 s), max_retries (0 to 10), page_size (1 to 100),
    max_response_mb (1 to 4096), allow_insecure_http (true: a token may go over plain http:// to
    a host that is not loopback), protected (true: each write shows a banner and asks for the
    number of records typed back, or needs --yes), read_only (true: every write is refused);
    each can also come from CONVRISK_<KEY> (which can set protected or read_only, not lift them).

    \b
    Example:
      convrisk config set base_url https://api.example.com
      convrisk config set token          # asks for it, not shown as typed
      convrisk config set token -   < token.txt
      convrisk config show
    """,
    rich_markup_mode=None,
    no_args_is_help=True,
)

Profile = Annotated[
    str | None,
    typer.Option(
        "--profile",
        metavar="P",
        help="The profile (default: the active one: convrisk --profile P, CONVRISK_PROFILE, "
        "or default).",
        autocompletion=complete.profiles,
    ),
]
Key = Annotated[
    str,
    typer.Argument(
        metavar="KEY", help=f"One of: {', '.join(KEYS)}.", autocompletion=complete.config_keys
    ),
]


def _target(
    ctx: typer.Context, profile: str | None, *, warn: bool = True
) -> tuple[AppContext, str, Path]:
    """The run, the profile to work on (--profile, else the active one) and the file."""
    run = app_context(ctx)
    path = config_path(run.env)
    if profile:
        return run, check_profile_name(profile), path
    return run, active_profile(run.flags, run.env, run.config_file(path, warn=warn))[0], path


def _existing(config: Config, name: str, path: Path) -> dict[str, Any]:
    """The table of a profile that must exist (`default` may be absent: it is then empty)."""
    if name not in config and name != DEFAULT_PROFILE:
        raise UsageProblem(f"No profile {name!r} in {path}.", param="--profile")
    return config.get(name, {})


def _editable(current: ConfigFile) -> Config:
    """A copy of the config file's profiles (as read under its lock) to change and save."""
    return {name: dict(table) for name, table in current.profiles.items()}


def _shown(key: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"  # as TOML writes it and `config set` takes it
    try:
        text = str(value)
    except ValueError:  # a TOML hex integer past 4300 decimal digits
        return "(a number too long to show)"
    return mask_token(text) if key == "token" else text


# ctx.meta key: the arguments given after `--` (none: no `--`).
_LITERAL = "convrisk.after_double_dash"


class SetCommand(Command):
    """`config set`: a VALUE after `--` is taken as it is, even when it starts with `-`.

    Unknown options reach the function as values (so that `-1` gets the message of its key,
    not "no such option"); click drops the `--` itself, so it is looked for here first.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Remember what follows the first `--` that is not an option's value, then parse."""
        takes_value = {
            opt
            for param in self.get_params(ctx)
            if isinstance(param, click.Option) and not param.is_flag and not param.count
            for opt in param.opts
        }
        literal: list[str] = []
        index = 0
        while index < len(args):
            if args[index] == "--":
                literal = args[index + 1 :]
                break
            index += 2 if args[index] in takes_value else 1
        ctx.meta[_LITERAL] = literal
        return super().parse_args(ctx, args)


@app.command("set", cls=SetCommand, context_settings={"ignore_unknown_options": True})
def set_(
    ctx: typer.Context,
    key: Key,
    value: Annotated[
        str | None,
        typer.Argument(
            metavar="VALUE",
            help="The value, or - to read it from stdin. Without it, the token is asked for "
            "on the terminal, not shown as it is typed.",
            show_default=False,
            autocompletion=complete.config_values,
        ),
    ] = None,
    profile: Profile = None,
) -> None:
    """Set KEY to VALUE in a profile (checked first; the file keeps mode 0600).

    \b
    Example:
      convrisk config set base_url https://api.example.com
      convrisk config set --profile staging page_size 50
      convrisk config set token                # asks for it, not shown as typed
      printf '%s' "$TOKEN" | convrisk config set token -
      convrisk config set token -- -sq0P...    # a value that starts with -
    """
    run, name, path = _target(ctx, profile, warn=False)
    check_key(key)
    printer = run.plain_printer()
    # After `--` a value is taken as it is; `-` still means stdin there (as `cat -- -`).
    if value is not None and value != "-" and value in ctx.meta.get(_LITERAL, []):
        text = value
    else:
        text = _value(printer, key, value)
    parsed = parse_value(key, text, key)
    if key == "db":
        parsed = str(Path(parsed).expanduser().resolve())
    with locked_config(path) as current:
        config = _editable(current)
        config.setdefault(name, {})[key] = parsed
        save_config(path, config, current.default_profile)
    printer.hint(f"Set {key} = {_shown(key, parsed)} in profile {name!r} ({path}).")
    if key == "token" and value not in (None, "-"):
        printer.hint(
            "Tip: `convrisk config set token` asks for it and keeps it out of shell history."
        )


_NUMBER = re.compile(r"-[0-9.]+(?:[eE][+-]?[0-9]+)?")


def _value(printer: Printer, key: str, value: str | None) -> str:
    """VALUE as given; `-` reads stdin (a line typed on a terminal, hidden for the token);
    no VALUE asks for the token on the terminal."""
    if value is not None and value != "-":
        if value.startswith("-") and _NUMBER.fullmatch(value) is None:
            # Unknown options reach here as values (so that -1 can be one): not these.
            shown = mask_token(value) if key == "token" else value  # a token is never shown
            raise UsageProblem(
                f"No such option: {shown} (see 'convrisk config set --help'). A VALUE that "
                f"starts with - goes after --: convrisk config set {key} -- VALUE (or give it "
                "through stdin with -).",
                param="VALUE",
            )
        return value
    if printer.stdin_is_terminal() and (value == "-" or key == "token"):
        text = printer.ask_value(f"{key}: ", hidden=key == "token").strip()
        if not text:
            raise UsageProblem(f"Nothing was entered: {key} is unchanged.", param="VALUE")
        return text
    if value == "-":
        return read_secret()
    if key == "token":
        raise UsageProblem(
            "Give the token: `convrisk config set token` asks for it on a terminal, and "
            "`convrisk config set token -` reads it from stdin.",
            param="VALUE",
        )
    raise UsageProblem(f"Give a VALUE for {key} (or - to read it from stdin).", param="VALUE")


@app.command("get")
def get(ctx: typer.Context, key: Key, profile: Profile = None) -> None:
    """Print KEY as set in a profile of the config file (the token is masked).

    Exits 1, printing nothing on stdout, when KEY is not set there (as `git config` does).

    \b
    Example:
      convrisk config get --profile staging base_url
      convrisk config get timeout
    """
    run, name, path = _target(ctx, profile)
    check_key(key)
    table = _existing(run.config_file(path).profiles, name, path)
    if key not in table:
        raise NotSet(f"{key} is not set in profile {name!r} ({path}).", param="KEY")
    run.plain_printer().line(_shown(key, table[key]))


@app.command("unset")
def unset(ctx: typer.Context, key: Key, profile: Profile = None) -> None:
    """Remove KEY from a profile (its default or environment value applies again).

    \b
    Example:
      convrisk config unset base_url
    """
    run, name, path = _target(ctx, profile, warn=False)
    check_key(key)
    printer = run.plain_printer()
    with locked_config(path) as current:
        config = _editable(current)
        if key not in _existing(config, name, path):
            printer.hint(f"{key} was not set in profile {name!r} ({path}).")
            return
        del config[name][key]
        save_config(path, config, current.default_profile)
    printer.hint(f"Unset {key} in profile {name!r} ({path}).")


@app.command("show")
def show(ctx: typer.Context, profile: Profile = None) -> None:
    """Show the settings in effect for a profile and where each comes from (token masked).

    \b
    Example:
      convrisk config show
      CONVRISK_TIMEOUT=5 convrisk config show --profile staging
    """
    run, name, path = _target(ctx, profile)
    flags = run.flags
    if profile:
        flags = dataclasses.replace(flags, profile=name, profile_flag="config show --profile")
    settings = run.resolve(flags)
    backend = f"remote {settings.base_url}" if settings.is_remote else f"local {settings.db}"
    origin = "" if profile else settings.profile_source
    rows = [("profile", name, origin), ("file", str(path), ""), ("backend", backend, "")]
    values: dict[str, Any] = {
        "base_url": settings.base_url,
        "token": settings.token,
        "db": settings.db,
        "output": settings.output,
        "timeout": settings.timeout,
        "max_retries": settings.max_retries,
        "page_size": settings.page_size,
        "max_response_mb": settings.max_response_mb,
        "allow_insecure_http": settings.allow_insecure_http,
        "protected": settings.protected,
        "read_only": settings.read_only,
    }
    for key in KEYS:
        value = values[key]
        if key == "base_url" and value is None and "base_url" in settings.sources:
            value = "(not used: --db or CONVRISK_DB chose the local database)"
        shown = "(not set)" if value is None else _shown(key, value)
        source = settings.sources.get(key, f"not set: {env_name(key)} or config set {key}")
        rows.append((key, shown, source))
    width = max(len(row[0]) for row in rows)
    printer = run.plain_printer()
    for key, shown, source in rows:
        printer.line(f"{key:<{width}}  {shown}" + (f"  ({source})" if source else ""))


@app.command("path")
def path(ctx: typer.Context) -> None:
    """Print the config file's path (it may not exist yet).

    \b
    Example:
      convrisk config path
      CONVRISK_CONFIG=/tmp/ci.toml convrisk config path
    """
    run = app_context(ctx)
    run.plain_printer().line(str(config_path(run.env)))


@app.command("profiles")
def profiles(ctx: typer.Context, output: opt.Output = None) -> None:
    """List the profiles of the config file; the active one is marked with *.

    The active profile is --profile, else CONVRISK_PROFILE, else the file's default (config
    use), else default.

    \b
    Example:
      convrisk config profiles
      convrisk config profiles -o json
    """
    run = app_context(ctx)
    path = config_path(run.env)
    config = run.config_file(path)
    active, source = active_profile(run.flags, run.env, config)
    names = list(config.profiles)
    if DEFAULT_PROFILE not in names:
        names.insert(0, DEFAULT_PROFILE)  # always there, even when the file has no [default]
    rows = [
        profile_row(name, config.profiles.get(name, {}), name == active, path) for name in names
    ]
    printer = run.printer(output)
    with printer.records(PROFILES, many=True) as sink:
        sink.write(rows)
    if active not in names:
        raise UsageProblem(f"No profile {active!r} in {path} (from {source}).", param="--profile")
    if printer.fmt == "table" and printer.stdout_is_terminal():
        printer.hint(f"Active: {active} (from {source}).")


def profile_row(name: str, table: dict[str, Any], active: bool, path: Path) -> dict[str, Any]:
    """What `config profiles` shows of a profile: never its token, only whether it has one; its
    guard marks."""
    from convrisk.api_client.endpoint import shown_url

    base_url = table.get("base_url")
    db = table.get("db")
    return {
        "name": name,
        "active": active,
        "base_url": shown_url(base_url) if isinstance(base_url, str) else None,
        "db": str(db) if db is not None else None,
        "token": "token" in table,
        # A mark that is not true or false is an error naming it (exit 2), as for any command.
        **{
            key: bool(parse_value(key, table.get(key, False), f"{path} [{name}]"))
            for key in GUARD_KEYS
        },
    }


@app.command("use")
def use(
    ctx: typer.Context,
    profile: Annotated[
        str,
        typer.Argument(
            metavar="P", help="The profile to make the default.", autocompletion=complete.profiles
        ),
    ],
) -> None:
    """Make profile P the default: commands use it when neither --profile nor CONVRISK_PROFILE
    chooses one (the file's top-level key default_profile).

    \b
    Example:
      convrisk config use staging
      convrisk config use default
    """
    run = app_context(ctx)
    name = check_profile_name(profile)
    path = config_path(run.env)
    with locked_config(path) as current:
        config = _editable(current)
        if name not in config and name != DEFAULT_PROFILE:
            known = ", ".join(config) or "none"
            raise UsageProblem(
                f"No profile {name!r} in {path} (profiles: {known}). Create it first: "
                f"convrisk config set --profile {name} KEY VALUE",
                param="P",
            )
        # `default` is what applies without the key, so choosing it removes the key.
        save_config(path, config, None if name == DEFAULT_PROFILE else name)
    printer = run.plain_printer()
    printer.hint(f"Profile {name!r} is now the default ({path}).")
    overrides = run.flags.profile or run.env.get("CONVRISK_PROFILE")
    if overrides and overrides != name:
        where = "--profile" if run.flags.profile else "CONVRISK_PROFILE"
        printer.warning(f"{where} chooses {overrides!r} here, and wins over the default.")
