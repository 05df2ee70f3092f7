"""The `convrisk` console script: answers `--version` and `--help` before loading the app.

Importing typer and click alone costs about 6x a bare interpreter; these two answers need
neither. `convrisk --version` prints the version from api_client/__init__.py (its one place);
`convrisk --help` (or `-h`) prints cli/root_help.txt, the app's own root help at 80 columns or
more (tests/e2e/test_version_and_help.py keeps the two identical). Anything else, a narrower
terminal, or shell completion at work, goes to `cli.app.main`, which answers both as well. Also
runs as `python -m convrisk.cli`.
"""

import os
import sys

# click wraps help to the terminal's width up to 80 columns: from 80 on, the text is the same.
HELP_COLUMNS = 80
# typer's shell completion runs the program with this set; the app must answer it.
COMPLETION_VARIABLE = "_CONVRISK_COMPLETE"


def main() -> int:
    """Run convrisk with sys.argv and return the exit code."""
    args = sys.argv[1:]
    if COMPLETION_VARIABLE not in os.environ:
        if args == ["--version"]:
            from convrisk.api_client import __version__

            return _print(f"convrisk {__version__}\n")
        if args in (["--help"], ["-h"]) and _columns() >= HELP_COLUMNS:
            try:
                text = root_help()
            except OSError:  # a packaging without the file: the app renders the help
                text = ""
            if text:
                return _print(text)
    from convrisk.cli.app import main as app_main

    code = app_main()
    if code == 130:
        # Interrupted, and exiting: a second Ctrl-C must not kill the exit half-way.
        import signal

        signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The process ends next. Its final garbage collection would visit every object that typer,
    # click and pydantic made at import, only to free memory the exit frees anyway (40-100 ms,
    # measured: docs/performance.md). Frozen objects are left out of it; atexit handlers still
    # run and the standard streams are still flushed (everything else was closed by the app).
    import gc

    gc.freeze()
    return code


def root_help() -> str:
    """The stored text of `convrisk --help` (at 80 columns or more)."""
    with open(os.path.join(os.path.dirname(__file__), "root_help.txt"), encoding="utf-8") as f:
        return f.read()


def _columns() -> int:
    # shutil.get_terminal_size's rule (what click reads), without importing shutil.
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns > 0:
        return columns
    stdout = sys.__stdout__
    try:
        return (os.get_terminal_size(stdout.fileno()).columns if stdout else 0) or 80
    except (ValueError, OSError):
        return 80


def _print(text: str) -> int:
    # Printed here, not through cli/output/printer.py: importing it would cost more than the answer.
    # A closed pipe is exit 0, quietly, as everywhere in convrisk (cli.app.main).
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    return 0


if __name__ == "__main__":
    sys.exit(main())
