"""The `convrisk` console script: answers `convrisk --version` before loading the app.

`convrisk --version` alone is answered here with the standard library only (typer, click and
the app cost ~5x a bare interpreter to import); any other command line goes to `cli.app.main`,
which answers `--version` among other options too (`convrisk --debug --version`). Also runs as
`python -m cli`.
"""

import sys


def main() -> int:
    """Run convrisk with sys.argv and return the exit code."""
    if sys.argv[1:] == ["--version"]:
        from api_client import __version__  # the one place the version is written

        return _print_line(f"convrisk {__version__}")
    from cli.app import main as app_main

    return app_main()


def _print_line(text: str) -> int:
    # The one line printed outside cli/output.py: importing it would cost more than the answer.
    # A closed pipe is exit 0, quietly, as everywhere in convrisk (cli.app.main).
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    return 0


if __name__ == "__main__":
    sys.exit(main())
