"""`convrisk ui`: the terminal browser (cli/ui/browser.py), started only on a terminal."""

import os
import sys
import threading
from concurrent.futures import Future
from typing import Any

import typer

from convrisk.cli.context import AppContext, app_context
from convrisk.cli.errors import UsageProblem

PAGE = 50  # rows asked for at a time
WRITE_GRACE = 10.0  # seconds a quit waits for a write under way, so that it is journaled


def ui(ctx: typer.Context) -> int:
    """Browse conversations and risk profiles in the terminal: filter, mark, mute, pin,
    archive, delete, edit (q quits, ? shows the keys).

    Writes go through the profile's guards (read-only, protected) and the journal, as the
    commands' do.

    \b
    Example:
      convrisk ui
      convrisk --profile staging ui
    """
    if not (sys.stdout.isatty() and sys.stdin.isatty()):
        raise UsageProblem("convrisk ui needs a terminal: stdin and stdout must both be one.")
    run = app_context(ctx)
    if run.as_curl:
        raise UsageProblem(
            "--as-curl sends nothing, and `convrisk ui` shows the service's answers: run it "
            "without --as-curl.",
            param="--as-curl",
        )
    run.settings()  # broken settings fail here, as a command line's would
    client = run.client()
    # The first page is asked for before Textual is imported: the service (or SQLite) answers
    # while the screen is being built.
    first_page: Future[Any] = Future()

    def prefetch() -> None:
        try:
            first_page.set_result(client.conversations.list(None, limit=PAGE))
        except Exception as exc:
            first_page.set_exception(exc)

    threading.Thread(target=prefetch, name="convrisk-ui request", daemon=True).start()
    from convrisk.cli.ui.browser import Browser

    browser = Browser(run, page_size=PAGE, first_page=first_page)
    from convrisk.cli.output import cells

    # The screen shows "NaN" and "Infinity" as they are: no note on stderr under Textual.
    cells.tell_non_finite(None)
    code = browser.run()
    run.warn_to = None  # the terminal is back: a warning from here on goes to stderr
    for text in browser.warnings:  # from a write that ended as the screen closed
        run.printer().warning(text)
    _finish_writes(run)
    if any(thread.daemon and thread.name.startswith("convrisk-ui") for thread in _alive()):
        # A request still waiting for its answer (a service that hangs) must not hold up the
        # quit the user asked for: the terminal is already restored, so leave now.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code or 0)
    return code or 0


def _alive() -> list[threading.Thread]:
    """The threads still running."""
    return threading.enumerate()


def _finish_writes(run: AppContext) -> None:
    """Wait (at most WRITE_GRACE seconds in all) for the write under way when the user quit:
    a write the service got but the journal lacks could not be seen in history nor undone."""
    import time

    from convrisk.cli.ui.browser import WRITE

    writes = [t for t in _alive() if t.name == WRITE]
    if not writes:
        return
    run.printer().notice("Waiting for the write under way to finish…")
    deadline = time.monotonic() + WRITE_GRACE
    for thread in writes:
        thread.join(max(0.0, deadline - time.monotonic()))
