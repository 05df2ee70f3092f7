"""Shell completion of values: output formats, profile names, config keys and values, the
choices of options (--profile-type, --format, --log-format, --fields), and ids and --contact-id
values from the local database. Each answers from the source that defines it (the resources'
description, the settings' keys, the option's own list), quickly, and never fails (no
candidates)."""

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path

import typer

from convrisk.cli.context import AppContext
from convrisk.cli.settings import (
    BOOLEAN_KEYS,
    DEFAULT_PROFILE,
    KEYS,
    OUTPUT_FORMATS,
    Flags,
    config_path,
    read_config,
    resolve,
)

Completer = Callable[[typer.Context, list[str], str], list[str]]


def formats(ctx: typer.Context, args: list[str], incomplete: str) -> list[str]:
    """The output formats (`-o <TAB>`)."""
    return [name for name in OUTPUT_FORMATS if name.startswith(incomplete)]


def config_keys(ctx: typer.Context, args: list[str], incomplete: str) -> list[str]:
    """The config keys (`config get <TAB>`)."""
    return [key for key in KEYS if key.startswith(incomplete)]


def config_values(ctx: typer.Context, args: list[str], incomplete: str) -> list[str]:
    """The values of a config key that has a list of them (`config set output <TAB>`)."""
    known = {"output": OUTPUT_FORMATS, **dict.fromkeys(BOOLEAN_KEYS, ("true", "false"))}
    choices = known.get(str(ctx.params.get("key")), ())
    return [value for value in choices if value.startswith(incomplete)]


def profiles(ctx: typer.Context, args: list[str], incomplete: str) -> list[str]:
    """The profiles of the config file, and `default`, which needs no table
    (`--profile <TAB>`, `config use <TAB>`)."""
    env = _run(ctx).env
    try:
        names = list(read_config(config_path(env)).profiles)
    except Exception:  # an unreadable config file: only the profile that always exists
        names = []
    if DEFAULT_PROFILE not in names:
        names.append(DEFAULT_PROFILE)
    return [name for name in names if name.startswith(incomplete)]


def one_of(choices: Callable[[], Sequence[str]]) -> Completer:
    """A completer of the values `choices()` gives (read at TAB, not at start-up)."""

    def complete(ctx: typer.Context, args: list[str], incomplete: str) -> list[str]:
        return [choice for choice in choices() if choice.startswith(incomplete)]

    return complete


def field_list(names: Sequence[str]) -> Completer:
    """A completer of F1,F2,...: the last name after the commas, names not yet given."""

    def complete(ctx: typer.Context, args: list[str], incomplete: str) -> list[str]:
        done, _, last = incomplete.rpartition(",")
        given = set(done.split(",")) if done else set()
        head = f"{done}," if done else ""
        return [head + name for name in names if name.startswith(last) and name not in given]

    return complete


def _import_formats() -> Sequence[str]:
    from convrisk.cli.settings import IMPORT_FORMATS as FORMATS

    return FORMATS


def _log_formats() -> Sequence[str]:
    from convrisk.local_backend.serve.access_log import LOG_FORMATS

    return LOG_FORMATS


import_formats = one_of(_import_formats)
log_formats = one_of(_log_formats)


def ids(ctx: typer.Context, args: list[str], incomplete: str) -> list[str]:
    """Ids from the local database, newest first (`conv get <TAB>`); none for a remote one."""
    group = ctx.parent.info_name if ctx.parent is not None else None
    resource = {"conv": "conversations", "risk": "risk_profiles"}.get(group or "")
    if resource is None:
        return []
    return _local_ids(ctx, resource, incomplete)


def api_paths(ctx: typer.Context, args: list[str], incomplete: str) -> list[str]:
    """The interface's paths (`api <TAB>`), then local ids under one (`api /v1/conversations/`)."""
    from convrisk.api_client.resources import RESOURCES

    # The list paths of the interface, and the resource of the ids under each.
    paths = {resource.path: name for name, resource in RESOURCES.items()}
    for path, resource in paths.items():
        if incomplete.startswith(path + "/"):
            start = incomplete[len(path) + 1 :]
            return [f"{path}/{id}" for id in _local_ids(ctx, resource, start)]
    return [path for path in paths if path.startswith(incomplete)]


def filter_values(resource: str, column: str) -> Completer:
    """The values of a filter's column in the local database (`--contact-id <TAB>`); none for a
    remote one."""

    def complete(ctx: typer.Context, args: list[str], incomplete: str) -> list[str]:
        db = _local_db(ctx)
        if db is None:
            return []
        from convrisk.local_backend.store.completion import values_starting_with

        return values_starting_with(db, resource, column, incomplete)

    return complete


def _local_ids(ctx: typer.Context, resource: str, incomplete: str) -> list[str]:
    """Ids of `resource` in the local database that start with `incomplete` (at most 50)."""
    db = _local_db(ctx)
    if db is None:
        return []
    from convrisk.local_backend.store.completion import ids_starting_with

    return ids_starting_with(db, resource, incomplete)


def _local_db(ctx: typer.Context) -> Path | None:
    """The local database of the settings typed so far; None for a remote one or broken ones."""
    run = _run(ctx)
    # The global options typed so far: before the command (the root's parameters; its
    # callback does not run while completing), then after it (set on the run as parsed).
    root = ctx.find_root().params
    given = {name: root.get(name) for name in ("profile", "base_url", "db")}
    later = {k: v for k, v in dataclasses.asdict(run.flags).items() if k in given and v}
    flags = dataclasses.replace(Flags(), **{**given, **later})
    try:
        settings = resolve(flags, run.env, read_config(config_path(run.env)))
    except Exception:  # broken settings: no candidates (and no warning) rather than an error
        return None
    return None if settings.is_remote else settings.db


def _run(ctx: typer.Context) -> AppContext:
    return ctx.ensure_object(AppContext)
