"""Protected and read-only profiles and --max-affected (DESIGN 5.3): convrisk in-process on the
local database and against a serve over HTTP (whose log shows no write was sent); the protected
question on a terminal convrisk is made to see. The installed script runs each once, against
`convrisk serve` and on a real pseudo-terminal, in tests/e2e/test_guards.py."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from convrisk.cli.app import main

from .conftest import Invoke
from .e2e_twin import Twin
from .e2e_twin import twin as twin  # a fixture: each test on the local db and on serve

WRITE_METHODS = (" POST ", " PUT ", " PATCH ", " DELETE ")


def ok(result: Any) -> str:
    assert result.code == 0, result.stderr
    return str(result.stdout)


def mark(twin: Twin, profile: str, *keys: str) -> None:
    """Make `profile` (on the same backend as `cli`) carry these marks."""
    for key in keys:
        ok(twin.run("config", "set", "--profile", profile, key, "true"))


def seed(twin: Twin, conversations: int = 2) -> tuple[list[str], str]:
    """Conversations and one risk profile, made under the default profile: their ids."""
    convs = [
        ok(twin.run("conv", "create", "--contact-id", f"c_{n}", "-o", "id")).strip()
        for n in range(conversations)
    ]
    risk = ["--customer-id", "cus_1", "--profile-type", "moderate", "--score", "5", "-o", "id"]
    return convs, ok(twin.run("risk", "create", *risk)).strip()


def everything(twin: Twin) -> str:
    """Every record of both resources, as JSON lines: equal before and after means unchanged."""
    return ok(twin.run("conv", "list", "--all", "-o", "jsonl")) + ok(
        twin.run("risk", "list", "--all", "-o", "jsonl")
    )


def settle_log(twin: Twin, marker: str) -> int:
    """Send one GET that serve logs, wait for its line: the log's length then (every request
    sent before it is in the log by now)."""
    assert twin.remote
    ok(twin.run("api", f"/v1/conversations?limit=1&group_id={marker}"))
    deadline = time.monotonic() + 10
    while not any(marker in line for line in twin.log):
        assert time.monotonic() < deadline, twin.log
        time.sleep(0.05)
    return len(twin.log)


def writes_sent(twin: Twin, start: int, end: int) -> list[str]:
    """The write requests serve logged between two settle_log marks."""
    assert twin.remote
    return [line for line in twin.log[start:end] if any(m in line for m in WRITE_METHODS)]


def write_commands(tmp_path: Path, convs: list[str], rp: str) -> list[tuple[list[str], str | None]]:
    """Every kind of write (each command line, and its stdin)."""
    conv_file = tmp_path / "convs.jsonl"
    conv_file.write_text('{"contact_id": "c_new"}\n{"contact_id": "c_new2"}\n')
    risk_csv = "customer_id,profile_type,score\ncus_9,moderate,3\n"
    return [
        (["conv", "create", "--contact-id", "c_9"], None),
        (
            ["risk", "create", "--customer-id", "c", "--profile-type", "moderate", "--score", "1"],
            None,
        ),
        (["conv", "update", *convs, "--mute"], None),
        (["conv", "update", "-", "--mute"], "\n".join(convs) + "\n"),
        (["risk", "update", rp, "--score", "9"], None),
        (["risk", "update", rp, "--details", "-"], '{"a": 1}'),
        (["conv", "delete", convs[0], "--yes"], None),
        (["conv", "delete", "-", "--yes"], "\n".join(convs) + "\n"),
        (["risk", "delete", rp, "--yes"], None),
        (["conv", "import", str(conv_file)], None),
        (["risk", "import", "-", "--format", "csv"], risk_csv),
        (["api", "-X", "POST", "/v1/conversations", "-d", '{"contact_id": "c_api"}'], None),
        (["api", "-X", "PATCH", f"/v1/conversations/{convs[0]}", "-d", '{"is_muted": true}'], None),
        (["api", "-X", "DELETE", f"/v1/conversations/{convs[0]}"], None),
    ]


# -- read-only ------------------------------------------------------------------------------------


def test_a_read_only_profile_refuses_every_write_before_any_request(
    twin: Twin,
    tmp_path: Path,
) -> None:
    convs, rp = seed(twin)
    mark(twin, "ro", "read_only")
    before = everything(twin)
    start = settle_log(twin, "before") if twin.remote else 0
    for args, stdin in write_commands(tmp_path, convs, rp):
        result = twin.run("--profile", "ro", *args, input=stdin)
        assert result.code == 2, (args, result.stderr)
        assert result.stdout == "", args
        lines = result.stderr.splitlines()
        assert len(lines) == 1, (args, lines)
        assert lines[0].startswith("Error: The profile 'ro' is read-only"), lines
        assert lines[0].endswith("nothing was sent."), lines
    assert everything(twin) == before
    if twin.remote:
        assert writes_sent(twin, start, settle_log(twin, "after")) == []


def test_a_read_only_profile_still_reads_and_plans(twin: Twin) -> None:
    convs, _ = seed(twin)
    mark(twin, "ro", "read_only")
    before = everything(twin)
    assert ok(twin.run("--profile", "ro", "conv", "list", "-o", "id")).split() == convs[::-1]
    ok(twin.run("--profile", "ro", "api", "/v1/conversations"))
    planned = twin.run("--profile", "ro", "conv", "delete", *convs, "--dry-run", "-o", "json")
    assert [row["operation"] for row in json.loads(ok(planned))] == ["delete", "delete"]
    ok(twin.run("--profile", "ro", "conv", "create", "--contact-id", "c", "--dry-run"))
    assert everything(twin) == before


def test_read_only_from_the_environment_refuses_and_false_there_does_not_lift_the_profile_s(
    twin: Twin,
) -> None:
    by_env = twin.run("conv", "create", "--contact-id", "c", CONVRISK_READ_ONLY="1")
    assert by_env.code == 2
    assert "The profile 'default' is read-only (CONVRISK_READ_ONLY is set)" in by_env.stderr
    mark(twin, "ro", "read_only")
    lifted = twin.run(
        "--profile", "ro", "conv", "create", "--contact-id", "c", CONVRISK_READ_ONLY="0"
    )
    assert lifted.code == 2 and "is read-only" in lifted.stderr
    assert twin.count("conversations") == 0


# -- protected ------------------------------------------------------------------------------------


def test_a_protected_profile_without_a_terminal_refuses_every_write_without_yes(
    twin: Twin,
    tmp_path: Path,
) -> None:
    convs, rp = seed(twin)
    mark(twin, "prod", "protected")
    before = everything(twin)
    start = settle_log(twin, "before") if twin.remote else 0
    for args, stdin in write_commands(tmp_path, convs, rp):
        args = [arg for arg in args if arg != "--yes"]
        result = twin.run("--profile", "prod", *args, input=stdin)
        assert result.code == 2, (args, result.stderr)
        assert result.stdout == ""
        assert result.stderr.startswith("Error: The profile 'prod' is protected"), result.stderr
        assert "Pass --yes" in result.stderr and "nothing was sent" in result.stderr
    assert everything(twin) == before
    if twin.remote:
        assert writes_sent(twin, start, settle_log(twin, "after")) == []


def test_a_protected_profile_with_yes_writes_after_a_banner_naming_the_profile_and_target(
    twin: Twin,
    tmp_path: Path,
) -> None:
    convs, rp = seed(twin, 3)
    mark(twin, "prod", "protected")
    where = twin.where

    def banner_of(*args: str, stdin: str | None = None) -> str:
        result = twin.run("--profile", "prod", *args, "--yes", input=stdin)
        assert result.code == 0, (args, result.stderr)
        lines = result.stderr.splitlines()
        assert lines[0].startswith(f"Protected profile 'prod' ({where}): "), lines
        return lines[0]

    made = banner_of("conv", "create", "--contact-id", "c_new")
    assert made.endswith(": create a conversation: 1 record.")
    assert banner_of("conv", "update", *convs[:2], "--mute").endswith(
        ": update conversations: 2 records."
    )
    assert json.loads(ok(twin.run("conv", "get", convs[0], "-o", "json")))["is_muted"] is True
    banner_of("risk", "update", rp, "--score", "50")
    assert json.loads(ok(twin.run("risk", "get", rp, "-o", "json")))["score"] == 50
    records = tmp_path / "more.jsonl"
    records.write_text('{"contact_id": "c_a"}\n{"contact_id": "c_b"}\n')
    banner_of("conv", "import", str(records))
    banner_of("api", "-X", "POST", "/v1/conversations", "-d", '{"contact_id": "c_api"}')
    assert banner_of("conv", "delete", "-", stdin=f"{convs[2]}\n").endswith(
        ": delete conversations."
    )
    contacts = {c["contact_id"] for c in json.loads(ok(twin.run("conv", "list", "-o", "json")))}
    assert contacts == {"c_0", "c_1", "c_new", "c_a", "c_b", "c_api"}
    # An ordinary profile prints no banner and asks nothing.
    plain = twin.run("conv", "create", "--contact-id", "c_plain", "-o", "id")
    assert plain.code == 0 and plain.stderr == ""


class UnreadStdin(io.RawIOBase):
    """A stdin that stays open and must not be read: a read is noted, and answers nothing."""

    def __init__(self) -> None:
        self.reads = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        self.reads += len(buffer) > 0  # click's read(0), to tell bytes from text, asks for none
        return 0


def refused_without_reading(invoke: Invoke, *args: str) -> tuple[int, str, int]:
    """Run convrisk with a stdin that notes every read: the exit code, stderr, and the reads."""
    stdin = UnreadStdin()
    runner = CliRunner()
    with runner.isolation(input=stdin) as (_, err, _):  # type: ignore[arg-type]
        code = main(list(args))
        import sys

        sys.stderr.flush()
        return code, err.getvalue().decode(), stdin.reads


@pytest.mark.parametrize("mark_key", ["protected", "read_only"])
def test_a_refused_write_does_not_wait_for_its_stdin(invoke: Invoke, mark_key: str) -> None:
    """Refused before stdin is read: not a byte of it is asked for. (With stdin a real pipe that
    stays open, and a protected profile, in tests/e2e/test_guards.py.)"""
    ok(invoke("config", "set", "--profile", "guarded", mark_key, "true"))
    for args in (
        [
            "risk",
            "create",
            "--customer-id",
            "c",
            "--profile-type",
            "moderate",
            "--score",
            "1",
            "--details",
            "-",
        ],
        ["risk", "update", "rp_01HVZ8Q2K4M6P8R0T2V4X6Z8B0", "--details", "-"],
        ["conv", "update", "-", "--mute"],
        ["conv", "delete", "-"],
        ["conv", "import", "-"],
        ["api", "-X", "POST", "/v1/conversations", "-d", "-"],
    ):
        code, err, reads = refused_without_reading(invoke, "--profile", "guarded", *args)
        assert code == 2, (args, err)
        assert "nothing was sent" in err, (args, err)
        assert reads == 0, args


# -- --max-affected -------------------------------------------------------------------------------


def test_max_affected_refuses_an_update_or_delete_of_more_ids_and_writes_nothing(
    twin: Twin,
) -> None:
    convs, _ = seed(twin, 3)
    before = everything(twin)
    stdin = "\n".join(convs) + "\n"
    for args, given in [
        (["conv", "update", *convs, "--mute"], None),
        (["conv", "update", "-", "--mute"], stdin),
        (["conv", "delete", *convs, "--yes"], None),
        (["conv", "delete", "-", "--yes"], stdin),
    ]:
        result = twin.run(*args, "--max-affected", "2", input=given)
        assert result.code == 2, (args, result.stderr)
        assert result.stdout == ""
        assert "3 records, more than --max-affected 2; nothing was sent." in result.stderr
    assert everything(twin) == before
    muted = twin.run(
        "conv", "update", "-", "--mute", "--max-affected", "3", "-o", "id", input=stdin
    )
    assert ok(muted).split() == convs
    gone = twin.run("conv", "delete", *convs[:2], "--yes", "--max-affected", "2", "-o", "id")
    assert ok(gone).split() == convs[:2]
    assert twin.count("conversations") == 1


@pytest.mark.parametrize("where", ["file", "stdin"])
def test_max_affected_counts_an_import_s_records_before_writing_any(
    twin: Twin,
    tmp_path: Path,
    where: str,
) -> None:
    text = "".join(
        f'{{"customer_id": "cus_{n}", "profile_type": "moderate", "score": {n}}}\n'
        for n in range(5)
    )
    path = tmp_path / "profiles.jsonl"
    path.write_text(text)
    source = [str(path)] if where == "file" else ["-"]
    stdin = text if where == "stdin" else None
    refused = twin.run("risk", "import", *source, "--max-affected", "4", input=stdin)
    assert refused.code == 2, refused.stderr
    assert "import risk profiles: 5 records, more than --max-affected 4" in refused.stderr
    assert twin.count("risk_profiles") == 0
    done = twin.run("risk", "import", *source, "--max-affected", "5", "-o", "json", input=stdin)
    assert [row["status"] for row in json.loads(ok(done))] == ["created"] * 5
    assert [row["line"] for row in json.loads(done.stdout)] == [1, 2, 3, 4, 5]
    assert twin.count("risk_profiles") == 5


def test_max_affected_that_is_not_a_whole_number_is_exit_2_naming_it(twin: Twin) -> None:
    convs, _ = seed(twin, 1)
    for bad in ("x", "-1", "1.5"):
        result = twin.run("conv", "update", convs[0], "--mute", "--max-affected", bad)
        assert result.code == 2
        assert "--max-affected must be" in result.stderr
    assert json.loads(ok(twin.run("conv", "get", convs[0], "-o", "json")))["is_muted"] is False


# -- the marks shown ------------------------------------------------------------------------------


def test_status_and_config_profiles_show_both_marks(
    twin: Twin, terminal: Callable[..., None]
) -> None:
    # The table as a real 80-column terminal shows it: tests/e2e/test_guards.py.
    mark(twin, "prod", "protected")
    mark(twin, "ro", "read_only")
    mark(twin, "both", "protected", "read_only")
    for profile, protected, read_only, writes in [
        ("default", False, False, "allowed"),
        ("both", True, True, "refused: the profile is read-only (and protected)"),
        ("prod", True, False, "protected: each asks for the number of records typed back"),
        ("ro", False, True, "refused: the profile is read-only"),
    ]:
        shown = json.loads(ok(twin.run("--profile", profile, "status", "-o", "json")))
        assert (shown["protected"], shown["read_only"]) == (protected, read_only)
        lines = ok(twin.run("--profile", profile, "status")).splitlines()
        assert lines[3].startswith(f"writes   {writes}"), lines
    rows = json.loads(ok(twin.run("config", "profiles", "-o", "json")))
    assert [(r["name"], r["protected"], r["read_only"]) for r in rows] == [
        ("default", False, False),
        ("prod", True, False),
        ("ro", False, True),
        ("both", True, True),
    ]
    csv = ok(twin.run("config", "profiles", "-o", "csv")).splitlines()
    assert csv[0].endswith(",protected,read_only") and csv[2].endswith(",true,false")
    terminal("stdout")
    screen = ok(twin.run("config", "profiles", COLUMNS="80")).splitlines()
    assert screen[0].split() == ["PROFILE", "BACKEND", "TOKEN", "MARKS"]
    assert screen[2].split()[0] == "prod" and screen[2].endswith("protected")
    assert screen[3].split()[0] == "ro" and screen[3].endswith("read-only")
    assert screen[4].split()[0] == "both" and screen[4].endswith("read-only, protected")


# -- bad values -----------------------------------------------------------------------------------


def config_of(twin: Twin) -> Path:
    """The config file of the twin's HOME."""
    return twin.home / "config" / "convrisk" / "config.toml"


def test_a_mark_that_is_not_true_or_false_is_exit_2_naming_the_key(twin: Twin) -> None:
    ok(twin.run("config", "set", "--profile", "prod", "timeout", "5"))
    saved = config_of(twin).read_bytes()
    for key in ("protected", "read_only"):
        result = twin.run("config", "set", "--profile", "prod", key, "maybe")
        assert result.code == 2
        assert result.stderr.strip() == f"Error: {key} must be true or false."
    assert config_of(twin).read_bytes() == saved
    for value in ('"maybe"', "1", "[]"):
        config_of(twin).write_text(f"[prod]\nread_only = {value}\n")
        for args in (["conv", "create", "--contact-id", "c"], ["conv", "list"], ["status"]):
            result = twin.run("--profile", "prod", *args)
            assert result.code == 2, (value, args)
            assert "[prod]: read_only must be true or false." in result.stderr
        listed = twin.run("config", "profiles")
        assert listed.code == 2 and "read_only must be true or false" in listed.stderr
    env_bad = twin.run("conv", "create", "--contact-id", "c", CONVRISK_PROTECTED="perhaps")
    assert env_bad.code == 2
    assert "CONVRISK_PROTECTED: protected must be true or false." in env_bad.stderr
    assert twin.count("conversations") == 0


# -- the protected question on a terminal ---------------------------------------------------------

QUESTION = "Type the number of records ({n}) to {what}:"


def test_the_protected_question_on_a_terminal_writes_when_the_count_is_typed_back(
    twin: Twin, terminal: Callable[..., None]
) -> None:
    # On a real pseudo-terminal, rendered at 80 columns, in tests/e2e/test_guards.py.
    convs, _ = seed(twin, 3)
    mark(twin, "prod", "protected")
    terminal("stdin", "stdout", "stderr")
    result = twin.run("--profile", "prod", "conv", "delete", *convs[:2], input="2\n")
    assert result.code == 0, result.stderr
    banner = f"Protected profile 'prod' ({twin.where}): delete conversations: 2 records."
    said = result.stderr.splitlines()
    assert said == [banner, QUESTION.format(n=2, what="delete conversations") + " "]
    assert twin.count("conversations") == 1
    shown = result.stdout.splitlines()
    assert shown[0].split() == ["ID", "DELETED"]
    assert [line.split()[0] for line in shown[1:]] == convs[:2]
    # No yes/no question after the count: the typed-back count is the confirmation.
    assert "[y/N]" not in result.stdout + result.stderr


@pytest.mark.parametrize("answer", ["3\n", "y\n", "\n", ""])
def test_a_wrong_count_or_no_answer_at_the_protected_question_writes_nothing(
    twin: Twin, terminal: Callable[..., None], answer: str
) -> None:
    # Typed on a real pseudo-terminal (Ctrl-D: no answer) in tests/e2e/test_guards.py.
    convs, _ = seed(twin, 2)
    mark(twin, "prod", "protected")
    terminal("stdin", "stdout", "stderr")
    result = twin.run("--profile", "prod", "conv", "update", *convs, "--mute", input=answer)
    assert result.code == 1
    assert QUESTION.format(n=2, what="update conversations") in result.stderr
    said = "no answer" if answer == "" else "the answer was not 2"
    assert result.stderr.endswith(f"Aborted ({said}): nothing was sent.\n"), result.stderr
    rows = json.loads(ok(twin.run("conv", "list", "-o", "json")))
    assert [row["is_muted"] for row in rows] == [False, False]
