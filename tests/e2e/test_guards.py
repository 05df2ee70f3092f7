"""Protected and read-only profiles and --max-affected (DESIGN 5.3): the installed convrisk
against a `convrisk serve` subprocess (on the local database where stdin or a signal is the
point); the protected question on a real terminal, rendered at 80 columns. The variants (both
backends, every mark, answer and source) run in-process in tests/cli/test_guards.py."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from .both_backends import Cli
from .both_backends import over_serve as over_serve  # a fixture: convrisk against its own serve
from .screen import Terminal

WRITE_METHODS = (" POST ", " PUT ", " PATCH ", " DELETE ")


def ok(result: Any) -> str:
    assert result.returncode == 0, result.stderr
    return str(result.stdout)


def mark(cli: Cli, profile: str, *keys: str) -> None:
    """Make `profile` (on the same backend as `cli`) carry these marks."""
    for key in keys:
        ok(cli.run("config", "set", "--profile", profile, key, "true"))


def seed(cli: Cli, conversations: int = 2) -> tuple[list[str], str]:
    """Conversations and one risk profile, made under the default profile: their ids."""
    convs = [
        ok(cli.run("conv", "create", "--contact-id", f"c_{n}", "-o", "id")).strip()
        for n in range(conversations)
    ]
    risk = ["--customer-id", "cus_1", "--profile-type", "moderate", "--score", "5", "-o", "id"]
    return convs, ok(cli.run("risk", "create", *risk)).strip()


def everything(cli: Cli) -> str:
    """Every record of both resources, as JSON lines: equal before and after means unchanged."""
    return ok(cli.run("conv", "list", "--all", "-o", "jsonl")) + ok(
        cli.run("risk", "list", "--all", "-o", "jsonl")
    )


def settle_log(cli: Cli, marker: str) -> int:
    """Send one GET that serve logs, wait for its line: the log's length then (every request
    sent before it is in the log by now)."""
    assert cli.serve is not None
    ok(cli.run("api", f"/v1/conversations?limit=1&group_id={marker}"))
    deadline = time.monotonic() + 10
    while not any(marker in line for line in cli.serve.log):
        assert time.monotonic() < deadline, cli.serve.log
        time.sleep(0.05)
    return len(cli.serve.log)


def writes_sent(cli: Cli, start: int, end: int) -> list[str]:
    """The write requests serve logged between two settle_log marks."""
    assert cli.serve is not None
    return [line for line in cli.serve.log[start:end] if any(m in line for m in WRITE_METHODS)]


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
    over_serve: Cli,
    tmp_path: Path,
) -> None:
    convs, rp = seed(over_serve)
    mark(over_serve, "ro", "read_only")
    before = everything(over_serve)
    start = settle_log(over_serve, "before") if over_serve.remote else 0
    for args, stdin in write_commands(tmp_path, convs, rp):
        result = over_serve.run("--profile", "ro", *args, input=stdin)
        assert result.returncode == 2, (args, result.stderr)
        assert result.stdout == "", args
        lines = result.stderr.splitlines()
        assert len(lines) == 1, (args, lines)
        assert lines[0].startswith("Error: The profile 'ro' is read-only"), lines
        assert lines[0].endswith("nothing was sent."), lines
    assert everything(over_serve) == before
    if over_serve.remote:
        assert writes_sent(over_serve, start, settle_log(over_serve, "after")) == []


def test_a_read_only_profile_still_reads_and_plans(over_serve: Cli) -> None:
    convs, _ = seed(over_serve)
    mark(over_serve, "ro", "read_only")
    before = everything(over_serve)
    assert ok(over_serve.run("--profile", "ro", "conv", "list", "-o", "id")).split() == convs[::-1]
    ok(over_serve.run("--profile", "ro", "api", "/v1/conversations"))
    planned = over_serve.run("--profile", "ro", "conv", "delete", *convs, "--dry-run", "-o", "json")
    assert [row["operation"] for row in json.loads(ok(planned))] == ["delete", "delete"]
    ok(over_serve.run("--profile", "ro", "conv", "create", "--contact-id", "c", "--dry-run"))
    assert everything(over_serve) == before


def test_read_only_from_the_environment_refuses_and_false_there_does_not_lift_the_profile_s(
    over_serve: Cli,
) -> None:
    by_env = over_serve.run("conv", "create", "--contact-id", "c", CONVRISK_READ_ONLY="1")
    assert by_env.returncode == 2
    assert "The profile 'default' is read-only (CONVRISK_READ_ONLY is set)" in by_env.stderr
    mark(over_serve, "ro", "read_only")
    lifted = over_serve.run(
        "--profile", "ro", "conv", "create", "--contact-id", "c", CONVRISK_READ_ONLY="0"
    )
    assert lifted.returncode == 2 and "is read-only" in lifted.stderr
    assert over_serve.count("conversations") == 0


# -- protected ------------------------------------------------------------------------------------


def test_a_protected_profile_without_a_terminal_refuses_every_write_without_yes(
    over_serve: Cli,
    tmp_path: Path,
) -> None:
    convs, rp = seed(over_serve)
    mark(over_serve, "prod", "protected")
    before = everything(over_serve)
    start = settle_log(over_serve, "before") if over_serve.remote else 0
    for args, stdin in write_commands(tmp_path, convs, rp):
        args = [arg for arg in args if arg != "--yes"]
        result = over_serve.run("--profile", "prod", *args, input=stdin)
        assert result.returncode == 2, (args, result.stderr)
        assert result.stdout == ""
        assert result.stderr.startswith("Error: The profile 'prod' is protected"), result.stderr
        assert "Pass --yes" in result.stderr and "nothing was sent" in result.stderr
    assert everything(over_serve) == before
    if over_serve.remote:
        assert writes_sent(over_serve, start, settle_log(over_serve, "after")) == []


def test_a_protected_profile_with_yes_writes_after_a_banner_naming_the_profile_and_target(
    over_serve: Cli,
    tmp_path: Path,
) -> None:
    convs, rp = seed(over_serve, 3)
    mark(over_serve, "prod", "protected")
    where = (
        over_serve.serve.url if over_serve.serve is not None else f"database {over_serve.db_path}"
    )

    def banner_of(*args: str, stdin: str | None = None) -> str:
        result = over_serve.run("--profile", "prod", *args, "--yes", input=stdin)
        assert result.returncode == 0, (args, result.stderr)
        lines = result.stderr.splitlines()
        assert lines[0].startswith(f"Protected profile 'prod' ({where}): "), lines
        return lines[0]

    made = banner_of("conv", "create", "--contact-id", "c_new")
    assert made.endswith(": create a conversation: 1 record.")
    assert banner_of("conv", "update", *convs[:2], "--mute").endswith(
        ": update conversations: 2 records."
    )
    assert json.loads(ok(over_serve.run("conv", "get", convs[0], "-o", "json")))["is_muted"] is True
    banner_of("risk", "update", rp, "--score", "50")
    assert json.loads(ok(over_serve.run("risk", "get", rp, "-o", "json")))["score"] == 50
    records = tmp_path / "more.jsonl"
    records.write_text('{"contact_id": "c_a"}\n{"contact_id": "c_b"}\n')
    banner_of("conv", "import", str(records))
    banner_of("api", "-X", "POST", "/v1/conversations", "-d", '{"contact_id": "c_api"}')
    assert banner_of("conv", "delete", "-", stdin=f"{convs[2]}\n").endswith(
        ": delete conversations."
    )
    contacts = {
        c["contact_id"] for c in json.loads(ok(over_serve.run("conv", "list", "-o", "json")))
    }
    assert contacts == {"c_0", "c_1", "c_new", "c_a", "c_b", "c_api"}
    # An ordinary profile prints no banner and asks nothing.
    plain = over_serve.run("conv", "create", "--contact-id", "c_plain", "-o", "id")
    assert plain.returncode == 0 and plain.stderr == ""


def test_a_refused_write_does_not_wait_for_its_stdin(tmp_path: Path) -> None:
    """Refused before stdin is read: stdin stays open with nothing written to it, and the
    command still ends at once. A protected profile here, on a real pipe; both marks, with a
    stdin that notes any read, in-process in tests/cli/test_guards.py."""
    mark_key = "protected"
    import subprocess

    from .both_backends import local_cli
    from .console import CONVRISK, SAFETY_TIMEOUT

    local = local_cli(tmp_path)
    mark(local, "guarded", mark_key)
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
        child = subprocess.Popen(
            [str(CONVRISK), "--profile", "guarded", *args],
            env=local.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        assert child.stdin is not None and child.stderr is not None
        try:
            code = child.wait(timeout=SAFETY_TIMEOUT / 4)  # stdin stays open meanwhile
        finally:
            if child.poll() is None:
                child.kill()
                child.wait(timeout=SAFETY_TIMEOUT)
            child.stdin.close()
        err = child.stderr.read()
        assert code == 2, (args, err)
        assert "nothing was sent" in err, (args, err)
    local.close()


# -- --max-affected -------------------------------------------------------------------------------


def test_max_affected_refuses_an_update_or_delete_of_more_ids_and_writes_nothing(
    over_serve: Cli,
) -> None:
    convs, _ = seed(over_serve, 3)
    before = everything(over_serve)
    stdin = "\n".join(convs) + "\n"
    for args, given in [
        (["conv", "update", *convs, "--mute"], None),
        (["conv", "update", "-", "--mute"], stdin),
        (["conv", "delete", *convs, "--yes"], None),
        (["conv", "delete", "-", "--yes"], stdin),
    ]:
        result = over_serve.run(*args, "--max-affected", "2", input=given)
        assert result.returncode == 2, (args, result.stderr)
        assert result.stdout == ""
        assert "3 records, more than --max-affected 2; nothing was sent." in result.stderr
    assert everything(over_serve) == before
    muted = over_serve.run(
        "conv", "update", "-", "--mute", "--max-affected", "3", "-o", "id", input=stdin
    )
    assert ok(muted).split() == convs
    gone = over_serve.run("conv", "delete", *convs[:2], "--yes", "--max-affected", "2", "-o", "id")
    assert ok(gone).split() == convs[:2]
    assert over_serve.count("conversations") == 1


def test_max_affected_counts_an_import_s_records_before_writing_any(
    over_serve: Cli,
    tmp_path: Path,
) -> None:
    # From a pipe on stdin, which cannot be read twice (kept in a file to be counted first); a
    # file, and the local database, in-process in tests/cli/test_guards.py.
    where = "stdin"
    text = "".join(
        f'{{"customer_id": "cus_{n}", "profile_type": "moderate", "score": {n}}}\n'
        for n in range(5)
    )
    path = tmp_path / "profiles.jsonl"
    path.write_text(text)
    source = [str(path)] if where == "file" else ["-"]
    stdin = text if where == "stdin" else None
    refused = over_serve.run("risk", "import", *source, "--max-affected", "4", input=stdin)
    assert refused.returncode == 2, refused.stderr
    assert "import risk profiles: 5 records, more than --max-affected 4" in refused.stderr
    assert over_serve.count("risk_profiles") == 0
    done = over_serve.run(
        "risk", "import", *source, "--max-affected", "5", "-o", "json", input=stdin
    )
    assert [row["status"] for row in json.loads(ok(done))] == ["created"] * 5
    assert [row["line"] for row in json.loads(done.stdout)] == [1, 2, 3, 4, 5]
    assert over_serve.count("risk_profiles") == 5


def test_max_affected_that_is_not_a_whole_number_is_exit_2_naming_it(over_serve: Cli) -> None:
    convs, _ = seed(over_serve, 1)
    for bad in ("x", "-1", "1.5"):
        result = over_serve.run("conv", "update", convs[0], "--mute", "--max-affected", bad)
        assert result.returncode == 2
        assert "--max-affected must be" in result.stderr
    assert (
        json.loads(ok(over_serve.run("conv", "get", convs[0], "-o", "json")))["is_muted"] is False
    )


# -- the marks shown ------------------------------------------------------------------------------


def test_status_and_config_profiles_show_both_marks(over_serve: Cli) -> None:
    mark(over_serve, "prod", "protected")
    mark(over_serve, "ro", "read_only")
    mark(over_serve, "both", "protected", "read_only")
    for profile, protected, read_only, writes in [
        ("default", False, False, "allowed"),
        ("both", True, True, "refused: the profile is read-only (and protected)"),
        ("prod", True, False, "protected: each asks for the number of records typed back"),
        ("ro", False, True, "refused: the profile is read-only"),
    ]:
        shown = json.loads(ok(over_serve.run("--profile", profile, "status", "-o", "json")))
        assert (shown["protected"], shown["read_only"]) == (protected, read_only)
        lines = ok(over_serve.run("--profile", profile, "status")).splitlines()
        assert lines[3].startswith(f"writes   {writes}"), lines
    rows = json.loads(ok(over_serve.run("config", "profiles", "-o", "json")))
    assert [(r["name"], r["protected"], r["read_only"]) for r in rows] == [
        ("default", False, False),
        ("prod", True, False),
        ("ro", False, True),
        ("both", True, True),
    ]
    csv = ok(over_serve.run("config", "profiles", "-o", "csv")).splitlines()
    assert csv[0].endswith(",protected,read_only") and csv[2].endswith(",true,false")
    term = Terminal(over_serve.env, ["config", "profiles"], columns=80)
    assert term.finish() == 0
    screen = term.text()
    assert screen[0].split() == ["PROFILE", "BACKEND", "TOKEN", "MARKS"]
    assert screen[2].split()[0] == "prod" and screen[2].endswith("protected")
    assert screen[3].split()[0] == "ro" and screen[3].endswith("read-only")
    assert screen[4].split()[0] == "both" and screen[4].endswith("read-only, protected")


# -- bad values -----------------------------------------------------------------------------------


def config_file(cli: Cli) -> Path:
    return Path(cli.env["XDG_CONFIG_HOME"]) / "convrisk" / "config.toml"


def test_a_mark_that_is_not_true_or_false_is_exit_2_naming_the_key(over_serve: Cli) -> None:
    ok(over_serve.run("config", "set", "--profile", "prod", "timeout", "5"))
    saved = config_file(over_serve).read_bytes()
    for key in ("protected", "read_only"):
        result = over_serve.run("config", "set", "--profile", "prod", key, "maybe")
        assert result.returncode == 2
        assert result.stderr.strip() == f"Error: {key} must be true or false."
    assert config_file(over_serve).read_bytes() == saved
    for value in ('"maybe"', "1", "[]"):
        config_file(over_serve).write_text(f"[prod]\nread_only = {value}\n")
        for args in (["conv", "create", "--contact-id", "c"], ["conv", "list"], ["status"]):
            result = over_serve.run("--profile", "prod", *args)
            assert result.returncode == 2, (value, args)
            assert "[prod]: read_only must be true or false." in result.stderr
        listed = over_serve.run("config", "profiles")
        assert listed.returncode == 2 and "read_only must be true or false" in listed.stderr
    env_bad = over_serve.run("conv", "create", "--contact-id", "c", CONVRISK_PROTECTED="perhaps")
    assert env_bad.returncode == 2
    assert "CONVRISK_PROTECTED: protected must be true or false." in env_bad.stderr
    assert over_serve.count("conversations") == 0


# -- the protected question on a terminal ---------------------------------------------------------

QUESTION = "Type the number of records ({n}) to {what}:"


def test_the_protected_question_on_a_terminal_writes_when_the_count_is_typed_back(
    over_serve: Cli,
) -> None:
    convs, _ = seed(over_serve, 3)
    mark(over_serve, "prod", "protected")
    term = Terminal(over_serve.env, ["--profile", "prod", "conv", "delete", *convs[:2]], columns=80)
    term.read_until(b"to delete conversations: ")
    screen = term.text()
    assert screen[0].startswith("Protected profile 'prod' ("), screen
    where = (
        over_serve.serve.url if over_serve.serve is not None else f"database {over_serve.db_path}"
    )
    banner = f"Protected profile 'prod' ({where}): delete conversations: 2 records."
    assert "".join(term.screen().display).replace(" ", "").startswith(banner.replace(" ", ""))
    assert screen[-1] == QUESTION.format(n=2, what="delete conversations")
    term.send(b"2\r")
    assert term.finish() == 0
    assert over_serve.count("conversations") == 1
    shown = term.text()
    question = shown.index(QUESTION.format(n=2, what="delete conversations") + " 2")
    assert shown[question + 1].split() == ["ID", "DELETED"]
    assert [line.split()[0] for line in shown[question + 2 :]] == convs[:2]
    # No yes/no question after the count: the typed-back count is the confirmation.
    assert not any("[y/N]" in line for line in shown)


def test_a_wrong_count_or_no_answer_at_the_protected_question_writes_nothing(
    over_serve: Cli,
) -> None:
    # Ctrl-D, the end of input only a terminal sends; a wrong count, "y" and an empty answer, and
    # the local database, in-process in tests/cli/test_guards.py.
    answer = b"\x04"
    convs, _ = seed(over_serve, 2)
    mark(over_serve, "prod", "protected")
    term = Terminal(
        over_serve.env, ["--profile", "prod", "conv", "update", *convs, "--mute"], columns=80
    )
    term.read_until(b"to update conversations: ")
    term.send(answer)
    assert term.finish() == 1
    last = term.text()[-1]
    said = "no answer" if answer == b"\x04" else "the answer was not 2"
    assert last == f"Aborted ({said}): nothing was sent."
    rows = json.loads(ok(over_serve.run("conv", "list", "-o", "json")))
    assert [row["is_muted"] for row in rows] == [False, False]


def test_ctrl_c_at_the_protected_question_is_interrupted_and_writes_nothing(
    tmp_path: Path,
) -> None:
    from .both_backends import local_cli

    local = local_cli(tmp_path)
    mark(local, "prod", "protected")
    term = Terminal(
        local.env, ["--profile", "prod", "conv", "create", "--contact-id", "c"], columns=80
    )
    term.read_until(b"to create a conversation: ")
    term.send(b"\x03")
    assert term.finish() == 130
    shown = term.text()
    assert shown[-2].startswith(QUESTION.format(n=1, what="create a conversation"))
    assert shown[-1] == "Interrupted."
    assert local.count("conversations") == 0
    local.close()


def test_the_protected_question_goes_to_the_terminal_when_stdin_carries_the_records(
    tmp_path: Path,
) -> None:
    from .both_backends import local_cli

    local = local_cli(tmp_path)
    mark(local, "prod", "protected")
    records = tmp_path / "in.csv"
    records.write_text("contact_id\nc_1\nc_2\nc_3\n")
    with records.open() as stdin:
        term = Terminal(
            local.env,
            ["--profile", "prod", "conv", "import", "-", "-o", "id"],
            columns=80,
            stdin=stdin,
        )
        term.read_until(b"to import conversations: ")
        assert term.text()[-1] == QUESTION.format(n=3, what="import conversations")
        term.send(b"3\r")
        assert term.finish() == 0
    assert local.count("conversations") == 3
    local.close()
