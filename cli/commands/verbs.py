"""The verbs `conv` and `risk` share, made once for both from the resource's name: list's
paging, get, delete and import (each command's help is its group's own)."""

# No `from __future__ import annotations`: typer reads each command's options from annotations
# made here, per resource (get's --fields names the resource's fields).

from collections.abc import Callable, Mapping
from typing import Annotated, Any

import typer

from convrisk.api_client.resources import ResourceName
from convrisk.cli.commands.loops import Resource, delete_each, for_each_id, print_list
from convrisk.cli.context import AppContext, app_context
from convrisk.cli.options import common as opt
from convrisk.cli.options import values
from convrisk.cli.options.values import IdList
from convrisk.cli.output.resource_kinds import KINDS

Command = Callable[..., None]


def resource_of(name: ResourceName) -> Resource:
    """The Client's resource of this name."""
    return lambda client: getattr(client, name)


def list_pages(
    run: AppContext,
    name: ResourceName,
    filters: Callable[[], Any],
    *,
    limit: str | None,
    all_items: bool,
    starting_after: str | None,
    ending_before: str | None,
    output: str | None,
) -> None:
    """A list printed page by page: the paging options checked, then the filters made."""
    total = values.total_wanted(limit, all_items)
    after, before = values.cursors(starting_after, ending_before)
    print_list(
        run,
        KINDS[name],
        resource_of(name),
        filters(),
        limit=total,
        starting_after=after,
        ending_before=before,
        output=output,
        hint_more=not all_items,
    )


def update_each(
    run: AppContext, name: ResourceName, ids: IdList, changes: Mapping[str, Any], output: str | None
) -> None:
    """The same changes to each id, each result printed as it comes (the guards passed)."""
    target = resource_of(name)(run.client())
    for_each_id(run, KINDS[name], ids, lambda id: target.update(id, changes), output=output)


def get_command(name: ResourceName, help_text: str) -> Command:
    """`get`: records by id (several, or - for stdin), each printed as it comes."""
    kind = KINDS[name]

    def get(
        ctx: typer.Context,
        ids: opt.Ids,
        output: opt.Output = None,
        fields: Annotated[str | None, opt.fields_option(kind)] = None,
        jq: opt.Jq = None,
    ) -> None:
        run = app_context(ctx)
        id_list = values.id_list(ids)
        target = resource_of(name)(run.client())
        for_each_id(run, kind, id_list, lambda id: target.retrieve(id), output=output)

    get.__doc__ = help_text
    return get


def delete_command(name: ResourceName, help_text: str) -> Command:
    """`delete`: records by id, after a confirmation (cli/loops.delete_each)."""
    kind = KINDS[name]

    def delete(
        ctx: typer.Context,
        ids: opt.Ids,
        yes: opt.Yes = False,
        dry_run: opt.DryRun = False,
        max_affected: opt.MaxAffected = None,
        output: opt.Output = None,
        fields: opt.DeletionFields = None,
        jq: opt.Jq = None,
    ) -> None:
        run = app_context(ctx)
        id_list = values.id_list(ids)
        cap = opt.max_affected(max_affected)
        delete_each(
            run,
            kind,
            id_list,
            yes,
            output,
            resource_of(name),
            dry_run=dry_run,
            max_affected=cap,
        )

    delete.__doc__ = help_text
    return delete


def import_command(name: ResourceName, help_text: str) -> Command:
    """`import`: creates and updates from a file (cli/importer, loaded only to run one)."""

    def import_(
        ctx: typer.Context,
        file: opt.ImportFile,
        file_format: opt.ImportFormat = None,
        dry_run: opt.DryRun = False,
        stop_on_error: opt.StopOnError = False,
        copy: opt.Copy = False,
        yes: opt.WriteYes = False,
        max_affected: opt.MaxAffected = None,
        output: opt.Output = None,
        jq: opt.Jq = None,
    ) -> None:
        from convrisk.cli.importing.run import IMPORTS, import_file

        run = app_context(ctx)
        import_file(
            run,
            IMPORTS[name],
            file,
            file_format,
            dry_run=dry_run,
            stop_on_error=stop_on_error,
            output=output,
            copy=copy,
            yes=yes,
            max_affected=opt.max_affected(max_affected),
        )

    import_.__doc__ = help_text
    return import_
