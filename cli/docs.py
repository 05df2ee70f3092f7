"""The command reference, docs/reference/, generated from the command tree itself.

`python -m convrisk.cli.docs` writes it: index.md (what convrisk is, its global options, the exit
codes, a link to every command) and a page per top-level command or group, with a section per
subcommand (usage, help, arguments, options, examples). `--check` writes nothing and exits 1
naming each file that differs from what the code generates.

Only click's public API is read (params, opts, help, usage pieces, list_commands), never a
formatter: no terminal width, environment, colour or config file goes into the text, so the same
code always gives the same files. Not imported by the `convrisk` command (docs/design/reference.md).
"""

from __future__ import annotations

import argparse
import re
import sys
import textwrap
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import click
from click.formatting import join_options

from convrisk.cli.app import command
from convrisk.cli.commands.base import argument_metavar, global_options
from convrisk.cli.context import AppContext
from convrisk.cli.errors import EXIT_CODES

NAME = "convrisk"
INDEX = "index.md"
GENERATED = (
    "<!-- Generated from the command line by `python -m convrisk.cli.docs`: "
    "edit the code, not this file. -->"
)
# The default folder: docs/reference/ of the checkout this module is in.
CHECKOUT = Path(__file__).resolve().parent.parent
FOLDER = CHECKOUT / "docs" / "reference"
# A help text's own default, written at its end (options whose default is not the value).
_DEFAULT_IN_HELP = re.compile(r"\s*\[default: ([^\]]+)\]$")


@dataclass(frozen=True)
class Node:
    """One command of the tree: its names from the root, the command, and its context."""

    path: tuple[str, ...]
    command: click.Command
    context: click.Context

    @property
    def title(self) -> str:
        """`convrisk conv list`."""
        return " ".join((NAME, *self.path))

    @property
    def anchor(self) -> str:
        """The id GitHub gives the heading of this command: `convrisk-conv-list`."""
        return "-".join((NAME, *self.path))

    def children(self) -> list[Node]:
        """Its subcommands in the order of `--help`, hidden ones left out."""
        group = self.command
        if not isinstance(group, click.Group):
            return []
        nodes = []
        for name in group.list_commands(self.context):
            sub = group.get_command(self.context, name)
            if sub is None or sub.hidden:
                continue
            context = click.Context(
                sub, parent=self.context, info_name=name, **sub.context_settings
            )
            nodes.append(Node((*self.path, name), sub, context))
        return nodes

    def descendants(self) -> Iterator[Node]:
        """Every command under this one, depth first."""
        for child in self.children():
            yield child
            yield from child.descendants()


def root() -> Node:
    """The root of the command tree, `convrisk`."""
    group = command()
    context = click.Context(group, info_name=NAME, obj=AppContext(), **group.context_settings)
    return Node((), group, context)


def split_help(help: str | None) -> tuple[list[str], list[str]]:
    """A help text's paragraphs before its `Example:` block, and that block's lines."""
    text, examples = help or "", ""
    match = re.search(r"^Example:[ \t]*$", text, re.M)
    if match:
        text, examples = text[: match.start()], text[match.end() :]
    paragraphs = [p.strip("\n") for p in re.split(r"\n[ \t]*\n", text)]
    paragraphs = [p for p in paragraphs if p.strip() and p.strip() != "\b"]
    lines = textwrap.dedent(examples.strip("\n")).splitlines()
    return paragraphs, [line.rstrip() for line in lines if line.strip()]


def inline(text: str, *, cell: bool = False) -> str:
    """Plain text as Markdown that shows it as written: its `code` spans kept, every other
    character that Markdown would read as a mark escaped (and `|` in a table cell)."""
    parts = re.split(r"(`[^`\n]+`)", text)
    out = []
    for index, part in enumerate(parts):
        if index % 2:  # a code span
            out.append(part.replace("|", "\\|") if cell else part)
            continue
        part = re.sub(r"([\\`*~$<])", r"\\\1", part)
        part = re.sub(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])", r"\\_", part)
        part = re.sub(r"\](?=[(\[])", r"\\]", part)
        part = re.sub(r"&(?=#?\w+;)", "&amp;", part)
        if cell:
            part = part.replace("|", "\\|")
        out.append(part)
    return "".join(out)


def paragraph(text: str) -> str:
    """A help paragraph as one Markdown paragraph (a `\\b` one, kept as written, as a block)."""
    lines = text.splitlines()
    if lines and lines[0].strip() == "\b":
        return fenced("text", textwrap.dedent("\n".join(lines[1:])).splitlines())
    joined = inline(" ".join(line.strip() for line in lines))
    if re.match(r"([#>+-]|\d+[.)])(\s|$)", joined):
        joined = "\\" + joined  # not a heading, quote or list
    return joined


def fenced(language: str, lines: Sequence[str]) -> str:
    """A fenced code block."""
    return "\n".join([f"```{language}", *lines, "```"])


def one_line(text: str) -> str:
    """A help text's lines joined into one (for a table cell)."""
    return " ".join(text.split())


def usage(node: Node) -> str:
    """`convrisk conv list [OPTIONS]`: the usage line, as `--help` starts it."""
    return " ".join([node.title, *node.command.collect_usage_pieces(node.context)])


def short_help(node: Node) -> str:
    """The command's one-sentence summary, as its group's `--help` lists it (not cut short)."""
    return node.command.get_short_help_str(limit=10_000)


def is_hidden(param: click.Parameter) -> bool:
    """Whether a parameter is left out of help."""
    return bool(getattr(param, "hidden", False))


def option_names(param: click.Option, context: click.Context) -> str:
    """`-o, --output FORMAT`, `--muted / --not-muted`: an option as `--help` names it."""
    names = join_options(param.opts)[0]
    if param.secondary_opts:
        names += " / " + join_options(param.secondary_opts)[0]
    if not param.is_flag and not param.count:
        names += " " + param.make_metavar(context)
    return names


def default_of(param: click.Option, context: click.Context) -> str | None:
    """The default an option's help shows, when it shows one that means something."""
    if isinstance(param.show_default, str):
        return param.show_default
    if not param.show_default:
        return None
    value = param.get_default(context, call=False)
    if value is None or callable(value) or value in ("", (), []) or param.is_flag:
        return None
    if isinstance(value, list | tuple):
        return ", ".join(str(item) for item in value)
    return str(value)


def envvars(param: click.Parameter) -> list[str]:
    """The environment variables a parameter is read from, if any."""
    if not param.envvar:
        return []
    return [param.envvar] if isinstance(param.envvar, str) else list(param.envvar)


def describe(help: str, default: str | None, env: list[str]) -> str:
    """A parameter's table cell: its help, then its default and environment variable."""
    text = one_line(help)
    written = _DEFAULT_IN_HELP.search(text)
    if written and default is None:
        text, default = text[: written.start()], written.group(1)
    cell = inline(text, cell=True)
    if default is not None:
        cell += f" Default: {code(default)}."
    if env:
        cell += f" Env: {', '.join(code(name) for name in env)}."
    return cell.strip()


def code(text: str) -> str:
    """`text` as an inline code span for a table cell."""
    fence = "``" if "`" in text else "`"
    escaped = text.replace("|", "\\|")
    return f"{fence}{escaped}{fence}"


def table(head: tuple[str, str], rows: Sequence[tuple[str, str]]) -> str:
    """A two-column Markdown table."""
    lines = [f"| {head[0]} | {head[1]} |", "|---|---|"]
    lines += [f"| {left} | {right} |" for left, right in rows]
    return "\n".join(lines)


def own_params(node: Node) -> list[click.Parameter]:
    """The parameters the command defines itself (not the global ones, not --help)."""
    return [param for param in node.command.params if not is_hidden(param)]


def argument_rows(node: Node) -> list[tuple[str, str]]:
    """The arguments table's rows."""
    rows = []
    for param in own_params(node):
        if isinstance(param, click.Argument):
            help = getattr(param, "help", None)
            cell = describe(help if isinstance(help, str) else "", None, envvars(param))
            rows.append((code(argument_metavar(param)), cell))
    return rows


def option_rows(node: Node, params: Sequence[click.Parameter]) -> list[tuple[str, str]]:
    """An options table's rows."""
    rows = []
    for param in params:
        if isinstance(param, click.Option) and not is_hidden(param):
            default = default_of(param, node.context)
            cell = describe(param.help or "", default, envvars(param))
            rows.append((code(option_names(param, node.context)), cell))
    return rows


def global_names(node: Node) -> list[str]:
    """The global options this command takes (all but those it defines itself)."""
    copies = {id(param) for param in global_options(node.context)}
    names = []
    for param in node.command.get_params(node.context):
        if id(param) in copies and not is_hidden(param):
            names.append(join_options(param.opts)[0])
    return names


def section(node: Node, level: int, link: str) -> str:
    """A command's section: heading, usage, help, commands, arguments, options, examples."""
    paragraphs, examples = split_help(node.command.help)
    parts = [f"{'#' * level} {node.title}", fenced("text", [usage(node)])]
    parts += [paragraph(text) for text in paragraphs]
    children = node.children()
    if children:
        items = [f"- [`{c.title}`](#{c.anchor}): {inline(short_help(c))}" for c in children]
        parts += ["**Commands**", "\n".join(items)]
    arguments = argument_rows(node)
    if arguments:
        parts += ["**Arguments**", table(("Argument", "Description"), arguments)]
    options = option_rows(node, own_params(node))
    if options:
        parts += ["**Options**", table(("Option", "Description"), options)]
    names = global_names(node)
    if names:
        listed = ", ".join(f"`{name}`" for name in names)
        parts.append(f"Takes the [global options]({link}) too: {listed}.")
    if examples:
        parts += ["**Examples**", fenced("sh", examples)]
    return "\n\n".join(parts)


def command_page(node: Node) -> str:
    """The page of a top-level command or group: its section, then one per subcommand."""
    link = f"{INDEX}#global-options"
    parts = [GENERATED, section(node, 1, link)]
    parts += [section(sub, 2, link) for sub in node.descendants()]
    parts.append(f"[All commands]({INDEX})")
    return "\n\n".join(parts) + "\n"


def index_page(top: Node) -> str:
    """index.md: what convrisk is, its commands, global options, exit codes and examples."""
    paragraphs, examples = split_help(top.command.help)
    copies = {opt for param in _any_copies(top) for opt in param.opts}
    params = [p for p in top.command.get_params(top.context) if not is_hidden(p)]
    shared = [p for p in params if set(p.opts) & copies]
    own = [p for p in params if not set(p.opts) & copies]
    items = []
    for node in top.children():
        items.append(f"- [`{node.title}`]({page_name(node)}): {inline(short_help(node))}")
        for sub in node.descendants():
            indent = "  " * (len(sub.path) - 1)
            target = f"{page_name(node)}#{sub.anchor}"
            items.append(f"{indent}- [`{sub.title}`]({target}): {inline(short_help(sub))}")
    codes = [(f"{number}", inline(EXIT_CODES[number], cell=True)) for number in sorted(EXIT_CODES)]
    parts = [
        GENERATED,
        f"# {NAME} command reference",
        *(paragraph(text) for text in paragraphs),
        fenced("text", [usage(top)]),
        "## Commands",
        "\n".join(items),
        "## Global options",
        "Given before the command or after it: `convrisk --debug conv list` is "
        f"`convrisk conv list --debug`.{_own_instead(top, shared)}",
        table(("Option", "Description"), option_rows(top, shared)),
        f"Options of `{NAME}` alone (`-h`, `--help` works on every command too):",
        table(("Option", "Description"), option_rows(top, own)),
        "## Exit codes",
        table(("Code", "Meaning"), codes),
    ]
    if examples:
        parts += ["## Examples", fenced("sh", examples)]
    return "\n\n".join(parts) + "\n"


def _own_instead(top: Node, shared: Sequence[click.Parameter]) -> str:
    """The sentence naming the commands that have an option of a global one's name."""
    clauses = []
    for param in shared:
        name = join_options(param.opts)[0]
        owners = [
            f"`{' '.join(node.path)}`"
            for node in top.descendants()
            if name not in global_names(node)
            and any(name in p.opts for p in own_params(node) if isinstance(p, click.Option))
        ]
        if owners:
            clauses.append(f"`{name}` in {', '.join(owners)}")
    if not clauses:
        return ""
    return (
        f" Where a command has an option of the same name, it takes its own: {'; '.join(clauses)}."
    )


def _any_copies(top: Node) -> list[click.Parameter]:
    """The root's options that every command takes too (copies made for a command under it)."""
    children = top.children()
    return global_options(children[0].context) if children else []


def page_name(node: Node) -> str:
    """The file of a top-level command's page: `conv.md`."""
    return f"{node.path[0]}.md"


def pages() -> dict[str, str]:
    """Every file of the reference, by name, with its text."""
    top = root()
    texts = {INDEX: index_page(top)}
    for node in top.children():
        texts[page_name(node)] = command_page(node)
    return texts


def differences(folder: Path, texts: dict[str, str]) -> list[str]:
    """The files of `folder` that differ from `texts`: changed, missing, or not generated."""
    names = set(texts) | {path.name for path in folder.glob("*.md")}
    wrong = []
    for name in sorted(names):
        path = folder / name
        if name not in texts or not path.is_file() or path.read_bytes() != texts[name].encode():
            wrong.append(name)
    return wrong


def write(folder: Path, texts: dict[str, str]) -> list[str]:
    """Make `folder` hold exactly `texts` (stale pages removed); the names it changed."""
    folder.mkdir(parents=True, exist_ok=True)
    changed = differences(folder, texts)
    for name in changed:
        path = folder / name
        if name in texts:
            path.write_bytes(texts[name].encode())
        else:
            path.unlink()
    return changed


def main(argv: Sequence[str] | None = None) -> int:
    """Write the reference (or, with --check, say which files differ: exit 1); the exit code."""
    parser = argparse.ArgumentParser(
        prog="python -m convrisk.cli.docs",
        description="Write docs/reference/ from the command line's own help.",
    )
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if a file differs"
    )
    parser.add_argument("--dir", type=Path, default=FOLDER, help=f"default: {FOLDER}")
    args = parser.parse_args(argv)
    if args.dir == FOLDER and not (CHECKOUT / "pyproject.toml").is_file():
        parser.error(f"{CHECKOUT} is not a checkout of convrisk: name the folder with --dir")
    texts = pages()
    if args.check:
        wrong = differences(args.dir, texts)
        for name in wrong:
            path = args.dir / name
            if name not in texts:
                why = "is generated by no command (to be removed)"
            else:
                why = "differs from what the code generates" if path.exists() else "is missing"
            sys.stderr.write(f"{path} {why}\n")
        if wrong:
            sys.stderr.write("Run `python -m convrisk.cli.docs` to write it again.\n")
        return 1 if wrong else 0
    for name in write(args.dir, texts):
        sys.stdout.write(f"wrote {args.dir / name}\n" if name in texts else f"removed {name}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
