"""README.md stays true to the command line: every command and option of `--help` is in its
command reference, every `convrisk ...` command it shows parses, and its Quick start is the two
commands that the fresh-machine promise and `.ci/run` rely on."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.core import Command, Context
from click.exceptions import Exit, UsageError
from typer.core import TyperGroup

from convrisk.cli.app import command
from convrisk.cli.context import AppContext

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def section(title: str) -> str:
    """The text under a `## title` heading, up to the next `## ` heading."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## )", README, re.M | re.S)
    assert match, f"README has no '## {title}' section"
    return match.group(1)


def shell_blocks(text: str) -> list[str]:
    """The contents of the ```sh code blocks."""
    return re.findall(r"^```sh\n(.*?)^```", text, re.M | re.S)


def walk(cmd: Command, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Command]]:
    yield path, cmd
    for name, sub in sorted(getattr(cmd, "commands", {}).items()):
        yield from walk(sub, (*path, name))


def convrisk_commands(script: str) -> Iterator[list[str]]:
    """The argument lists of every `convrisk ...` command in a shell snippet (pipes, `&&`,
    `$(...)`, env prefixes and comments understood)."""
    for line in script.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        segment: list[str] = []
        for token in [*lexer, ";"]:
            if token and set(token) <= set("();<>|&"):
                while segment and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", segment[0]):
                    segment.pop(0)
                if segment and Path(segment[0]).name == "convrisk":
                    yield segment[1:]
                segment = []
            else:
                segment.append(token)


def parse(args: list[str]) -> None:
    """Parse a command line like convrisk would, down to its command, without running it."""
    cmd: Command = command()
    try:
        ctx: Context = cmd.make_context("convrisk", list(args), obj=AppContext())
        while isinstance(cmd, TyperGroup):
            rest = [*ctx._protected_args, *ctx.args]
            assert rest, f"no command in {args}"
            name, sub, rest = cmd.resolve_command(ctx, rest)
            assert name is not None and sub is not None
            ctx = sub.make_context(name, rest, parent=ctx)
            cmd = sub
    except Exit:  # --help or --version: parsed fine
        pass


def test_every_readme_command_parses() -> None:
    commands = [args for block in shell_blocks(README) for args in convrisk_commands(block)]
    assert len(commands) > 40
    for args in commands:
        try:
            parse(args)
        except UsageError as exc:
            pytest.fail(f"README: convrisk {shlex.join(args)}: {exc.format_message()}")


def test_every_help_example_parses() -> None:
    for path, cmd in walk(command()):
        examples = (cmd.help or "").split("Example:", 1)[1]
        for args in convrisk_commands(examples):
            try:
                parse(args)
            except UsageError as exc:
                pytest.fail(f"help of {path}: convrisk {shlex.join(args)}: {exc.format_message()}")


def test_the_parser_check_catches_mistakes() -> None:
    for wrong in (["conv", "lst"], ["conv", "list", "--mute"], ["risk", "create", "--score", "1"]):
        with pytest.raises(UsageError):
            parse(wrong)


def test_quick_start_is_two_commands_install_and_run_then_test() -> None:
    blocks = shell_blocks(section("Quick start"))
    assert len(blocks) == 2
    run, test = (block.strip() for block in blocks)
    assert "\n" not in run and "\n" not in test
    assert run.startswith("python3 -m venv .venv && .venv/bin/pip install . && ")
    assert "convrisk conv create" in run and run.endswith("convrisk conv list")
    assert (
        test == "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/pytest -q"
    )


def test_ci_runs_the_readme_test_command() -> None:
    test = shell_blocks(section("Quick start"))[1].strip()
    shown = subprocess.run(
        ["bash", str(ROOT / ".ci" / "run")],
        env={**os.environ, "CI_RUN_PRINT_TEST_COMMAND": "1"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    assert shown.stdout.strip() == test


def test_the_reference_links_the_decisions_page() -> None:
    assert "(docs/decisions.md)" in README
    assert (ROOT / "docs" / "decisions.md").is_file()


def test_the_ci_recipe_deletes_only_what_it_created() -> None:
    """It used to end with `conv list --archived --all -o id | conv delete - --yes`, which
    deleted every archived conversation of the service, not only the job's own."""
    recipe = next(b for b in shell_blocks(section("Recipes")) if "set -euo pipefail" in b)
    commands = list(convrisk_commands(recipe))
    deletes = [args for args in commands if args[:2] == ["conv", "delete"]]
    assert deletes == [["conv", "delete", "$conv_id", "--yes"]]
    assert ["conv", "create", "--contact-id", "c_ci", "-o", "id"] in commands
    assert not any("list" in args for args in commands)


def test_the_layout_lists_every_module_and_only_modules_that_exist() -> None:
    block = re.search(r"^Layout\..*?^```text\n(.*?)^```", section("Development"), re.M | re.S)
    assert block, "README's Development section has no Layout block"
    listed: set[str] = set()
    package = ""
    for line in block.group(1).splitlines():
        name = line.split()[0]
        if not line.startswith(" "):
            package = name
        elif name.endswith(".py"):
            listed.add(package + name)
    modules = {
        f"{path.parent.name}/{path.name}"
        for folder in ("api_client", "local_backend", "cli")
        for path in (ROOT / folder).glob("*.py")
        if path.name != "__init__.py"
    }
    assert sorted(modules - listed) == [], "modules missing from README's layout"
    assert sorted(listed - modules) == [], "README's layout names modules that do not exist"
