"""The command line takes what is typed as gh, kubectl and POSIX utilities do: one suggestion
for a mistyped command, `--` before a value that starts with `-`, `--version` after any command,
a "no" at a question that is no error, and `serve` options that are refused rather than ignored.
Each behaviour once; its variants (every command, both backends) run in-process in
tests/cli/test_arguments_as_typed.py."""

from __future__ import annotations

import os
import select
import subprocess
import time
import tomllib
from pathlib import Path
from typing import Any

from convrisk.api_client import __version__

from .both_backends import Cli
from .both_backends import over_serve as over_serve  # a fixture: convrisk against its own serve
from .console import CONVRISK, SAFETY_TIMEOUT, run
from .screen import Terminal


def test_a_mistyped_command_gets_one_suggestion(env: dict[str, str]) -> None:
    args, suggestion = ["cnv", "list"], "'conv'"  # a mistyped subcommand too, in-process
    result = run(env, *args)
    assert result.returncode == 2
    assert result.stderr.count("Did you mean") == 1, result.stderr
    assert f"Did you mean {suggestion}?" in result.stderr
    assert result.stderr.count("\n") == 1


def config_file(env: dict[str, str]) -> dict[str, Any]:
    """The config file as TOML."""
    path = Path(env["XDG_CONFIG_HOME"]) / "convrisk" / "config.toml"
    return tomllib.loads(path.read_text(encoding="utf-8"))


def test_a_value_after_double_dash_may_start_with_a_dash(env: dict[str, str]) -> None:
    token = "-sq0P" + "x" * 38  # as serve used to make them
    refused = run(env, "config", "set", "token", token)
    assert refused.returncode == 2
    assert "goes after --: convrisk config set token -- VALUE" in refused.stderr
    assert token not in refused.stderr
    done = run(env, "config", "set", "token", "--", token)
    assert done.returncode == 0, done.stderr
    assert config_file(env)["default"]["token"] == token
    # `--` after an option that takes a value is that value, not the end of the options.
    other = run(env, "config", "set", "--profile", "p1", "--", "token", "-" + "y" * 30)
    assert other.returncode == 0, other.stderr
    assert config_file(env)["p1"]["token"] == "-" + "y" * 30


def test_a_dash_after_double_dash_still_reads_stdin(env: dict[str, str]) -> None:
    done = run(env, "config", "set", "token", "--", "-", input="z" * 30 + "\n")
    assert done.returncode == 0, done.stderr
    assert config_file(env)["default"]["token"] == "z" * 30


def test_a_value_after_double_dash_is_still_checked(env: dict[str, str]) -> None:
    for key, value, named in (("max_retries", "-1", "max_retries"), ("output", "-x", "output")):
        result = run(env, "config", "set", key, "--", value)
        assert result.returncode == 2
        assert named in result.stderr and "No such option" not in result.stderr, result.stderr


def test_version_after_any_command_prints_the_version(env: dict[str, str]) -> None:
    # Before a missing ID is noticed; after every other command, in-process.
    result = run(env, "risk", "get", "--version")
    assert (result.returncode, result.stdout, result.stderr) == (0, f"convrisk {__version__}\n", "")


def test_no_at_the_delete_question_aborts_without_an_error(env: dict[str, str], store: Any) -> None:
    conv_id = store.conversations.create({"contact_id": "c"})["id"]
    term = Terminal(env, ["conv", "delete", conv_id], columns=100)
    term.read_until(b"[y/N]")
    term.send(b"n\r")
    assert term.finish() == 1
    lines = term.text()
    assert lines[-1] == "Aborted: nothing was deleted."
    assert not any("Error" in line for line in lines), lines
    assert [c["id"] for c in store.conversations.list()["data"]] == [conv_id]


# -- serve serves a local database --------------------------------------------------------------


def test_serve_refuses_a_base_url(env: dict[str, str]) -> None:
    # As a global option; after `serve` too, in-process.
    result = run(env, "--base-url", "http://127.0.0.1:9", "serve", "--port", "0")
    assert result.returncode == 2
    assert "serve serves a local database: --base-url does not apply" in result.stderr
    assert "listening" not in result.stderr


def test_serve_refuses_a_remote_profile_without_a_db(env: dict[str, str]) -> None:
    assert (
        run(env, "config", "set", "--profile", "far", "base_url", "http://127.0.0.1:9").returncode
        == 0
    )
    result = run(env, "serve", "--profile", "far", "--port", "0")
    assert result.returncode == 2
    assert "Profile 'far' is remote (base_url) and sets no db" in result.stderr
    assert "listening" not in result.stderr


def test_serve_with_a_profile_serves_that_profiles_db(env: dict[str, str], tmp_path: Path) -> None:
    chosen = tmp_path / "chosen.db"
    assert run(env, "config", "set", "--profile", "near", "db", str(chosen)).returncode == 0
    proc = subprocess.Popen(
        [str(CONVRISK), "serve", "--profile", "near", "--port", "0"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None
    seen = b""
    deadline = time.monotonic() + SAFETY_TIMEOUT
    try:
        while b"CONVRISK_BASE_URL" not in seen and time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stderr], [], [], 1)
            if ready:
                chunk = os.read(proc.stderr.fileno(), 4096)
                if not chunk:
                    break
                seen += chunk
    finally:
        proc.terminate()
        proc.wait(timeout=SAFETY_TIMEOUT)
        proc.stderr.close()
    assert f"convrisk serve: database {chosen}".encode() in seen, seen
    assert chosen.exists()


# -- stdin on a terminal: say what is awaited ---------------------------------------------------


def test_ids_read_from_the_terminal_are_asked_for(env: dict[str, str], store: Any) -> None:
    conv_id = store.conversations.create({"contact_id": "c"})["id"]
    term = Terminal(env, ["conv", "get", "-", "-o", "id"], columns=120)
    term.read_until(b"Ctrl-D")
    assert term.text() == ["Reading ids, one per line, from the terminal; end with Ctrl-D."]
    term.send(conv_id.encode() + b"\r")
    term.send(b"\x04")
    assert term.finish() == 0
    assert term.text()[-1] == conv_id


def test_details_read_from_the_terminal_are_asked_for(env: dict[str, str], store: Any) -> None:
    args = ["risk", "create", "--customer-id", "c", "--profile-type", "t", "--score", "1"]
    term = Terminal(env, [*args, "--details", "-", "-o", "id"], columns=120)
    term.read_until(b"Ctrl-D")
    assert term.text() == ["Reading --details (a JSON object) from the terminal; end with Ctrl-D."]
    term.send(b'{"reviewed": true}\r')
    term.send(b"\x04")
    assert term.finish() == 0
    (made,) = store.risk_profiles.list()["data"]
    assert made["details"] == {"reviewed": True}


def test_ids_from_a_pipe_are_read_without_a_word(env: dict[str, str], store: Any) -> None:
    conv_id = store.conversations.create({"contact_id": "c"})["id"]
    result = run(env, "conv", "get", "-", "-o", "id", input=conv_id + "\n")
    assert (result.returncode, result.stdout, result.stderr) == (0, conv_id + "\n", "")


# -- a bad body and a missing id: one order, one exit code, on both backends --------------------


def test_a_bad_body_for_a_missing_id_is_a_usage_error_on_both_backends(over_serve: Cli) -> None:
    # A conversation's body here; a risk profile's, and the local backend, in-process.
    args = ["conv", "update", "conv_00000000000000000000000000", "--pinned-message-id", "a\udcffb"]
    named = "pinned_message_id must be valid Unicode text"
    for dry_run in ([], ["--dry-run"]):
        result = over_serve.run(*args, *dry_run)
        assert result.returncode == 2, (over_serve.name, dry_run, result.stderr)
        assert named in result.stderr and "HTTP" not in result.stderr


def test_a_file_named_like_an_option_imports_after_double_dash(
    env: dict[str, str], store: Any, tmp_path: Path
) -> None:
    (tmp_path / "-new.jsonl").write_text('{"contact_id": "c_dash"}\n')
    result = subprocess.run(
        [str(CONVRISK), "conv", "import", "--", "-new.jsonl"],
        env=env,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=SAFETY_TIMEOUT,
    )
    assert result.returncode == 0, result.stderr
    assert [c["contact_id"] for c in store.conversations.list()["data"]] == ["c_dash"]


def test_an_api_body_read_from_the_terminal_is_asked_for(env: dict[str, str], store: Any) -> None:
    term = Terminal(env, ["api", "/v1/conversations", "-d", "-"], columns=120)
    term.read_until(b"Ctrl-D")
    assert term.text() == ["Reading the body of -d (JSON) from the terminal; end with Ctrl-D."]
    term.send(b'{"contact_id": "c_typed"}\r')
    term.send(b"\x04")
    assert term.finish() == 0
    assert [c["contact_id"] for c in store.conversations.list()["data"]] == ["c_typed"]
