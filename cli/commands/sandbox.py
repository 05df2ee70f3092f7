"""`convrisk sandbox`: the request journal, aimed faults (`sandbox fault`), reset, snapshot and
restore of a `convrisk serve` (DESIGN 5.4, 6.4), through its admin routes."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from convrisk.cli import guard
from convrisk.cli.commands.base import Group
from convrisk.cli.context import AppContext, app_context
from convrisk.cli.errors import UsageProblem, VerifyFailed
from convrisk.cli.options import common as opt
from convrisk.cli.options import values
from convrisk.cli.options.sandbox_values import compile_jq, fault_rule, http_method, path_glob
from convrisk.cli.output.kinds import FAULT_RULES, REQUESTS

if TYPE_CHECKING:
    from convrisk.api_client.sandbox import Send

app = typer.Typer(
    help="""A `convrisk serve` sandbox as a test double: what it was sent, aimed faults, reset,
    snapshot and restore (the profile's base_url and token).

    \b
    Example:
      convrisk sandbox reset
      convrisk sandbox fault add --method POST --path /v1/conversations --status 503
      convrisk sandbox verify --method POST --path /v1/conversations --count 1
      convrisk sandbox requests --path '/v1/risk-profiles/*' -o json
    """,
    rich_markup_mode=None,
    no_args_is_help=True,
)

Method = Annotated[
    str | None,
    typer.Option("--method", metavar="M", help="Only requests of this HTTP method (GET, POST...)."),
]
PathGlob = Annotated[
    str | None,
    typer.Option(
        "--path",
        metavar="GLOB",
        help="Only requests whose path (without the query) matches this glob: * ? [...].",
    ),
]


def sandbox_send(run: AppContext) -> Send:
    """How to reach the sandbox's admin routes: the remote backend's one request path."""
    settings = run.settings()
    if not settings.is_remote:
        raise UsageProblem(
            "`convrisk sandbox` talks to a running `convrisk serve`: set base_url (--base-url "
            "URL or CONVRISK_BASE_URL) and its token; the local database has no sandbox.",
            param="--base-url",
        )
    return run.client().send


@app.command("requests")
def requests(
    ctx: typer.Context,
    method: Method = None,
    path: PathGlob = None,
    status: Annotated[
        str | None,
        typer.Option("--status", metavar="N", help="Only requests answered with this status."),
    ] = None,
    output: opt.Output = None,
) -> None:
    """List the requests the sandbox received, oldest first (its admin requests are not among
    them). The journal keeps the most recent ones; a note says how many older ones it dropped.

    \b
    Example:
      convrisk sandbox requests
      convrisk sandbox requests --method POST --path '/v1/conversations*' -o json
      convrisk sandbox requests --status 404 -o jsonl
    """
    from convrisk.api_client import sandbox

    run = app_context(ctx)
    printer = run.printer(output)
    printer.format_for(REQUESTS)
    verb, glob = http_method(method), path_glob(path)
    code = None if status is None else values.whole_number(status, "--status", low=100, high=599)
    journal = sandbox.requests(sandbox_send(run), method=verb, path=glob, status=code)
    from convrisk.api_client.page import Page

    page = Page(False, records=cast("list[Any]", journal.requests))
    printer.pages(REQUESTS, [page], hint_more=False)
    if journal.dropped:
        printer.hint(
            f"The journal dropped its {journal.dropped:,} oldest requests (it keeps the most "
            "recent); they are not listed."
        )


@app.command("verify")
def verify(
    ctx: typer.Context,
    method: Method = None,
    path: PathGlob = None,
    count: Annotated[
        str | None,
        typer.Option("--count", metavar="N", help="Exactly N requests must match."),
    ] = None,
    at_least: Annotated[
        str | None,
        typer.Option("--at-least", metavar="N", help="N or more must match (default 1)."),
    ] = None,
    body_jq: Annotated[
        str | None,
        typer.Option(
            "--body-jq",
            metavar="EXPR",
            help="Only requests whose JSON body makes this jq program true (not false or null).",
        ),
    ] = None,
) -> None:
    """Check that the sandbox received the requests a test expects: exit 0 when it did, else
    exit 1 with the near misses (the same path with another method, the same method on another
    path, a body the program refused).

    \b
    Example:
      convrisk sandbox verify --method POST --path /v1/conversations --count 1
      convrisk sandbox verify --method PUT --path '/v1/conversations/*' --at-least 2
      convrisk sandbox verify --method POST --path /v1/risk-profiles --body-jq '.score > 50'
    """
    from convrisk.api_client import sandbox

    run = app_context(ctx)
    printer = run.printer()
    verb, glob = http_method(method, needed=True), path_glob(path, needed=True)
    assert verb is not None and glob is not None
    if count is not None and at_least is not None:
        raise UsageProblem("Give --count or --at-least, not both.", param="--count")
    exact = None if count is None else values.whole_number(count, "--count", low=0)
    least = 1 if at_least is None else values.whole_number(at_least, "--at-least", low=0)
    holds_body = _body_test(body_jq)  # compiled before anything is sent
    verdict = sandbox.verify(
        sandbox_send(run),
        verb,
        glob,
        count=exact,
        at_least=least,
        body_test=holds_body,
        body_what=body_jq,
    )
    if verdict.held:
        printer.line(verdict.verified)
        return
    for line in verdict.explanation:
        printer.notice(line)
    raise VerifyFailed(verdict.failure)


def _body_test(program: str | None) -> Callable[[dict[str, Any]], str | None]:
    """What --body-jq makes of a recorded request: None when its body passes, else why not.

    Compiled before any request is sent: a program that does not compile is exit 2.
    """
    if program is None:
        return lambda entry: None
    import json

    compiled = compile_jq(program, "--body-jq")

    def test(entry: dict[str, Any]) -> str | None:
        body = entry.get("body")
        if entry.get("body_truncated"):
            return "its body was cut short in the journal"
        if not isinstance(body, str) or not body:
            return "it has no body"
        try:
            value = json.loads(body)
        except (ValueError, RecursionError):
            return "its body is not JSON"
        try:
            results = compiled.input_value(value).all()
        except ValueError as exc:
            return f"--body-jq failed on its body: {str(exc).strip().splitlines()[0]}"
        if results and results[0] is not False and results[0] is not None:
            return None
        return "--body-jq is false on its body"

    return test


fault_app = typer.Typer(
    help="""Aimed faults: make the requests a test names fail, as WireMock's stubs do. Rules
    apply in the order added; `sandbox reset` clears them.

    \b
    Example:
      convrisk sandbox fault add --method POST --path /v1/conversations --status 503 \\
        --retry-after 1
      convrisk sandbox fault list
      convrisk sandbox fault clear
    """,
    rich_markup_mode=None,
    no_args_is_help=True,
)


# Its commands get the global options with the rest (base.with_global_options, as the group is
# built).
app.add_typer(fault_app, name="fault", cls=Group)


@fault_app.command("add")
def fault_add(
    ctx: typer.Context,
    method: Annotated[
        str | None,
        typer.Option(
            "--method", metavar="M", help="The HTTP method it aims at (any case), or * for any."
        ),
    ] = None,
    path: Annotated[
        str | None,
        typer.Option(
            "--path",
            metavar="GLOB",
            help="The paths it aims at (without the query): a glob, * ? [...], as `sandbox "
            "requests --path` takes.",
        ),
    ] = None,
    status: Annotated[
        str | None,
        typer.Option(
            "--status",
            metavar="N",
            help="400 to 599: answer N in the error shape instead of doing the operation. 200 "
            "to 399: do it and send its answer with status N.",
        ),
    ] = None,
    drop: Annotated[
        bool,
        typer.Option("--drop", help="Close the connection before doing the operation."),
    ] = False,
    drop_after: Annotated[
        bool,
        typer.Option(
            "--drop-after", help="Do the operation, then close the connection without an answer."
        ),
    ] = False,
    times: Annotated[
        str | None,
        typer.Option("--times", metavar="N", help="Fire on N matching requests (default 1)."),
    ] = None,
    after: Annotated[
        str | None,
        typer.Option(
            "--after", metavar="N", help="Let the first N matching requests through (default 0)."
        ),
    ] = None,
    delay: Annotated[
        str | None,
        typer.Option(
            "--delay", metavar="MS", help="Wait MS milliseconds first (alone: only a delay)."
        ),
    ] = None,
    retry_after: Annotated[
        str | None,
        typer.Option(
            "--retry-after", metavar="S", help="Send Retry-After: S with the --status answer."
        ),
    ] = None,
    body_jq: Annotated[
        str | None,
        typer.Option(
            "--body-jq",
            metavar="EXPR",
            help="Send the first output of this jq program on the answer's body instead (the "
            "error shape, or the operation's answer); one that fails as it runs makes a 500 "
            "naming the rule.",
        ),
    ] = None,
    output: opt.Output = None,
) -> None:
    """Add an aimed fault rule, after those already there. A request is offered to the rules in
    order: each rule it matches that is not spent counts it; the first --after it lets through
    to the next rule, the --times after those it fires on, and the offer stops there. A rule
    that fires stands in for a random fault of `serve --faults`. The journal (`sandbox
    requests`) names the rule that fired on each request.

    \b
    Example:
      convrisk sandbox fault add --method POST --path /v1/conversations --status 503 \\
        --retry-after 1
      convrisk sandbox fault add --method '*' --path '/v1/risk-profiles/*' --drop --after 2
      convrisk sandbox fault add --method GET --path /v1/conversations --delay 1500 --times 3
      convrisk sandbox fault add --method GET --path /v1/conversations --body-jq '.data = []'
    """
    from convrisk.api_client import sandbox

    run = app_context(ctx)
    printer = run.printer(output)
    printer.format_for(FAULT_RULES)
    rule = fault_rule(
        method, path, status, drop, drop_after, times, after, delay, retry_after, body_jq
    )
    printer.one(FAULT_RULES, sandbox.add_fault(sandbox_send(run), rule))


@fault_app.command("list")
def fault_list(ctx: typer.Context, output: opt.Output = None) -> None:
    """List the aimed fault rules in the order added: what each does, and how many matching
    requests it has seen and fired on (a rule that never matched: 0 and 0).

    \b
    Example:
      convrisk sandbox fault list
      convrisk sandbox fault list -o json
    """
    from convrisk.api_client import sandbox
    from convrisk.api_client.page import Page

    run = app_context(ctx)
    printer = run.printer(output)
    printer.format_for(FAULT_RULES)
    rules = sandbox.faults(sandbox_send(run))
    page: Page[Any] = Page(False, records=cast("list[Any]", rules))
    printer.pages(FAULT_RULES, [page], hint_more=False)


@fault_app.command("clear")
def fault_clear(ctx: typer.Context) -> None:
    """Remove every aimed fault rule (the request journal is kept; `sandbox reset` clears both).

    \b
    Example:
      convrisk sandbox fault clear
    """
    from convrisk.api_client import sandbox

    run = app_context(ctx)
    cleared = sandbox.clear_faults(sandbox_send(run))
    rules = "fault rule" if cleared == 1 else "fault rules"
    run.printer().notice(f"Removed {cleared:,} {rules}.")


@app.command("reset")
def reset(ctx: typer.Context, yes: opt.WriteYes = False) -> None:
    """Empty the sandbox: every conversation and risk profile, the idempotency keys, the request
    journal and the aimed fault rules. The ids of `serve --seed`, the time of `serve --clock` and
    the seeded faults and latency of `serve --faults/--latency` start over, so each test that
    resets first gets the same ids, times and faults.

    \b
    Example:
      convrisk sandbox reset
    """
    from convrisk.api_client import sandbox

    run = app_context(ctx)
    what = "reset the sandbox (delete every record)"
    guard.refuse_early(run, what, yes=yes)
    send = sandbox_send(run)
    guard.check_write(run, count=None, what=what, max_affected=None, yes=yes)
    sandbox.reset(send)
    run.printer().notice(
        "The sandbox is empty: no record, no idempotency key, no request, no fault rule."
    )


@app.command("snapshot")
def snapshot(
    ctx: typer.Context,
    file: Annotated[str, typer.Argument(metavar="FILE|-", help="Where to write it; - for stdout.")],
) -> None:
    """Write every record of the sandbox as JSON lines: each line a record as `conv list -o
    jsonl` prints it, with a "resource" key first; conversations, then risk profiles, each
    oldest first. `sandbox restore` reads it back.

    \b
    Example:
      convrisk sandbox snapshot seed.jsonl
      convrisk sandbox snapshot - | gzip > seed.jsonl.gz
    """
    from convrisk.api_client import sandbox

    run = app_context(ctx)
    printer = run.printer()
    if not file:
        raise UsageProblem("FILE is empty: give a file name, or - for stdout.", param="FILE")
    data = sandbox.snapshot(sandbox_send(run))
    if file == "-":
        if printer.stdout_is_terminal():
            for line in data.decode("utf-8", errors="replace").splitlines():
                printer.line(line)
        else:
            printer.write_bytes(data)
        return
    _write_whole(Path(file), data)
    printer.notice(f"{_records(data)} written to {file}.")


def _write_whole(path: Path, data: bytes) -> None:
    """Write `data` to `path` whole or not at all: an existing file stays as it was on failure."""
    from convrisk.api_client.sandbox import write_whole

    try:
        write_whole(path, data)
    except OSError as exc:
        raise UsageProblem(f"Cannot write {path}: {exc.strerror or exc}.", param="FILE") from None


def _records(data: bytes) -> str:
    count = sum(1 for line in data.splitlines() if line.strip())
    return f"{count:,} record" if count == 1 else f"{count:,} records"


@app.command("restore")
def restore(
    ctx: typer.Context,
    file: Annotated[str, typer.Argument(metavar="FILE|-", help="A snapshot; - for stdin.")],
    yes: opt.WriteYes = False,
) -> None:
    """Replace every record of the sandbox with those of a snapshot (ids and times included).
    All or nothing: a snapshot the sandbox refuses changes nothing.

    \b
    Example:
      convrisk sandbox restore seed.jsonl
      gunzip -c seed.jsonl.gz | convrisk sandbox restore -
    """
    from convrisk.api_client import sandbox

    run = app_context(ctx)
    what = "replace every record of the sandbox"
    guard.refuse_early(run, what, yes=yes, stdin_free=file != "-")
    send = sandbox_send(run)
    data = _read_snapshot(run, file, sandbox.MAX_SNAPSHOT_BYTES)
    count = _check_snapshot(data, file)
    guard.check_write(
        run, count=count, what=what, max_affected=None, yes=yes, stdin_free=file != "-"
    )
    restored = sandbox.restore(send, data)
    parts = [_counted(number, name.replace("_", " ")) for name, number in restored.items()]
    run.printer().notice(f"Restored {' and '.join(parts) or 'nothing'}.")


def _counted(number: int, plural: str) -> str:
    """`1 conversation`, `2 conversations`."""
    return f"{number:,} {plural.removesuffix('s') if number == 1 else plural}"


def _read_snapshot(run: AppContext, file: str, cap: int) -> bytes:
    """The bytes of FILE (or stdin), refused over `cap` without reading further."""
    if file == "-":
        run.printer().reading_stdin("the snapshot (JSON lines)")
        data = sys.stdin.buffer.read(cap + 1)
    else:
        try:
            with open(file, "rb") as source:
                data = source.read(cap + 1)
        except OSError as exc:
            raise UsageProblem(
                f"Cannot read {file}: {exc.strerror or exc}.", param="FILE"
            ) from None
    if len(data) > cap:
        raise UsageProblem(
            f"{file} is over {cap // (1024 * 1024)} MiB, the most a snapshot may hold; nothing "
            "was sent.",
            param="FILE",
        )
    return data


def _check_snapshot(data: bytes, file: str) -> int:
    """The number of records of a snapshot, or a usage error naming its first bad line."""
    import json

    where = "stdin" if file == "-" else file
    count = 0
    for number, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        problem = None
        try:
            record = json.loads(line.decode("utf-8"))
        except UnicodeDecodeError:
            problem = "is not UTF-8 text"
        except (ValueError, RecursionError):
            problem = "is not JSON"
        else:
            if not isinstance(record, dict):
                problem = "is not a JSON object"
            elif record.get("resource") not in ("conversations", "risk_profiles"):
                problem = 'has no "resource" of conversations or risk_profiles'
        if problem is not None:
            raise UsageProblem(
                f"{where}: line {number} {problem}: it is not a snapshot; nothing was sent.",
                param="FILE",
            )
        count += 1
    return count
