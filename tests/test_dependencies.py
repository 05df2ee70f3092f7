"""What convrisk relies on in its dependencies: typer's click line through click's public API,
and no private module (a name starting with `_`) of any library."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import click
import pytest
import typer
import typer.core

# Slow (about a second each: every module of the code read and parsed): out of the quick loop.
pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parent.parent
OURS = {"convrisk", "bench", "tests"}
# The folders the code lives in (installed under `convrisk.`), and the scripts and tests.
FOLDERS = ["api_client", "bench", "cli", "local_backend", "tests"]


def private_imports(path: Path) -> list[str]:
    """`module` or `module.name` for each import of a library's private module or name."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            modules = [(alias.name, "") for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [(node.module, alias.name) for alias in node.names]
        else:
            continue
        for module, name in modules:
            top = module.split(".")[0]
            if top in OURS or top in sys.stdlib_module_names or top == "__future__":
                continue
            if any(part.startswith("_") for part in [*module.split("."), name] if part):
                found.append(f"{path.relative_to(ROOT)}: {module}{'.' + name if name else ''}")
    return found


def test_no_code_imports_a_private_module_of_a_library() -> None:
    files = [p for d in FOLDERS for p in sorted((ROOT / d).rglob("*.py"))]
    files += sorted((ROOT / "convrisk").glob("*.py"))  # beside its links to the packages
    assert files
    assert [hit for path in files for hit in private_imports(path)] == []


def test_typer_builds_on_the_click_that_convrisk_imports() -> None:
    """typer 0.26 and later vendor click as typer._click: their errors and commands would not
    be click's, and every usage error would become an unexpected one. pyproject.toml pins typer
    below 0.26; this fails at once if an installed typer is not built on `click`."""
    assert issubclass(typer.core.TyperGroup, click.Group)
    assert issubclass(typer.core.TyperCommand, click.Command)
    assert typer.Exit is click.exceptions.Exit
    assert typer.BadParameter is click.BadParameter
