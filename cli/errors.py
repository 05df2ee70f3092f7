"""What an error means, in one place: the command line's own errors, and for any error the
message the user reads (with the id it concerns, and where a refused token came from) and the
exit code. cli/output/printer.py only prints the ErrorInfo made here; cli/app.py only returns the
code.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from click.exceptions import Abort, BadParameter, ClickException, MissingParameter, UsageError

# Exit codes (DESIGN section 3).
OK, FAILED, USAGE, NOT_FOUND, AUTHENTICATION, UNREACHABLE, INTERRUPTED = 0, 1, 2, 3, 4, 5, 130
# What each exit code means: the table of docs/reference/index.md is generated from this.
EXIT_CODES: dict[int, str] = {
    OK: "Success (also an empty list of ids, and an output pipe closed by its reader).",
    FAILED: "The service failed or refused the request; or something else failed: a record of "
    "an import, a --jq program, `sandbox verify` or `check` finding a difference, `config get` "
    "of a key not set. Also a question answered no (nothing changed, no `Error:`).",
    USAGE: "Usage or invalid input, caught before any request: nothing was sent or changed (the "
    "same on the local database and a remote service).",
    NOT_FOUND: "Not found.",
    AUTHENTICATION: "Authentication: the token is missing or refused; or a write the service "
    "does not permit (HTTP 403, `serve --read-only`).",
    UNREACHABLE: "The service cannot be reached (connection, timeout).",
    INTERRUPTED: "Interrupted (Ctrl-C).",
}


class CliError(Exception):
    """Base of the command line's own errors."""

    # The error's `type` in JSON error output.
    error_type = "usage_error"

    def __init__(self, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param


class UsageProblem(CliError):
    """Usage or input that is wrong, caught before any request was sent (exit 2)."""


class NotConfirmed(CliError):
    """The user answered no to a confirmation: nothing was changed (exit 1)."""


class NotSet(CliError):
    """`config get KEY` of a key the profile does not set (exit 1, nothing on stdout)."""


class ConfigLocked(CliError):
    """Another convrisk held the config file's lock past the wait: nothing was written (exit 1)."""

    error_type = "config_locked"


class JqFailed(CliError):
    """A --jq program failed on the data (a runtime error of jq): exit 1."""

    error_type = "jq_error"


class VerifyFailed(CliError):
    """`sandbox verify` found other requests than expected (exit 1)."""

    error_type = "verify_failed"


class CheckFailed(CliError):
    """`convrisk check` found the service answering otherwise than the sandbox (exit 1)."""

    error_type = "check_failed"


class OutputFailed(CliError):
    """stdout cannot be written (closed at start, a full disk, an I/O error): exit 1."""

    error_type = "output_error"


class StdoutClosed(Exception):
    """The reader of stdout went away (e.g. `| head -1`): stop quietly (exit 0)."""


class Failures(Exception):
    """Some of several ids failed; each was already reported. Exit with the first one's code."""

    def __init__(self, first: BaseException, count: int) -> None:
        super().__init__(f"{count} failed")
        self.first = first
        self.count = count


class RecordsFailed(Failures):
    """Some records of an import failed; each was reported with its line. Exit 1."""

    def __init__(self, message: str) -> None:
        super().__init__(Exception(message), 0)
        self.message = message


@dataclass
class ErrorInfo:
    """An error as the user sees it: one line, or one JSON object with the fields that apply."""

    type: str
    message: str
    param: str | None = None
    status: int | None = None
    id: str | None = None
    line_number: int | None = None  # the line of an import file the error is about

    def line(self) -> str:
        """`line <n>: <id>: <message> (HTTP <status>)`, each part only when it applies and adds
        something."""
        text = self.message
        about_the_line = self.line_number is not None and text.startswith(
            f"line {self.line_number}"
        )
        if self.id and not _names(text, _short(self.id)) and not about_the_line:
            text = f"{_short(self.id)}: {text}"
        if self.line_number is not None and not about_the_line:
            text = f"line {self.line_number}: {text}"
        if self.status is not None and f"HTTP {self.status}" not in text:
            text = f"{text} (HTTP {self.status})"
        return text

    def fields(self) -> dict[str, Any]:
        """type, message and the fields that apply (param, status, id, line)."""
        return self.body()["error"]  # type: ignore[no-any-return]

    def body(self) -> dict[str, Any]:
        """`{"error": {...}}` with only the fields that apply."""
        fields: dict[str, Any] = {"type": self.type, "message": self.message}
        if self.line_number is not None:
            fields["line"] = self.line_number
        for key in ("param", "status", "id"):
            value = getattr(self, key)
            if value is not None:
                fields[key] = value
        return {"error": fields}


# An id longer than this is no service's (api_client.resources.MAX_ID_LENGTH): a line names it
# by its start, as the error refusing it does.
_LONGEST_ID = 255


def _short(id: str) -> str:
    """The id as a line names it: whole, or only its start when it is longer than any id."""
    if len(id) <= _LONGEST_ID:
        return id
    from convrisk.api_client.params import cut_id

    return cut_id(id)


def _names(text: str, id: str) -> bool:
    """Whether a message already names the id, as it is or as a line shows it (escaped)."""
    if id in text:
        return True
    from convrisk.api_client.text import safe_line

    return safe_line(id) in text


class TokenFacts(Protocol):
    """What the settings say of the token and the database (cli.settings.Settings is one)."""

    @property
    def token(self) -> str | None: ...

    @property
    def db(self) -> Path: ...

    @property
    def sources(self) -> Mapping[str, str]: ...

    @property
    def config_path(self) -> Path: ...


def describe(
    exc: BaseException,
    *,
    remote: bool,
    id: str | None = None,
    settings: Callable[[], TokenFacts] | None = None,
    debug_hint: bool = False,
) -> ErrorInfo:
    """What the user is told about an error, with the id it concerns.

    A refused token or an unreachable service is not the id's fault: no id is named, and a
    refused token says where it came from (`settings`: the run's, read only then). A status is
    shown only for an answer of a remote service. `debug_hint` points an unexpected error to
    --debug for its traceback.
    """
    if stops_the_loop(exc):
        id = None
    info = _describe(exc, remote=remote, id=id)
    errors = _api_errors()
    if (
        errors is not None
        and isinstance(exc, errors.AuthenticationError)
        and not isinstance(exc, errors.PermissionDeniedError)  # the token was accepted
    ):
        info.message = f"{_token_origin(settings)}: {info.message}"
    if (
        errors is not None
        and isinstance(exc, errors.NotFoundError)
        and not (remote or exc.answered)
    ):
        # The local database said so (`convrisk api` answers as a service would, and a remote
        # one is named by its answer's status).
        info.message = f"{info.message.rstrip('.')} in {_database(settings)}"
    if debug_hint and info.type == "internal_error":
        info.message += " (run with --debug for the traceback)"
    return info


def _describe(exc: BaseException, *, remote: bool, id: str | None) -> ErrorInfo:
    if isinstance(exc, CliError):
        return ErrorInfo(exc.error_type, exc.message, param=exc.param, id=id)
    if isinstance(exc, ClickException):
        return _click_error(exc)
    errors = _api_errors()
    if errors is not None:
        if isinstance(exc, errors.APIError):
            # Only an error built from a real answer has a status to show; one raised by a
            # check before any request has none.
            status = exc.status if remote and exc.answered else None
            return ErrorInfo(exc.type, exc.message, param=exc.param, status=status, id=id)
        if isinstance(exc, errors.APITimeoutError):
            return ErrorInfo("timeout_error", exc.message, id=id)
        if isinstance(exc, errors.APIConnectionError):
            return ErrorInfo("connection_error", exc.message, id=id)
        if isinstance(exc, errors.ConvriskError):
            return ErrorInfo("api_error", exc.message, id=id)
    message = str(exc) or type(exc).__name__
    return ErrorInfo("internal_error", f"Unexpected {type(exc).__name__}: {message}", id=id)


def _click_error(exc: ClickException) -> ErrorInfo:
    """A usage error of click's (a bad or missing option), naming the option and the help."""
    param: str | None = None
    if isinstance(exc, BadParameter | MissingParameter) and exc.param is not None:
        opts = [o for o in exc.param.opts if o.startswith("--")] or exc.param.opts
        param = opts[0] if opts else exc.param.name
    message = exc.format_message()
    if isinstance(exc, UsageError) and exc.ctx is not None:
        message = f"{message.rstrip('.')} (see '{exc.ctx.command_path} --help')."
    return ErrorInfo("usage_error", message, param=param)


def _token_origin(settings: Callable[[], TokenFacts] | None) -> str:
    """Where the token in use came from, as a phrase (never the token itself)."""
    try:
        facts = settings() if settings is not None else None
    except UsageProblem:
        facts = None
    if facts is None:
        return "The service refused the token"
    source = facts.sources.get("token")
    if not facts.token or source is None:
        return "The service wants a token and none is set"
    if source.startswith("profile "):
        return f"The service refused the token of {source} in {facts.config_path}"
    return f"The service refused the token from {source}"


def _database(settings: Callable[[], TokenFacts] | None) -> str:
    """Where a local command looked, as a phrase: `the local database PATH`."""
    try:
        facts = settings() if settings is not None else None
    except UsageProblem:
        facts = None
    return "the local database" if facts is None else f"the local database {facts.db}"


def exit_code(exc: BaseException) -> int:
    """The exit code of an exception (DESIGN section 3)."""
    if isinstance(exc, RecordsFailed):
        return FAILED
    if isinstance(exc, Failures):
        return exit_code(exc.first)
    if isinstance(exc, UsageProblem | ClickException):
        return USAGE
    if isinstance(
        exc, NotConfirmed | NotSet | JqFailed | ConfigLocked | VerifyFailed | CheckFailed
    ):
        return FAILED
    if isinstance(exc, KeyboardInterrupt | Abort):
        return INTERRUPTED
    errors = _api_errors()
    if errors is not None:
        if isinstance(exc, errors.NotFoundError):
            return NOT_FOUND
        if isinstance(exc, errors.AuthenticationError):
            return AUTHENTICATION
        if isinstance(exc, errors.APIConnectionError):
            return UNREACHABLE
        if isinstance(exc, errors.InvalidRequestError) and not exc.answered:
            # Caught by a check before any request (either backend): the input is wrong, and
            # the same input fails the same way locally and remotely. A 400 answer stays 1.
            return USAGE
    return FAILED


def stops_the_loop(exc: BaseException) -> bool:
    """Whether an error would fail every remaining operation alike (unreachable, token)."""
    errors = _api_errors()
    return errors is not None and isinstance(
        exc, errors.APIConnectionError | errors.AuthenticationError
    )


def _api_errors() -> ModuleType | None:
    """The client's error module if it is loaded; if not, no exception can be one of its own
    (and loading it would cost start-up for nothing)."""
    return sys.modules.get("convrisk.api_client.errors")
