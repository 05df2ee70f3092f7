"""What an error means: the command line's own errors, and the exit code of any error."""

from __future__ import annotations

import sys
from types import ModuleType

from click.exceptions import Abort, ClickException

# Exit codes (DESIGN section 3).
OK, FAILED, USAGE, NOT_FOUND, AUTHENTICATION, UNREACHABLE, INTERRUPTED = 0, 1, 2, 3, 4, 5, 130


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


class JqFailed(CliError):
    """A --jq program failed on the data (a runtime error of jq): exit 1."""

    error_type = "jq_error"


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


def exit_code(exc: BaseException) -> int:
    """The exit code of an exception (DESIGN section 3)."""
    if isinstance(exc, RecordsFailed):
        return FAILED
    if isinstance(exc, Failures):
        return exit_code(exc.first)
    if isinstance(exc, UsageProblem | ClickException):
        return USAGE
    if isinstance(exc, NotConfirmed | NotSet | JqFailed):
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
