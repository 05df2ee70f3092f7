"""docs/reference/ stays true to the command line: it is what cli/docs.py generates from the code,
it names every command and option, and every example in it runs (in-process, on a seeded local
database and an in-process `convrisk serve`) with the exit code it expects."""

from __future__ import annotations

import ast
import gzip
import json
import os
import re
import shlex
import shutil
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import click
import httpx
import pytest
from typer.testing import CliRunner

from convrisk.cli import docs
from convrisk.cli.app import command, main
from convrisk.cli.context import AppContext
from convrisk.cli.journal import entries as journal
from convrisk.cli.output import iostreams
from convrisk.local_backend.backend import LocalBackend
from convrisk.local_backend.sandbox.snapshot import parse as parse_snapshot
from convrisk.local_backend.serve.server import make_server
from tests import described
from tests.cli.conftest import walk

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "docs" / "reference"
REGENERATE = "run `python -m convrisk.cli.docs` to write it again"


def test_the_reference_is_what_the_code_generates() -> None:
    differ = docs.differences(REFERENCE, docs.pages())
    assert not differ, f"docs/reference/ differs from the code in {differ}: {REGENERATE}"


def test_check_names_each_file_that_differs_and_writing_mends_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "reference"
    assert docs.main(["--dir", str(folder)]) == 0
    assert docs.main(["--check", "--dir", str(folder)]) == 0
    (folder / "conv.md").write_text("edited by hand\n")
    (folder / "ui.md").unlink()
    (folder / "gone.md").write_text("a command removed since\n")
    capsys.readouterr()
    assert docs.main(["--check", "--dir", str(folder)]) == 1
    said = capsys.readouterr().err
    assert [name for name in ("conv.md", "ui.md", "gone.md", "index.md") if name in said] == [
        "conv.md",
        "ui.md",
        "gone.md",
    ]
    assert "python -m convrisk.cli.docs" in said
    assert (folder / "conv.md").read_text() == "edited by hand\n"  # --check writes nothing
    assert docs.main(["--dir", str(folder)]) == 0
    assert docs.main(["--check", "--dir", str(folder)]) == 0
    assert not (folder / "gone.md").exists()


def test_the_reference_does_not_depend_on_the_terminal_or_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    expected = docs.pages()
    for name, value in {
        "COLUMNS": "20",
        "LINES": "5",
        "NO_COLOR": "1",
        "FORCE_COLOR": "1",
        "TERM": "dumb",
        "CONVRISK_OUTPUT": "json",
        "CONVRISK_PROFILE": "elsewhere",
        "XDG_CONFIG_HOME": str(tmp_path),
    }.items():
        monkeypatch.setenv(name, value)
    assert docs.pages() == expected


def test_the_generator_is_loaded_by_no_command() -> None:
    """Only `python -m convrisk.cli.docs` and the tests import it: no module of the package."""
    importers = []
    for folder in ("cli", "api_client", "local_backend"):
        for path in sorted((ROOT / folder).glob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom):
                    module = "." * node.level + (node.module or "")
                    names = [
                        module,
                        *(f"{module}.{alias.name}".replace("..", ".") for alias in node.names),
                    ]
                else:
                    continue
                if {"convrisk.cli.docs", ".docs", "..cli.docs"} & set(names):
                    importers.append(path.name)
    assert importers == []


def test_hidden_commands_and_options_stay_out() -> None:
    @click.group(help="A group.\n\n\b\nExample:\n  convrisk g shown --shown 1")
    def group() -> None:
        """Not run."""

    @group.command(help="Shown.")
    @click.option("--shown", metavar="N", help="Shown too.")
    @click.option("--secret", hidden=True, help="Hidden.")
    def shown(shown: str | None, secret: str | None) -> None:
        """Not run."""

    @group.command(hidden=True, help="Hidden.")
    def unlisted() -> None:
        """Not run."""

    page = docs.command_page(docs.Node(("g",), group, click.Context(group, info_name="g")))
    assert "## convrisk g shown" in page and "`--shown N`" in page
    assert "--secret" not in page and "unlisted" not in page and "Hidden" not in page
    assert "```sh\nconvrisk g shown --shown 1\n```" in page


def test_help_text_reads_as_written_in_markdown() -> None:
    assert docs.inline("kept in <db>.token, marked with *, $HOME, /__sandbox/, base_url") == (
        "kept in \\<db>.token, marked with \\*, \\$HOME, /\\_\\_sandbox/, base_url"
    )
    assert docs.inline("`a|b` or c|d", cell=True) == "`a\\|b` or c\\|d"
    assert docs.paragraph("- not a list\nitem") == "\\- not a list item"


# The command tree in the reference -----------------------------------------------------------


def section_of(path: tuple[str, ...]) -> str:
    """The part of the reference about one command: its heading up to the next command's."""
    if not path:
        return (REFERENCE / docs.INDEX).read_text(encoding="utf-8")
    page = (REFERENCE / f"{path[0]}.md").read_text(encoding="utf-8")
    title = " ".join(("convrisk", *path))
    match = re.search(
        rf"^#{{1,2}} {re.escape(title)}\n(.*?)(?=^## convrisk |\Z)", page, re.M | re.S
    )
    assert match, f"docs/reference/{path[0]}.md has no heading {title!r}: {REGENERATE}"
    return match.group(1)


def test_every_command_is_in_the_reference() -> None:
    index = section_of(())
    for path, cmd in walk(command()):
        if not path or cmd.hidden:
            continue
        section_of(path)
        assert f"[`convrisk {' '.join(path)}`]" in index, f"index.md links no {path}"


def test_every_option_is_in_the_reference() -> None:
    missing = []
    for path, cmd in walk(command()):
        if cmd.hidden:
            continue
        text = section_of(path)
        for param in cmd.params:
            if getattr(param, "hidden", False):
                continue
            for opt in [*param.opts, *param.secondary_opts]:
                if isinstance(param, click.Argument):
                    opt = str(param.metavar or param.name or "").upper()
                if not re.search(rf"(?<![\w-]){re.escape(opt)}(?![\w-])", text):
                    missing.append(f"convrisk {' '.join(path)} {opt}")
    assert not missing, missing


def test_every_command_has_examples_in_the_reference() -> None:
    for path, cmd in walk(command()):
        if not cmd.hidden:
            assert "```sh\n" in section_of(path), f"convrisk {' '.join(path)} has no Example:"


# The examples run ----------------------------------------------------------------------------

# Examples that are parsed, not run, each with the reason. A key is a command (`serve`: all its
# examples) or a command with its arguments (`config set token` alone: with `-` it runs).
PARSED_ONLY = {
    "serve": "serves until stopped; tests/wire and tests/e2e run serve itself",
    "ui": "a terminal browser; tests/cli/test_ui_browser.py drives it",
    "config set token": "asks for the token on the terminal, unechoed",
}
# Examples run as at a terminal, with this typed at the question they ask.
AT_A_TERMINAL = {
    "convrisk conv delete conv_01HVZ8Q2K4M6P8R0T2V4X6Z8B0": "y\n",
    "convrisk risk delete rp_01HVZ8Q2K4M6P8R0T2V4X6Z8B0": "y\n",
}
# Commands that talk only to a `convrisk serve` sandbox: the profile's base_url and token are
# the in-process one's (as CONVRISK_BASE_URL and CONVRISK_TOKEN), reset to the seed first.
ON_THE_SANDBOX = ("sandbox", "check")
# Commands that read the journal: the seed's writes are made first (SEED_WRITES).
ON_THE_JOURNAL = ("history", "undo")

TOKEN = "reference-examples-token"
VARIABLES = {"TOKEN": "s3cret-from-a-variable", "T": TOKEN}
CONVERSATION = "conv_01HVZ8Q2K4M6P8R0T2V4X6Z8B0"
RISK_PROFILE = "rp_01HVZ8Q2K4M6P8R0T2V4X6Z8B0"
# The ids of the journal entries (and a run) that the undo examples name, in the order the
# seeded writes take them.
NAMED_IDS = {
    "r_": ["r_0193a4b5c6d7e8f9a0"],
    "j_": ["j_0193a4b5c6d7e8f9a0", "j_0193a4b5c6d8a1b2c3"],
}
SEED_WRITES = [
    ["risk", "update", RISK_PROFILE, "--score", "75"],  # run r_...e8f9a0: entry j_...e8f9a0
    ["conv", "update", CONVERSATION, "--pin"],  # entry j_...a1b2c3
    ["conv", "create", "--contact-id", "c_2"],
]


def conversation(id: str, **fields: object) -> dict[str, object]:
    """A conversation record of the seed."""
    return {"resource": "conversations", **described.conversation(id, 1714564800)} | fields


def risk_profile(id: str, **fields: object) -> dict[str, object]:
    """A risk profile record of the seed."""
    record = described.risk_profile(
        id=id,
        customer_id="cus_1",
        profile_type="moderate",
        score=72,
        details={},
        created_at=1714564800,
        updated_at=1714564800,
    )
    return {"resource": "risk_profiles", **record} | fields


# The records every example starts with, locally and on the sandbox (the ids the examples name).
SEED = "".join(
    json.dumps(record) + "\n"
    for record in (
        conversation(CONVERSATION, contact_id="c_1", is_muted=True),
        conversation("conv_01HVZ8Q2K4M6P8R0T2V4X6Z8B2", group_id="g_7", archived_at=1714568400),
        conversation("conv_01HVZ8Q2K4M6P8R0T2V4X6Z8B4", contact_id="c_1", is_muted=True),
        risk_profile(RISK_PROFILE),
        risk_profile(
            "rp_01HWA3C5E7G9J1K3M5P7R9T1V3",
            profile_type="aggressive",
            score=91.5,
            details={"horizon_years": 10},
        ),
    )
)
# The files the examples read, in the folder they run in.
FILES = {
    "seed.jsonl": SEED,
    "profile.json": (
        '{"customer_id": "cus_1", "profile_type": "moderate", "score": 72, "details": {}}\n'
    ),
    "details.json": '{"horizon_years": 3}\n',
    "conversations.jsonl": '{"contact_id": "c_3"}\n{"group_id": "g_7"}\n',
    "changes.csv": f"id,is_muted\n{CONVERSATION},false\n",
    "profiles.csv": "customer_id,profile_type,score\ncus_4,moderate,55\ncus_5,aggressive,88\n",
    "profiles.jsonl": '{"customer_id": "cus_6", "profile_type": "conservative", "score": 20}\n',
    "token.txt": "s3cret-from-a-file\n",
}
CONFIG = """\
[default]
timeout = 10

[staging]
base_url = "{url}"
token = "{token}"
timeout = 5
"""


def examples() -> list[tuple[str, str]]:
    """Every example of the reference: its page and its shell text, in the pages' order."""
    found = []
    for path in sorted(REFERENCE.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        for block in re.findall(r"^```sh\n(.*?)^```", text, re.M | re.S):
            for example in re.split(r"(?<!\\)\n", block.rstrip("\n")):
                found.append((path.stem, example))
    return found


@dataclass
class Step:
    """One command of a pipeline: its variables, words and redirections."""

    env: dict[str, str] = field(default_factory=dict)
    words: list[str] = field(default_factory=list)
    stdin: str | None = None
    stdout: str | None = None


def pipeline(example: str) -> list[Step]:
    """The commands of a one-line shell pipeline (`|`, `<`, `>`, `NAME=value`, `$NAME`,
    quotes, comments); anything else fails the test."""
    lexer = shlex.shlex(example.replace("\\\n", " "), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    steps, redirect = [Step()], ""
    for token in lexer:
        step = steps[-1]
        if token == "|":
            steps.append(Step())
        elif token in ("<", ">"):
            redirect = token
        elif set(token) <= set("();<>|&"):
            pytest.fail(f"{example}: this test does not run {token!r}")
        elif redirect:
            setattr(step, "stdin" if redirect == "<" else "stdout", expand(token))
            redirect = ""
        elif not step.words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", token):
            name, value = token.split("=", 1)
            step.env[name] = expand(value)
        else:
            step.words.append(expand(token))
    return steps


def expand(word: str) -> str:
    """`$NAME` and `${NAME}` replaced by VARIABLES' value."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name not in VARIABLES:
            pytest.fail(f"an example uses ${name}: give it a value in VARIABLES")
        return VARIABLES[name]

    return re.sub(r"\$(?:(\w+)|\{(\w+)\})", value, word)


def expected_code(example: str) -> int:
    """The exit code an example expects: 0, or the N of a `# exit N` comment."""
    match = re.search(r"#.*\bexits? (\d+)\b", example)
    return int(match.group(1)) if match else 0


def parse(args: list[str]) -> tuple[tuple[str, ...], list[str]]:
    """Parse a command line as convrisk would, down to its command, without running it: the
    command's names and the arguments given after them (UsageError when it does not parse)."""
    cmd: click.Command = command()
    ctx = click.Context(cmd, info_name="convrisk", obj=AppContext(), **cmd.context_settings)
    path: tuple[str, ...] = ()
    rest = list(args)
    try:
        while isinstance(cmd, click.Group):
            # A group's own options; what follows them is the command's name and arguments.
            rest = click.Command.parse_args(cmd, ctx, rest)
            assert rest, f"no command in {args}"
            name, sub, rest = cmd.resolve_command(ctx, rest)
            assert name is not None and sub is not None
            ctx = click.Context(sub, parent=ctx, info_name=name, **sub.context_settings)
            cmd, path = sub, (*path, name)
        cmd.parse_args(ctx, list(rest))
    except click.exceptions.Exit:  # --help or --version: parsed fine
        pass
    return path, rest


def tool(words: list[str], stdin: bytes) -> bytes:
    """What the few other programs that the examples pipe through print."""
    name, *args = words
    if name == "echo":
        return (" ".join(args) + "\n").encode()
    if name == "printf" and args[:1] == ["%s"]:
        return "".join(args[1:]).encode()
    if name == "jq" and args[:1] == ["-c"] and len(args) == 2:
        import jq

        values = jq.compile(args[1]).input_text(stdin.decode()).all()
        return "".join(json.dumps(value, separators=(",", ":")) + "\n" for value in values).encode()
    if name == "gzip" and not args:
        return gzip.compress(stdin)
    if name == "gunzip" and args[:1] == ["-c"] and len(args) == 2:
        return gzip.decompress(Path(args[1]).read_bytes())
    pytest.fail(f"an example runs `{shlex.join(words)}`, which this test does not know")


@dataclass
class Ran:
    """What one convrisk of an example did."""

    code: int
    stdout: bytes
    stderr: str


def run_convrisk(args: list[str], stdin: bytes) -> Ran:
    """main() in-process with these arguments and stdin, its streams captured."""
    with CliRunner().isolation(input=stdin) as (out, err, _):
        code = main(args)
        sys.stdout.flush()
        sys.stderr.flush()
        return Ran(code, out.getvalue(), err.getvalue().decode(errors="replace"))


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An in-process `convrisk serve` for the module's examples (each resets it): its URL."""
    backend = LocalBackend(tmp_path_factory.mktemp("sandbox") / "served.db")
    server = make_server(backend, token=TOKEN, log=lambda line: None)
    try:
        with server.running():
            yield server.url
    finally:
        backend.close()


@pytest.fixture(scope="module")
def seeded_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database file holding the seed, made once: each example starts from a copy."""
    path = tmp_path_factory.mktemp("seeded") / "seeded.db"
    with LocalBackend(path) as store:
        store.restore(parse_snapshot(SEED.encode()))
    return path


@pytest.fixture
def world(sandbox: str, seeded_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An own HOME and XDG folders, with the seed in the local database, a config file with a
    `staging` profile on the sandbox, and the files the examples read: the folder they run in."""
    for name in list(os.environ):
        if name.startswith(("CONVRISK_", "XDG_")) or name in ("NO_COLOR", "COLUMNS"):
            monkeypatch.delenv(name)
    home = tmp_path / "home"
    for name, folder in {
        "HOME": home,
        "XDG_CONFIG_HOME": home / "config",
        "XDG_DATA_HOME": home / "data",
        "XDG_STATE_HOME": home / "state",
    }.items():
        folder.mkdir(parents=True, exist_ok=True)
        monkeypatch.setenv(name, str(folder))
    monkeypatch.setattr(iostreams, "controlling_terminal", lambda: None)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    for name, text in FILES.items():
        (work / name).write_text(text, encoding="utf-8")
    (work / "seed.jsonl.gz").write_bytes(gzip.compress(SEED.encode()))
    for db in (home / "data" / "convrisk" / "convrisk.db", work / "a.db"):
        db.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(seeded_db, db)
    config = home / "config" / "convrisk" / "config.toml"
    config.parent.mkdir(mode=0o700)
    config.write_text(CONFIG.format(url=sandbox, token=TOKEN), encoding="utf-8")
    config.chmod(0o600)
    return work


def seed_the_journal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the seed's writes, their journal entries taking the ids the examples name."""
    named = {prefix: list(ids) for prefix, ids in NAMED_IDS.items()}
    minted: Callable[[str], str] = journal.new_id

    def new_id(prefix: str) -> str:
        return named[prefix].pop(0) if named.get(prefix) else minted(prefix)

    with monkeypatch.context() as patch:
        patch.setattr(journal, "new_id", new_id)
        for args in SEED_WRITES:
            ran = run_convrisk(args, b"")
            assert ran.code == 0, (args, ran.stderr)
    assert not any(named.values()), f"ids not taken: {named}"


def seed_the_sandbox(url: str) -> None:
    """Reset the sandbox to the seed, then send it the requests its examples verify."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=url, headers=headers) as http:
        http.post("/__sandbox/reset").raise_for_status()
        http.post("/__sandbox/restore", content=SEED.encode()).raise_for_status()
        http.post("/v1/conversations", json={"contact_id": "c_1"}).raise_for_status()
        for muted in (False, True):
            http.put(f"/v1/conversations/{CONVERSATION}", json={"is_muted": muted})
        body = {"customer_id": "cus_1", "profile_type": "aggressive", "score": 80, "details": {}}
        http.post("/v1/risk-profiles", json=body).raise_for_status()


def test_the_reference_has_the_examples_of_every_page() -> None:
    pages = {page for page, _ in examples()}
    assert pages == {path.stem for path in REFERENCE.glob("*.md")}
    assert len(examples()) > 80


@pytest.mark.parametrize(
    "example",
    [example for _, example in examples()],
    ids=[f"{page}-{n}" for n, (page, _) in enumerate(examples())],
)
def test_the_example_runs(
    example: str, world: Path, sandbox: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps = pipeline(example)
    commands = [step for step in steps if step.words and Path(step.words[0]).name == "convrisk"]
    assert commands, f"{example}: no convrisk in it"
    reasons, paths = [], set()
    for step in commands:
        try:
            path, rest = parse(step.words[1:])
        except click.UsageError as exc:
            pytest.fail(f"{example}: {exc.format_message()}")
        paths.add(path[0] if path else "")
        reasons += [
            PARSED_ONLY[k] for k in (" ".join(path), shlex.join([*path, *rest])) if k in PARSED_ONLY
        ]
    if reasons:
        return  # parsed only (PARSED_ONLY says why)
    if paths & set(ON_THE_SANDBOX):
        seed_the_sandbox(sandbox)
    if paths & set(ON_THE_JOURNAL):
        seed_the_journal(monkeypatch)
    answer = AT_A_TERMINAL.get(example)
    data = b""
    for index, step in enumerate(steps):
        stdin = Path(step.stdin).read_bytes() if step.stdin else data
        with monkeypatch.context() as patch:
            for name, value in step.env.items():
                patch.setenv(name, value)
            if not any(step is command for command in commands):
                data = tool(step.words, stdin)
            else:
                path, _ = parse(step.words[1:])
                if path and path[0] in ON_THE_SANDBOX:
                    patch.setenv("CONVRISK_BASE_URL", sandbox)
                    patch.setenv("CONVRISK_TOKEN", TOKEN)
                if answer is not None:
                    stdin = answer.encode()
                    patch.setattr(
                        iostreams, "is_terminal", lambda s: s is sys.stdin or s is sys.stderr
                    )
                ran = run_convrisk(step.words[1:], stdin)
                last = index == len(steps) - 1
                expected = expected_code(example) if last else 0
                assert ran.code == expected, (
                    f"{example}\n{shlex.join(step.words)}: exit {ran.code}, not {expected}\n"
                    f"stderr: {ran.stderr}"
                )
                data = ran.stdout
        if step.stdout:
            Path(step.stdout).write_bytes(data)
