"""Commands over many records: a list printed page by page, and one action per id (get,
update, delete and their dry runs) that goes on past a failure and reports each."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from convrisk.cli.context import AppContext
from convrisk.cli.errors import Failures, NotConfirmed, UsageProblem, describe, stops_the_loop
from convrisk.cli.options.values import IdList, cursor_option
from convrisk.cli.output.kinds import DELETIONS, Kind, plan_kind, planned

if TYPE_CHECKING:
    from convrisk.api_client import Client
    from convrisk.api_client.client import ResourceClient

F = TypeVar("F")


def print_list(
    run: AppContext,
    kind: Kind,
    resource: Callable[[Client], ResourceClient[Any, Any, Any, F]],
    filters: F,
    *,
    limit: int | None,
    starting_after: str | None,
    ending_before: str | None = None,
    output: str | None,
    hint_more: bool,
) -> None:
    """Print a list page by page; compact JSON comes as JSON text (the local export path).

    `ending_before` walks towards the newest (oldest first), as records: the export path only
    walks forwards.
    """
    printer = run.printer(output)
    target = resource(run.client())
    going_on = cursor_option(ending_before)
    scanned = target.scanned_filters(filters)
    if scanned:
        # Filters the service lacks (DESIGN 5.2): said once, and the scan's progress shown.
        printer.hint(
            f"The service has no {' or '.join(scanned)} filter: convrisk reads every "
            f"{kind.noun} and keeps the ones that match (a scan; it can take a while)."
        )
        target.watch_scan(
            lambda read, matched: printer.progress(
                f"scanned {read:,} {kind.plural}, {matched:,} matching..."
            )
        )
    # A remote walk of every page asks for the next page while this one prints (not a scan,
    # whose progress prints as it reads, nor --as-curl, which shows requests and sends none).
    ahead = limit is None and not scanned and not getattr(run, "as_curl", False)
    target.read_ahead(ahead)
    try:
        # JSON text and ids alone are read going forward; a backward walk reads records.
        view = printer.view() if ending_before is None else "records"
        pages = target.iter_pages(
            filters,
            limit=limit,
            starting_after=starting_after,
            ending_before=ending_before,
            view=view,
        )
        printer.pages(kind, pages, view=view, hint_more=hint_more, cursor_option=going_on)
    except run.captured():
        if scanned or limit is None or limit > run.client().page_size:
            printer.hint(
                "--as-curl: only the first page's request is printed: each later page's "
                "cursor comes from the answer to the page before it."
            )
        raise
    finally:
        target.read_ahead(False)


def for_each_id(
    run: AppContext,
    kind: Kind,
    ids: IdList,
    action: Callable[[str], Mapping[str, Any]],
    *,
    output: str | None,
) -> None:
    """Run `action` per id and print each result; go on past a failure, reporting each.

    Every failure is printed with its id as it happens; at the end one Failures exception
    carries the first, so that main() exits with its code. An empty list is a success.
    A refused token or an unreachable service stops the loop at once, blaming no id.
    """
    from convrisk.api_client.errors import ConvriskError
    from convrisk.api_client.params import cut_id
    from convrisk.api_client.resources import MAX_ID_LENGTH

    printer = run.printer(output)
    if ids.from_stdin and ids.read is None:
        printer.reading_stdin("ids, one per line,")
    first: BaseException | None = None
    failed = 0
    captured = run.captured()
    with printer.records(kind, many=ids.many) as sink:
        for id in ids:
            try:
                row = action(id)
            except captured:
                continue  # --as-curl: printed, not sent; the next id's request needs no answer
            except ConvriskError as exc:
                # An id no service has (too long) is named by its start, as its error does.
                named = id if len(id) <= MAX_ID_LENGTH else cut_id(id)
                printer.error(describe(exc, remote=printer.remote, id=named, settings=run.settings))
                first = first or exc
                failed += 1
                if stops_the_loop(exc):
                    break
                continue
            sink.write([row])
        sink.failed = failed
    if first is not None:
        raise Failures(first, failed)


Resource = Callable[["Client"], "ResourceClient[Any, Any, Any, Any]"]


def plan_create(
    run: AppContext, kind: Kind, body: Mapping[str, Any], resource: Resource, output: str | None
) -> None:
    """--dry-run of a create: the body checked by the interface's rules, printed, not sent."""
    checked = resource(run.client()).check_create(body)
    sent = {key: value for key, value in checked.items() if value is not None}
    run.printer(output).one(plan_kind(kind, ids=False), planned("create", None, sent))


def plan_each_id(
    run: AppContext,
    kind: Kind,
    ids: IdList,
    operation: str,
    body: Mapping[str, Any],
    resource: Resource,
    output: str | None,
) -> None:
    """--dry-run of an update or delete: each id retrieved (read-only), the operation printed.

    A missing id is reported like any failure of several ids (exit 3); nothing is written.
    """
    target = resource(run.client())
    checked = target.check_update(body) if operation == "update" else body

    def check(id: str) -> dict[str, Any]:
        target.retrieve(id)
        return planned(operation, id, checked)

    for_each_id(run, plan_kind(kind), ids, check, output=output)


def guard_ids(run: AppContext, ids: IdList, what: str, max_affected: int | None, yes: bool) -> None:
    """The guards of a write to each of `ids` (cli/guard.py): ids from stdin are read (and
    counted) only when the count is needed."""
    from convrisk.cli import guard

    def count() -> int:
        """The ids from stdin, read now (said so when stdin is a terminal)."""
        run.printer().reading_stdin("ids, one per line,")
        return len(ids.read_all())

    guard.check_write(
        run,
        count=count if ids.from_stdin else len(ids.given),
        what=what,
        max_affected=max_affected,
        yes=yes,
        stdin_free=not ids.from_stdin,
    )


def delete_each(
    run: AppContext,
    kind: Kind,
    ids: IdList,
    yes: bool,
    output: str | None,
    resource: Resource,
    *,
    dry_run: bool = False,
    max_affected: int | None = None,
) -> None:
    """Delete each id after a confirmation on a terminal (or --yes); refuse without either.

    Prints `{"id": ..., "deleted": true}` per id that the answer says was deleted. A dry run asks
    nothing: it checks that each id exists and prints the deletions it would make. A protected
    profile's question (the count typed back, cli/guard.py) replaces the yes/no one.
    """
    from convrisk.cli import guard

    if dry_run:
        plan_each_id(run, kind, ids, "delete", {}, resource, output)
        return
    printer = run.printer(output)
    what = f"delete {kind.plural}"
    guard.refuse_read_only(run, what)
    # Ids from stdin leave stdin busy: the question goes to the controlling terminal.
    stdin_free = not ids.from_stdin
    ask = not yes and not guard.is_protected(run) and not getattr(run, "as_curl", False)
    if ask and not printer.can_ask(stdin_free=stdin_free):
        raise UsageProblem(
            f"Refusing to delete {kind.plural} without confirmation: there is no terminal "
            "to ask on. Pass --yes to delete.",
            param="--yes",
        )
    guard_ids(run, ids, what, max_affected, yes)
    if ask:
        if ids.from_stdin and ids.read is None:
            printer.reading_stdin("the ids to delete, one per line,")
        given = ids.read_all()  # ids from stdin are read first, to be shown in the question
        if given:
            shown = ", ".join(given[:5]) + (", ..." if len(given) > 5 else "")
            noun = kind.noun if len(given) == 1 else f"{len(given)} {kind.plural}"
            answer = printer.confirm(f"Delete {noun} ({shown}) for good?", stdin_free=stdin_free)
            if not answer:
                raise NotConfirmed("Aborted: nothing was deleted.")
    target = resource(run.client())

    def delete(id: str) -> dict[str, Any]:
        """Delete one id; the result is the service's answer (a 2xx that does not say deleted
        is an error)."""
        return dict(target.delete(id))

    for_each_id(run, DELETIONS, ids, delete, output=output)
