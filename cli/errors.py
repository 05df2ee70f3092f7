"""Errors the command line raises itself; `cli.app.main` turns each into an exit code."""

from __future__ import annotations


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
