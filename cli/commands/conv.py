"""`convrisk conv`: list, create, get, update and delete conversations."""

from typing import TYPE_CHECKING, Annotated

import typer

from convrisk.api_client.resources import CONVERSATIONS as CONVERSATION_RESOURCE
from convrisk.cli import guard
from convrisk.cli.commands import verbs
from convrisk.cli.commands.loops import guard_ids, plan_create, plan_each_id
from convrisk.cli.context import app_context
from convrisk.cli.options import bodies, complete, values
from convrisk.cli.options import common as opt
from convrisk.cli.output.resource_kinds import CONVERSATIONS

if TYPE_CHECKING:
    from convrisk.api_client.record_types import ConversationFilters

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

GroupId = Annotated[str | None, typer.Option("--group-id", metavar="G", help="A group's id.")]
_CONTACT_FILTER = next(f for f in CONVERSATION_RESOURCE.filters if f.name == "contact_id")
ContactFilter = Annotated[
    str | None,
    typer.Option(
        _CONTACT_FILTER.option,
        metavar="C",
        help=_CONTACT_FILTER.doc,
        autocompletion=complete.filter_values("conversations", _CONTACT_FILTER.column),
    ),
]


@app.command("list")
def list_(
    ctx: typer.Context,
    muted: Annotated[
        bool | None, typer.Option("--muted/--not-muted", help="Only muted / not muted.")
    ] = None,
    archived: Annotated[
        bool | None, typer.Option("--archived/--not-archived", help="Only archived / not.")
    ] = None,
    pinned: Annotated[
        bool | None, typer.Option("--pinned/--not-pinned", help="Only pinned / not pinned.")
    ] = None,
    group_id: GroupId = None,
    contact_id: ContactFilter = None,
    limit: opt.Limit = None,
    all_items: opt.All = False,
    starting_after: opt.StartingAfter = None,
    ending_before: opt.EndingBefore = None,
    output: opt.Output = None,
    fields: ConvFields = None,
    jq: opt.Jq = None,
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
        return {
            "muted": muted,
            "archived": archived,
            "pinned": pinned,
            "group_id": values.nonempty(group_id, "--group-id"),
            "contact_id": values.nonempty(contact_id, _CONTACT_FILTER.option),
        }

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
def create(
    ctx: typer.Context,
    contact_id: Annotated[
        str | None, typer.Option("--contact-id", metavar="C", help="The contact's id.")
    ] = None,
    group_id: GroupId = None,
    dry_run: opt.DryRun = False,
    yes: opt.WriteYes = False,
    output: opt.Output = None,
    fields: ConvFields = None,
    jq: opt.Jq = None,
) -> None:
    """Create a conversation with one contact or one group (exactly one of the two).

    \b
    Example:
      convrisk conv create --contact-id c_1
      convrisk conv create --group-id g_7 -o id
      convrisk conv create --contact-id c_1 --dry-run -o json
    """
    run = app_context(ctx)
    params = bodies.conversation_party(contact_id, group_id)
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
def update(
    ctx: typer.Context,
    ids: opt.Ids,
    pin: Annotated[bool | None, typer.Option("--pin/--unpin", help="Pin or unpin.")] = None,
    mute: Annotated[bool | None, typer.Option("--mute/--unmute", help="Mute or unmute.")] = None,
    archive: Annotated[
        bool | None,
        typer.Option("--archive/--unarchive", help="Archive now, or unarchive."),
    ] = None,
    archived_at: Annotated[
        str | None,
        typer.Option(
            "--archived-at",
            metavar="TIME",
            help="Archive at TIME: ISO 8601 (2024-05-01, 2024-05-01T12:00:00+02:00, "
            "20240501T120000Z; no zone means UTC), Unix seconds (1714564800, or @SECONDS "
            "for any number), or now. A bare 4, 8, 12 or 14 digit number is refused as "
            "ambiguous. Not with --archive or --unarchive.",
        ),
    ] = None,
    pinned_message_id: Annotated[
        str | None,
        typer.Option("--pinned-message-id", metavar="M", help="Pin this message."),
    ] = None,
    clear_pinned_message: Annotated[
        bool, typer.Option("--clear-pinned-message", help="Unpin the pinned message.")
    ] = False,
    dry_run: opt.DryRun = False,
    yes: opt.WriteYes = False,
    max_affected: opt.MaxAffected = None,
    output: opt.Output = None,
    fields: ConvFields = None,
    jq: opt.Jq = None,
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
    changes = bodies.conversation_changes(
        pin, mute, archive, archived_at, pinned_message_id, clear_pinned_message
    )
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
app.command("import")(
    verbs.import_command(
        "conversations",
        """Create or update conversations from a file: one record per JSON line or CSV row.

        A record without id is a create (contact_id or group_id); with id, an update of the
        fields it carries (pinned_message_id, is_pinned, is_muted, archived_at). One result per
        record (JSON lines when piped); each failure is reported with its line and the rest go
        on. Run it again after an interruption: records already created are not created twice.

        \b
        Example:
          convrisk conv import conversations.jsonl > results.jsonl
          convrisk conv import changes.csv --dry-run
          convrisk conv list --muted --all -o jsonl | jq -c '{id, is_muted: false}' \\
            | convrisk conv import - --stop-on-error
          convrisk --db a.db conv list --all -o jsonl | convrisk --db b.db conv import - --copy
        """,
    )
)
