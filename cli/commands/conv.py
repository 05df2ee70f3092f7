"""`convrisk conv`: list, create, get, update and delete conversations."""

from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from convrisk.api_client.resources import CONVERSATIONS as CONVERSATION_RESOURCE
from convrisk.cli import guard
from convrisk.cli.commands import verbs
from convrisk.cli.commands.loops import guard_ids, plan_create, plan_each_id
from convrisk.cli.context import app_context
from convrisk.cli.options import bodies, described, values
from convrisk.cli.options import common as opt
from convrisk.cli.output.resource_kinds import CONVERSATIONS

if TYPE_CHECKING:
    from convrisk.api_client.record_types import ConversationCreateParams, ConversationFilters

ConvFields = Annotated[str | None, opt.fields_option(CONVERSATIONS)]

app = typer.Typer(
    help="""Conversations with one contact or one group.

    \b
    Example:
      convrisk conv create --contact-id c_1
      convrisk conv list --muted --limit 50
    """,
    rich_markup_mode=None,
    no_args_is_help=True,
)


@app.command("list")
@described.with_options(described.filter_options(CONVERSATION_RESOURCE), after="ctx")
def list_(
    ctx: typer.Context,
    limit: opt.Limit = None,
    all_items: opt.All = False,
    starting_after: opt.StartingAfter = None,
    ending_before: opt.EndingBefore = None,
    output: opt.Output = None,
    fields: ConvFields = None,
    jq: opt.Jq = None,
    **given: Any,
) -> None:
    """List conversations, newest first (filters combine with AND).

    \b
    Example:
      convrisk conv list --muted --not-archived --limit 50
      convrisk conv list --all -o jsonl --jq 'select(.group_id) | .id'
      convrisk conv list --contact-id c_1 --all -o jsonl
      convrisk conv list --ending-before conv_01HVZ8Q2K4M6P8R0T2V4X6Z8B0 --limit 20
    """

    def filters() -> "ConversationFilters":
        return cast("ConversationFilters", described.filters(CONVERSATION_RESOURCE, given))

    verbs.list_pages(
        app_context(ctx),
        "conversations",
        filters,
        limit=limit,
        all_items=all_items,
        starting_after=starting_after,
        ending_before=ending_before,
        output=output,
    )


@app.command("create")
@described.with_options(described.create_options(CONVERSATION_RESOURCE), after="ctx")
def create(
    ctx: typer.Context,
    dry_run: opt.DryRun = False,
    yes: opt.WriteYes = False,
    output: opt.Output = None,
    fields: ConvFields = None,
    jq: opt.Jq = None,
    **given: str | None,
) -> None:
    """Create a conversation with one contact or one group (exactly one of the two).

    \b
    Example:
      convrisk conv create --contact-id c_1
      convrisk conv create --group-id g_7 -o id
      convrisk conv create --contact-id c_1 --dry-run -o json
    """
    run = app_context(ctx)
    body = bodies.create_body(CONVERSATION_RESOURCE, given)
    params = cast("ConversationCreateParams", body)
    if dry_run:
        return plan_create(run, CONVERSATIONS, params, verbs.resource_of("conversations"), output)
    printer = run.printer(output)
    guard.check_write(run, count=1, what="create a conversation", max_affected=None, yes=yes)
    printer.one(CONVERSATIONS, run.client().conversations.create(params))


app.command("get")(
    verbs.get_command(
        "conversations",
        """Show conversations by id (several ids, or - to read them from stdin).

        \b
        Example:
          convrisk conv get conv_01HVZ8Q2K4M6P8R0T2V4X6Z8B0 -o json
          convrisk conv list --muted -o id | convrisk conv get - -o jsonl
        """,
    )
)


@app.command("update")
@described.with_options(described.update_options(CONVERSATION_RESOURCE), after="ids")
def update(
    ctx: typer.Context,
    ids: opt.Ids,
    dry_run: opt.DryRun = False,
    yes: opt.WriteYes = False,
    max_affected: opt.MaxAffected = None,
    output: opt.Output = None,
    fields: ConvFields = None,
    jq: opt.Jq = None,
    **given: Any,
) -> None:
    """Change conversations: pin, mute, archive, pin a message.

    \b
    Example:
      convrisk conv update conv_01HVZ8Q2K4M6P8R0T2V4X6Z8B0 --mute --archive
      convrisk conv update conv_01HVZ8Q2K4M6P8R0T2V4X6Z8B0 --archived-at 2024-05-01T12:00:00Z
      convrisk conv list --muted -o id | convrisk conv update - --unmute
      convrisk conv list --muted --all -o id | convrisk conv update - --unmute --dry-run
    """
    run = app_context(ctx)
    id_list = values.id_list(ids)
    cap = opt.max_affected(max_affected)
    changes = bodies.update_body(CONVERSATION_RESOURCE, given)
    if dry_run:
        resource = verbs.resource_of("conversations")
        return plan_each_id(run, CONVERSATIONS, id_list, "update", changes, resource, output)
    guard_ids(run, id_list, f"update {CONVERSATIONS.plural}", cap, yes)
    verbs.update_each(run, "conversations", id_list, changes, output)


app.command("delete")(
    verbs.delete_command(
        "conversations",
        """Delete conversations and all their messages, for good (asks first on a terminal).

        Archiving (conv update --archive) is the reversible alternative.

        \b
        Example:
          convrisk conv delete conv_01HVZ8Q2K4M6P8R0T2V4X6Z8B0
          convrisk conv list --archived --all -o id | convrisk conv delete - --yes
          convrisk conv list --muted --all -o id | convrisk conv delete - --dry-run
        """,
    )
)
# The import's help names the fields an update sets, and the one the --muted filter compares.
_UPDATED = ", ".join(field.name for field in CONVERSATION_RESOURCE.updatable())
_MUTED = next(f.column for f in CONVERSATION_RESOURCE.filters if f.name == "muted")
app.command("import")(
    verbs.import_command(
        "conversations",
        f"""Create or update conversations from a file: one record per JSON line or CSV row.

        A record without id is a create (contact_id or group_id); with id, an update of the
        fields it carries ({_UPDATED}). One result per
        record (JSON lines when piped); each failure is reported with its line and the rest go
        on. Run it again after an interruption: records already created are not created twice.

        \b
        Example:
          convrisk conv import conversations.jsonl > results.jsonl
          convrisk conv import changes.csv --dry-run
          convrisk conv list --muted --all -o jsonl | jq -c '{{id, {_MUTED}: false}}' \\
            | convrisk conv import - --stop-on-error
          convrisk --db a.db conv list --all -o jsonl | convrisk --db b.db conv import - --copy
        """,
    )
)
