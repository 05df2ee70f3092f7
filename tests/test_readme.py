"""README.md is the front door and stays true to the command line: at most 300 lines, its Quick
start is the two commands that the fresh-machine promise and `.ci/run` rely on, every
`convrisk ...` command it and the guide pages show parses, and every relative link in README.md
and docs/ leads to a file (and heading) that exists. The reference of every command and option is
generated into docs/reference/ and checked by its own tests."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

import pytest
from click.core import Command, Context
from click.exceptions import Exit, UsageError
from typer.core import TyperGroup

from convrisk.cli.app import command
from convrisk.cli.context import AppContext

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
GUIDE = sorted((ROOT / "docs" / "guide").glob("*.md"))
DEVELOPMENT = ROOT / "docs" / "guide" / "development.md"
# Every Markdown page whose links must lead somewhere: README.md and all of docs/.
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,}).*?^ {0,3}\1[`~]*[ \t]*$", re.M | re.S)


def section(title: str, text: str = README) -> str:
    """The text under a `## title` heading, up to the next `## ` heading or the end."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"no '## {title}' section"
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


def test_every_command_of_the_readme_and_the_guide_parses() -> None:
    pages = [ROOT / "README.md", *GUIDE]
    failures, count = [], 0
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for args in (args for block in shell_blocks(text) for args in convrisk_commands(block)):
            count += 1
            try:
                parse(args)
            except UsageError as exc:
                name = page.relative_to(ROOT)
                failures.append(f"{name}: convrisk {shlex.join(args)}: {exc.format_message()}")
    assert count > 40
    assert not failures, "\n".join(failures)


def test_the_readme_is_at_most_300_lines() -> None:
    assert len(README.splitlines()) <= 300


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
    install = "python3 -m venv .venv && .venv/bin/pip install -e '.[test]'"
    assert test == f"{install} && .venv/bin/pytest -q -n auto"


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
    layout = section("Layout", DEVELOPMENT.read_text(encoding="utf-8"))
    block = re.search(r"^```text\n(.*?)^```", layout, re.M | re.S)
    assert block, "docs/guide/development.md's Layout section has no ```text block"
    listed: set[str] = set()
    folders: list[str] = []  # the folder of each indentation level, as the block nests them
    for line in block.group(1).splitlines():
        name = line.split()[0]
        level = (len(line) - len(line.lstrip(" "))) // 2
        del folders[level:]
        if name.endswith("/"):
            folders.append(name)
        elif name.endswith(".py"):
            listed.add("".join(folders) + name)
    modules = {
        path.relative_to(ROOT).as_posix()
        for folder in ("api_client", "local_backend", "cli")
        for path in (ROOT / folder).rglob("*.py")
        if path.name != "__init__.py" and "__pycache__" not in path.parts
    }
    # convrisk/ holds the library beside its links to the three folders (not followed).
    modules |= {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "convrisk").glob("*.py")
        if path.name != "__init__.py"
    }
    assert sorted(modules - listed) == [], "modules missing from the layout"
    assert sorted(listed - modules) == [], "the layout names modules that do not exist"


def without_code(text: str) -> str:
    """The page with its fenced code blocks and inline code spans blanked out."""
    text = FENCE.sub("", text)
    return re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", text, flags=re.S)


def anchors(page: Path) -> set[str]:
    """The `#anchor`s a page has, as GitHub makes them: each heading lowercased, its punctuation
    dropped, its spaces made hyphens, a repeat given -1, -2...; and any HTML id or name."""
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    found: set[str] = set(re.findall(r"""<[^>]*\b(?:id|name)=["']([^"']+)["']""", text))
    seen: dict[str, int] = {}
    for heading in re.findall(r"^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$", text, re.M):
        heading = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        found.add(slug if n == 0 else f"{slug}-{n}")
    return found


def links(text: str) -> Iterator[str]:
    """The targets of a page's Markdown links and images, inline and by reference."""
    text = without_code(text)
    yield from re.findall(r"\]\(\s*<?([^)\s>]+)>?(?:\s+[\"'(][^)]*)?\)", text)
    yield from re.findall(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", text, re.M)


def broken_link(page: Path, target: str) -> str | None:
    """What is wrong with a relative link from a page, or None; other links are not checked."""
    if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):  # https:, mailto:...
        return None
    path, _, anchor = target.partition("#")
    path = unquote(path.split("?", 1)[0])
    base = ROOT if path.startswith("/") else page.parent
    file = (base / path.lstrip("/")).resolve() if path else page
    if not file.is_relative_to(ROOT):
        return f"{target}: outside the repository"
    if not file.exists():
        return f"{target}: no such file"
    if anchor and file.suffix == ".md" and unquote(anchor).lower() not in anchors(file):
        return f"{target}: {file.relative_to(ROOT)} has no heading for #{anchor}"
    return None


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file_and_heading_that_exist(page: Path) -> None:
    targets = links(page.read_text(encoding="utf-8"))
    problems = [problem for target in targets if (problem := broken_link(page, target))]
    assert not problems, "\n".join(problems)


def test_the_link_check_catches_mistakes() -> None:
    page = ROOT / "docs" / "guide" / "live-service.md"
    assert broken_link(page, "importing.md#running-it-again-is-safe") is None
    assert broken_link(page, "#look-first---dry-run") is None  # `--dry-run` in the heading
    assert broken_link(page, "../ui/") is None
    assert broken_link(page, "https://jqlang.github.io/jq/manual/") is None
    for wrong in ("importing.md#no-such-heading", "no-such-page.md", "#Look First", "../../../x"):
        assert broken_link(page, wrong), wrong
    text = "`[not](code.md)`\n```sh\n[nor](fenced.md)\n```\n[a](this.md) ![b](x.svg)\n[c]: <y.md>\n"
    assert list(links(text)) == ["this.md", "x.svg", "y.md"]
