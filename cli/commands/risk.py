"""`convrisk risk`: list, create, get, update and delete risk profiles."""

from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from convrisk.api_client.resources import RISK_PROFILES as RISK_PROFILE_RESOURCE
from convrisk.cli import guard
from convrisk.cli.commands import verbs
from convrisk.cli.commands.loops import guard_ids, plan_create, plan_each_id
from convrisk.cli.context import app_context
from convrisk.cli.options import bodies, described, values
from convrisk.cli.options import common as opt
from convrisk.cli.output.resource_kinds import RISK_PROFILES

if TYPE_CHECKING:
    from convrisk.api_client.record_types import (
        RiskProfileCreateParams,
        RiskProfileFilters,
        RiskProfileUpdateParams,
    )

RiskFields = Annotated[str | None, opt.fields_option(RISK_PROFILES)]

app = typer.Typer(
    help="""Risk profiles: the risk tolerance of a customer.

    \b
    Example:
      convrisk risk create --customer-id cus_1 --profile-type moderate --score 72
      convrisk risk list --customer-id cus_1
    """,
    rich_markup_mode=None,
    no_args_is_help=True,
)


@app.command("list")
@described.with_options(described.filter_options(RISK_PROFILE_RESOURCE), after="ctx")
def list_(
    ctx: typer.Context,
    limit: opt.Limit = None,
    all_items: opt.All = False,
    starting_after: opt.StartingAfter = None,
    ending_before: opt.EndingBefore = None,
    output: opt.Output = None,
    fields: RiskFields = None,
    jq: opt.Jq = None,
    **given: Any,
) -> None:
    """List risk profiles, newest first (filters combine with AND).

    \b
    Example:
      convrisk risk list --profile-type aggressive --limit 100
      convrisk risk list --all -o csv > risk-profiles.csv
      convrisk risk list --customer-id cus_1 --ending-before rp_01HVZ8Q2K4M6P8R0T2V4X6Z8B0 --all
    """

    def filters() -> "RiskProfileFilters":
        return cast("RiskProfileFilters", described.filters(RISK_PROFILE_RESOURCE, given))

    verbs.list_pages(
        app_context(ctx),
        "risk_profiles",
        filters,
        limit=limit,
        all_items=all_items,
        starting_after=starting_after,
        ending_before=ending_before,
        output=output,
    )


@app.command("create")
@described.with_options(described.create_options(RISK_PROFILE_RESOURCE), after="ctx")
def create(
    ctx: typer.Context,
    dry_run: opt.DryRun = False,
    yes: opt.WriteYes = False,
    output: opt.Output = None,
    fields: RiskFields = None,
    jq: opt.Jq = None,
    **given: str | None,
) -> None:
    """Create a risk profile (details default to {}).

    \b
    Example:
      convrisk risk create --customer-id cus_1 --profile-type moderate --score 72
      convrisk risk create --customer-id cus_2 --profile-type aggressive --score 91.5 \\
        --details '{"horizon_years": 10}'
      convrisk risk create --customer-id cus_3 --profile-type conservative --score 20 \\
        --details @details.json
      convrisk risk create --customer-id cus_1 --profile-type moderate --score 72 --dry-run
    """
    run = app_context(ctx)
    details = given.get("details")  # the one option that may read stdin
    what = "create a risk profile"
    if not dry_run:
        guard.refuse_early(run, what, yes=yes, stdin_free=details != "-")
    if details == "-":
        run.printer(output).reading_stdin("--details (a JSON object)")
    params = cast("RiskProfileCreateParams", bodies.create_body(RISK_PROFILE_RESOURCE, given))
    if dry_run:
        return plan_create(run, RISK_PROFILES, params, verbs.resource_of("risk_profiles"), output)
    printer = run.printer(output)
    stdin_free = details != "-"
    guard.check_write(run, count=1, what=what, max_affected=None, yes=yes, stdin_free=stdin_free)
    printer.one(RISK_PROFILES, run.client().risk_profiles.create(params))


app.command("get")(
    verbs.get_command(
        "risk_profiles",
        """Show risk profiles by id (several ids, or - to read them from stdin).

        \b
        Example:
          convrisk risk get rp_01HVZ8Q2K4M6P8R0T2V4X6Z8B0 -o json
          convrisk risk list --customer-id cus_1 -o id | convrisk risk get - -o jsonl
        """,
    )
)


@app.command("update")
@described.with_options(described.update_options(RISK_PROFILE_RESOURCE), after="ids")
def update(
    ctx: typer.Context,
    ids: opt.Ids,
    dry_run: opt.DryRun = False,
    yes: opt.WriteYes = False,
    max_affected: opt.MaxAffected = None,
    output: opt.Output = None,
    fields: RiskFields = None,
    jq: opt.Jq = None,
    **given: Any,
) -> None:
    """Change risk profiles' type, score or details (details are replaced whole).

    \b
    Example:
      convrisk risk update rp_01HVZ8Q2K4M6P8R0T2V4X6Z8B0 --score 80
      echo '{"reviewed": true}' | convrisk risk update rp_01HVZ8Q2K4M6P8R0T2V4X6Z8B0 --details -
      convrisk risk list --customer-id cus_1 -o id | convrisk risk update - --score 0 --dry-run
    """
    run = app_context(ctx)
    id_list = values.id_list(ids)
    details = given.get("details")  # the one option that may read stdin
    values.check_one_stdin(id_list, details)
    cap = opt.max_affected(max_affected)
    what = f"update {RISK_PROFILES.plural}"
    if not dry_run:
        stdin_free = not id_list.from_stdin and details != "-"
        guard.refuse_early(run, what, yes=yes, stdin_free=stdin_free)
    if details == "-":
        run.printer(output).reading_stdin("--details (a JSON object)")
    changes = cast("RiskProfileUpdateParams", bodies.update_body(RISK_PROFILE_RESOURCE, given))
    if dry_run:
        resource = verbs.resource_of("risk_profiles")
        return plan_each_id(run, RISK_PROFILES, id_list, "update", changes, resource, output)
    if details == "-":
        guard.check_write(
            run, count=len(id_list.given), what=what, max_affected=cap, yes=yes, stdin_free=False
        )
    else:
        guard_ids(run, id_list, what, cap, yes)
    verbs.update_each(run, "risk_profiles", id_list, changes, output)


app.command("delete")(
    verbs.delete_command(
        "risk_profiles",
        """Delete risk profiles and all their data, for good (asks first on a terminal).

        \b
        Example:
          convrisk risk delete rp_01HVZ8Q2K4M6P8R0T2V4X6Z8B0
          convrisk risk list --customer-id cus_1 --all -o id | convrisk risk delete - --yes
          convrisk risk delete rp_01HVZ8Q2K4M6P8R0T2V4X6Z8B0 rp_01HWA3C5E7G9J1K3M5P7R9T1V3 \\
            --dry-run -o json
        """,
    )
)
app.command("import")(
    verbs.import_command(
        "risk_profiles",
        """Create or update risk profiles from a file: one record per JSON line or CSV row.

        A record without id is a create (customer_id, profile_type, score, details; details
        default to {}); with id, an update of the fields it carries (profile_type, score,
        details). One result per record (JSON lines when piped); each failure is reported with
        its line and the rest go on. Run it again after an interruption: records already
        created are not created twice.

        \b
        Example:
          convrisk risk import profiles.csv
          convrisk risk import profiles.jsonl --dry-run -o json
          convrisk risk import - --format csv --stop-on-error < profiles.csv
          convrisk --db a.db risk list --all -o jsonl | convrisk --db b.db risk import - --copy
        """,
    )
)
