"""The options that commands share (Annotated aliases), with the callbacks that keep --output,
--fields and --jq on the run before any request."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from convrisk.cli.context import AppContext
from convrisk.cli.options import complete
from convrisk.cli.output.kinds import DELETIONS, Kind
from convrisk.cli.settings import OUTPUT_FORMATS


def _remember_output(ctx: typer.Context, value: str | None) -> str | None:
    """Check -o early (it is eager) so that even usage errors are reported in that format."""
    if value is None:
        return None
    if value.lower() not in OUTPUT_FORMATS:
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(OUTPUT_FORMATS)}.")
    value = value.lower()  # `-o JSON` is `-o json`
    ctx.ensure_object(AppContext).output_flag = value
    return value


Output = Annotated[
    str | None,
    typer.Option(
        "-o",
        "--output",
        metavar="FORMAT",
        help="table, json, jsonl, csv or id. Default: table (env CONVRISK_OUTPUT, key output).",
        callback=_remember_output,
        is_eager=True,
        show_default=False,
        autocompletion=complete.formats,
    ),
]


def fields_option(kind: Kind) -> Any:
    """The --fields option of commands that print `kind` (it names the fields in its help)."""
    known = tuple(column.key for column in kind.columns)

    def remember(ctx: typer.Context, value: str | None) -> str | None:
        """Keep --fields for the printer, which checks it before any request."""
        if value is not None:
            from convrisk.cli.output.fields import FieldChoice

            ctx.ensure_object(AppContext).fields = FieldChoice(value, known, kind.noun)
        return value

    return typer.Option(
        "--fields",
        metavar="F1,F2,...",
        help=f"Only these fields, in this order, in any format but id: {', '.join(known)}.",
        callback=remember,
        show_default=False,
        autocompletion=complete.field_list(known),
    )


def _remember_jq(ctx: typer.Context, value: str | None) -> str | None:
    """Keep --jq for the printer, which compiles it before any request."""
    if value is not None:
        ctx.ensure_object(AppContext).jq = value
    return value


DeletionFields = Annotated[str | None, fields_option(DELETIONS)]
Jq = Annotated[
    str | None,
    typer.Option(
        "--jq",
        metavar="EXPR",
        help="Print the results of this jq program: with -o jsonl run on each record, "
        "streamed; else once over the JSON output. Strings print raw, other values as "
        "compact JSON.",
        callback=_remember_jq,
        show_default=False,
    ),
]
Limit = Annotated[
    str | None,
    typer.Option(
        "--limit",
        metavar="N",
        help="How many items in all (default 10); pages of up to page_size are fetched.",
        show_default=False,
    ),
]
All = Annotated[bool, typer.Option("--all", help="Every item, page after page (streamed).")]
StartingAfter = Annotated[
    str | None,
    typer.Option(
        "--starting-after",
        metavar="ID",
        help="Continue after this id (the cursor of a hint).",
        autocompletion=complete.ids,
    ),
]
EndingBefore = Annotated[
    str | None,
    typer.Option(
        "--ending-before",
        metavar="ID",
        help="Walk back towards the newest: the items just newer than this id, oldest first.",
    ),
]
Yes = Annotated[
    bool,
    typer.Option(
        "--yes",
        "-y",
        help="Delete without asking (needed without a terminal); on a protected profile, "
        "without the count typed back.",
    ),
]
WriteYes = Annotated[
    bool,
    typer.Option(
        "--yes",
        "-y",
        help="On a protected profile, write without asking for the count (needed without a "
        "terminal).",
    ),
]


def max_affected(value: str | None) -> int | None:
    """The cap of --max-affected N (a whole number, 0 or more), or None when not given."""
    if value is None:
        return None
    from convrisk.cli.options.values import whole_number

    return whole_number(value, "--max-affected", 0, 10**12)


MaxAffected = Annotated[
    str | None,
    typer.Option(
        "--max-affected",
        metavar="N",
        help="Refuse (exit 2, nothing written) when more than N records would be touched; "
        "counted before the first write.",
        show_default=False,
    ),
]
DryRun = Annotated[
    bool,
    typer.Option(
        "--dry-run",
        help="Check the input and every id (read-only), print what would be done, change nothing.",
    ),
]
ImportFile = Annotated[
    str,
    typer.Argument(
        metavar="FILE",
        help="JSON lines (one object per line) or CSV with a header row; - reads stdin.",
    ),
]
ImportFormat = Annotated[
    str | None,
    typer.Option(
        "--format",
        metavar="jsonl|csv",
        help="The file's format (default: by its extension, else JSON lines when it starts "
        "with {, else CSV).",
        show_default=False,
        autocompletion=complete.import_formats,
    ),
]
Copy = Annotated[
    bool,
    typer.Option(
        "--copy",
        help="Read what -o jsonl prints and create each record anew (id and read-only fields "
        "ignored), then set its other fields; run again, it creates nothing twice.",
    ),
]
StopOnError = Annotated[
    bool,
    typer.Option(
        "--stop-on-error",
        help="Stop at the first record that fails (default: report it and go on).",
    ),
]
Ids = Annotated[
    list[str],
    typer.Argument(
        metavar="ID",
        help="One or more ids, or - to read ids from stdin.",
        autocompletion=complete.ids,
    ),
]
Details = Annotated[
    str | None,
    typer.Option(
        "--details",
        metavar="JSON|@FILE|-",
        help="A JSON object, @file.json, or - to read it from stdin.",
        show_default=False,
    ),
]
Score = Annotated[
    str | None, typer.Option("--score", metavar="X", help="A finite number, e.g. 72 or 72.5.")
]
