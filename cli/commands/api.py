"""`convrisk api`: one request to the interface as it is, on either backend (DESIGN 4.4)."""

from typing import Annotated

import typer

from convrisk.cli import guard
from convrisk.cli.context import app_context
from convrisk.cli.errors import UsageProblem
from convrisk.cli.options import common as opt
from convrisk.cli.options import complete, values
from convrisk.cli.output.kinds import ANSWER

# Methods that carry no body: `-d` with them is a mistake, not a request to send.
_NO_BODY = ("GET", "DELETE", "HEAD")
# Methods that write nothing: every other one is a write to the guards (cli/guard.py).
_READS = ("GET", "HEAD")


def api(
    ctx: typer.Context,
    path: Annotated[
        str,
        typer.Argument(
            metavar="PATH",
            help="A path under /v1/, with its query string if any: /v1/conversations?muted=true",
            show_default=False,
            autocompletion=complete.api_paths,
        ),
    ],
    method: Annotated[
        str | None,
        typer.Option(
            "-X",
            "--method",
            metavar="METHOD",
            help="The HTTP method (default GET, or POST with -d).",
            show_default=False,
        ),
    ] = None,
    data: Annotated[
        str | None,
        typer.Option(
            "-d",
            "--data",
            metavar="JSON|@FILE|-",
            help="The request body: JSON text, @file.json, or - for stdin.",
            show_default=False,
        ),
    ] = None,
    paginate: Annotated[
        bool,
        typer.Option(
            "--paginate",
            help="Follow has_more over every page of a list; print each item as one JSON line.",
        ),
    ] = False,
    yes: opt.WriteYes = False,
    jq: opt.Jq = None,
) -> None:
    """Send one request to the interface and print its answer.

    The token, retries and timeout are the active profile's; locally the request goes through
    the same rules `convrisk serve` applies, without a socket, so both answer alike. An answer
    of 400 or more is printed too, with the error on stderr and its exit code (3 not found,
    4 authentication, 1 otherwise); a redirect is not followed (exit 1). With --jq the
    program runs on the body, or on each item with --paginate.

    \b
    Example:
      convrisk api '/v1/conversations?limit=2'
      convrisk api /v1/risk-profiles -d @profile.json
      convrisk api -X PUT /v1/risk-profiles/rp_01HVZ8Q2K4M6P8R0T2V4X6Z8B0 -d '{"score": 80}'
      convrisk api '/v1/conversations?muted=true' --paginate --jq .id
    """
    from convrisk.api_client.raw import api_target, check_paginate

    run = app_context(ctx)
    # Made first, so that every error line, usage errors included, is the plain `Error:` line.
    printer = run.printer("jsonl" if paginate else "json", json_errors=False)
    target = api_target(path)
    verb = _verb(method, data)
    writes = verb not in _READS
    what = f"send {verb} {path}"
    if writes:
        guard.refuse_early(run, what, yes=yes, stdin_free=data != "-")
    if data == "-" and verb not in _NO_BODY:
        printer.reading_stdin("the body of -d (JSON)")
    body = None if data is None else _body(data, verb)
    if paginate:
        check_paginate(verb, target)
    if writes:
        # One request writes one record at most in this interface.
        stdin_free = data != "-"
        guard.check_write(
            run, count=1, what=what, max_affected=None, yes=yes, stdin_free=stdin_free
        )
    client = run.client()
    if paginate:
        pages = client.raw_pages(target)
        try:
            printer.pages(ANSWER, pages, hint_more=False, cursor_option="starting_after={} in PATH")
        except run.captured():
            printer.hint(
                "--as-curl: only the first page's request is printed: each later page's "
                "cursor comes from the answer to the page before it."
            )
            raise
        return
    answer = client.send(verb, target, body)
    printer.answer(answer.body)
    if answer.gone:
        printer.notice(
            f"Note: the answer to {verb} was lost and its retry answered {answer.status}: an "
            "earlier attempt deleted it (as `conv delete` and `risk delete` report)."
        )
    if not answer.ok:
        raise answer.error()


def _verb(method: str | None, data: str | None) -> str:
    """-X in capitals (default GET, or POST with -d); a usage error for what is no method."""
    default = "POST" if data is not None else "GET"
    verb = (default if method is None else method).upper()  # -X "" is a mistake, not GET
    if not verb.isascii() or not verb.isalpha():
        raise UsageProblem(
            f"-X takes an HTTP method such as GET or PUT, not {method!r}.", param="-X"
        )
    return verb


def _body(data: str, verb: str) -> bytes:
    """The bytes of -d (JSON text, @file or stdin), checked to be one JSON value."""
    if verb in _NO_BODY:
        raise UsageProblem(f"-d sends a body, which {verb} does not take.", param="-d")
    text, source = values.read_json_argument(data, "-d")
    try:
        # Bytes that are not UTF-8 (stdin, or argv) arrive as lone surrogates.
        body = text.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageProblem(f"-d: {source} is not UTF-8 text.", param="-d") from None
    values.check_json(text, "-d", source)
    return body
