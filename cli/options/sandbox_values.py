"""The values of `convrisk sandbox`'s options: an HTTP method, a path glob, a jq program, and
the aimed fault rule of `sandbox fault add` checked as the sandbox checks it."""

from __future__ import annotations

from typing import Any

from convrisk.cli.errors import UsageProblem
from convrisk.cli.options.values import whole_number

# The longest method a fault rule takes (the sandbox's bound).
MAX_METHOD_LENGTH = 20


def http_method(text: str | None, *, needed: bool = False) -> str | None:
    """--method in capitals; a usage error for what is no HTTP method."""
    if text is None:
        if needed:
            raise UsageProblem(
                "--method M is needed (GET, POST, PUT, DELETE...).", param="--method"
            )
        return None
    if not text.isascii() or not text.isalpha():
        raise UsageProblem(
            f"--method takes an HTTP method such as GET or POST, not {text!r}.", param="--method"
        )
    return text.upper()


def path_glob(text: str | None, *, needed: bool = False, rule: bool = False) -> str | None:
    """--path GLOB, checked as the sandbox checks it (api_client.sandbox.fault_glob_problem):
    printable ASCII, no space, each [ closed by ], no set begun with ] or !]; a fault rule's
    at most MAX_FAULT_GLOB_LENGTH characters too."""
    from convrisk.api_client import sandbox

    if text is None:
        if needed:
            raise UsageProblem("--path GLOB is needed (e.g. '/v1/conversations*').", param="--path")
        return None
    if rule and len(text) > sandbox.MAX_FAULT_GLOB_LENGTH:
        raise UsageProblem(
            f"--path is over {sandbox.MAX_FAULT_GLOB_LENGTH} characters.", param="--path"
        )
    # The sandbox's routes take a glob of one kind (FAULT_GLOB) for the journal and the rules.
    problem = sandbox.fault_glob_problem(text)
    if problem is not None:
        raise UsageProblem(f"--path {text!r} is not a valid glob: {problem}.", param="--path")
    return text


def compile_jq(program: str, option: str) -> Any:
    """The jq program compiled (jq is loaded only now), or a usage error naming `option`."""
    import jq

    try:
        return jq.compile(program)
    except ValueError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        message = first.removeprefix("jq: error: ").rstrip(":")
        raise UsageProblem(f"{option} does not compile: {message}", param=option) from None


def fault_rule(
    method: str | None,
    path: str | None,
    status: str | None,
    drop: bool,
    drop_after: bool,
    times: str | None,
    after: str | None,
    delay: str | None,
    retry_after: str | None,
    body_jq: str | None,
) -> dict[str, Any]:
    """The rule the options describe, checked as the sandbox checks it (a usage error, exit 2,
    before anything is sent)."""
    from convrisk.api_client import sandbox

    if method == "*":
        verb: str | None = "*"
    else:
        verb = http_method(method, needed=True)
        if verb is not None and len(verb) > MAX_METHOD_LENGTH:
            raise UsageProblem(
                f"--method is over {MAX_METHOD_LENGTH} letters: no HTTP method is.",
                param="--method",
            )
    glob = path_glob(path, needed=True, rule=True)
    given = [
        name
        for name, value in (("--status", status), ("--drop", drop), ("--drop-after", drop_after))
        if value not in (None, False)
    ]
    if len(given) > 1:
        raise UsageProblem(
            f"Give one of --status, --drop and --drop-after, not {' and '.join(given)}.",
            param=given[1],
        )
    low, high = sandbox.FAULT_STATUSES
    most = sandbox.MAX_FAULT_COUNT
    rule: dict[str, Any] = {
        "method": verb,
        "path": glob,
        "status": None if status is None else whole_number(status, "--status", low, high),
        "drop": drop,
        "drop_after": drop_after,
        "times": 1 if times is None else whole_number(times, "--times", 1, most),
        "after": 0 if after is None else whole_number(after, "--after", 0, most),
        "delay_ms": 0
        if delay is None
        else whole_number(delay, "--delay", 0, sandbox.MAX_FAULT_DELAY_MS),
        "retry_after": None
        if retry_after is None
        else whole_number(retry_after, "--retry-after", 0, sandbox.MAX_FAULT_RETRY_AFTER),
        "body_jq": body_jq,
    }
    if retry_after is not None and status is None:
        raise UsageProblem(
            "--retry-after goes with --status (e.g. --status 503 --retry-after 1).",
            param="--retry-after",
        )
    if body_jq is not None:
        if len(body_jq) > sandbox.MAX_FAULT_JQ_LENGTH:
            raise UsageProblem(
                f"--body-jq is over {sandbox.MAX_FAULT_JQ_LENGTH} characters.", param="--body-jq"
            )
        if drop or drop_after:
            raise UsageProblem(
                "--body-jq changes the answer's body; a dropped connection sends none.",
                param="--body-jq",
            )
        compile_jq(body_jq, "--body-jq")
    if not given and not rule["delay_ms"] and body_jq is None:
        raise UsageProblem(
            "The rule does nothing: give --status N, --drop, --drop-after, --delay MS or "
            "--body-jq EXPR.",
            param="--status",
        )
    return rule
