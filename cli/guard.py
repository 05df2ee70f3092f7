"""The guards of a write (DESIGN 5.3): a read-only profile refuses it, a protected one shows a
banner and asks for the count typed back (or needs --yes), and --max-affected caps its count.

Every write command calls `check_write` once, before its first write; `undo` calls it too. A
dry run and `--as-curl` write nothing, so they pass without a word.
"""

from __future__ import annotations

from collections.abc import Callable

from convrisk.cli.context import AppContext
from convrisk.cli.errors import NotConfirmed, UsageProblem
from convrisk.cli.settings import mark_source

# A count, or how to get it when it costs something (ids from stdin, an import file to read).
Count = int | Callable[[], int] | None


def _sends_nothing(run: AppContext) -> bool:
    """Whether this run only prints its requests (--as-curl): nothing it does is a write."""
    return bool(getattr(run, "as_curl", False))


def is_protected(run: AppContext) -> bool:
    """Whether writes of this run go through the protected profile's banner and question."""
    return run.settings().protected and not _sends_nothing(run)


def refuse_read_only(run: AppContext, what: str) -> None:
    """A usage error (exit 2) naming the profile when it is read-only: call it before reading
    any input, so that nothing is read or sent for a write that cannot happen."""
    settings = run.settings()
    if settings.read_only and not _sends_nothing(run):
        source = mark_source(settings.sources, "read_only")
        raise UsageProblem(
            f"The profile {settings.profile!r} is read-only ({source}): "
            f"refusing to {what}; nothing was sent.",
            param="--profile",
        )


def refuse_early(run: AppContext, what: str, *, yes: bool, stdin_free: bool = True) -> None:
    """What `check_write` refuses without a count, checked before any input is read: a
    read-only profile, and a protected one with neither --yes nor a terminal to ask on."""
    refuse_read_only(run, what)
    if not yes and is_protected(run):
        _refuse_without_terminal(run, what, stdin_free)


def _refuse_without_terminal(run: AppContext, what: str, stdin_free: bool) -> None:
    """The protected profile's refusal when there is no terminal to ask on (exit 2)."""
    if not run.printer().can_ask(stdin_free=stdin_free):
        raise UsageProblem(
            f"The profile {run.settings().profile!r} is protected: refusing to {what} without "
            "confirmation, and there is no terminal to ask on. Pass --yes to go on; nothing "
            "was sent.",
            param="--yes",
        )


def check_write(
    run: AppContext,
    *,
    count: Count,
    what: str,
    max_affected: int | None,
    yes: bool,
    stdin_free: bool = True,
) -> None:
    """Let a write go on, or stop it before anything is written.

    `what` is the write as a verb phrase ("delete conversations"); `count` the number of records
    it will touch (None: not known; a callable is called only when the count is needed: for
    --max-affected or the protected question). Raises UsageProblem (exit 2) for a read-only
    profile, a count over `max_affected`, or a protected profile with neither a terminal nor
    `yes`; NotConfirmed (exit 1) when the count typed back is not the count. Nothing is printed
    or asked for an ordinary profile.
    """
    if _sends_nothing(run):
        return
    refuse_read_only(run, what)
    settings = run.settings()
    printer = run.printer()
    asking = settings.protected and not yes
    if asking:
        _refuse_without_terminal(run, what, stdin_free)
    known = count() if callable(count) and (asking or max_affected is not None) else count
    number = known if isinstance(known, int) else None
    if max_affected is not None:
        if number is None:
            raise UsageProblem(
                f"--max-affected {max_affected}: the number of records this would touch is not "
                "known before it runs; nothing was sent.",
                param="--max-affected",
            )
        if number > max_affected:
            raise UsageProblem(
                f"This would {what}: {_records(number)}, more than --max-affected "
                f"{max_affected:,}; nothing was sent.",
                param="--max-affected",
            )
    if not settings.protected or number == 0:  # nothing to write: nothing to confirm
        return
    size = "" if number is None else f": {_records(number)}"
    printer.banner(f"Protected profile {settings.profile!r} ({_where(run)}): {what}{size}.")
    if not asking:
        return
    expected = settings.profile if number is None else str(number)
    noun = "the profile's name" if number is None else "the number of records"
    typed = printer.type_back(f"Type {noun} ({expected}) to {what}: ", stdin_free=stdin_free)
    if typed is None:  # the terminal went away since can_ask
        raise UsageProblem(
            f"The profile {settings.profile!r} is protected and there is no terminal to ask "
            "on: pass --yes to go on; nothing was sent.",
            param="--yes",
        )
    if _normal(typed) != _normal(expected):
        said = "no answer" if not typed else f"the answer was not {expected}"
        raise NotConfirmed(f"Aborted ({said}): nothing was sent.")


def same_count(typed: str, number: int) -> bool:
    """Whether an answer typed back is this count, by the question's rule (1,000 is 1000)."""
    return _normal(typed) == str(number)


def _normal(text: str) -> str:
    """An answer without spaces and digit-group separators (1,000 is 1000)."""
    return text.strip().replace(",", "").replace("_", "")


def _records(number: int) -> str:
    return f"{number:,} record" if number == 1 else f"{number:,} records"


def _where(run: AppContext) -> str:
    """Where the writes go: the base_url (no credentials), or the database file."""
    settings = run.settings()
    if settings.base_url is not None:
        from convrisk.api_client.endpoint import shown_url

        return shown_url(settings.base_url)
    return f"database {settings.db}"
