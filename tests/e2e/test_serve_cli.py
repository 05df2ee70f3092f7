"""`convrisk serve` as a sandbox: its options, its token, its limits, and faults end to end."""

from __future__ import annotations

import os
import re
import resource
import socket
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from convrisk.api_client import Client
from convrisk.local_backend.faults import FAULTS
from convrisk.local_backend.store import LocalBackend

from .both_backends import TOKEN, Remote, isolated_env, serving
from .console import CONVRISK

pytestmark = pytest.mark.e2e


def run_serve(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`convrisk serve ARGS` expected to stop by itself (a refusal); never waits past 30 s."""
    return subprocess.run(
        [CONVRISK, "serve", "--port", "0", "--db", str(home / "s.db"), *args],
        capture_output=True,
        text=True,
        timeout=30,
        env=isolated_env(home, **env),
    )


@pytest.mark.parametrize(
    "token", ["my secret token", " ", "", "tab\there", "caf\u00e9", "new\nline"]
)
def test_a_token_that_is_not_a_header_token_is_refused_with_exit_2(
    tmp_path: Path, token: str
) -> None:
    for args, env in (
        (("--token", token), {}),
        ((), {"CONVRISK_SERVE_TOKEN": token}),
    ):
        result = run_serve(tmp_path, *args, **env)
        assert result.returncode == 2, result.stderr
        assert "listening" not in result.stderr
        assert ("empty" in result.stderr) or ("spaces or characters" in result.stderr)
        if token.strip():
            assert token not in result.stderr
    assert not (tmp_path / "s.db.token").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["--latency", "abc"],
        ["--latency", "50-10"],
        ["--latency", "70000"],
        ["--latency", "-5"],
        ["--faults", "1.5"],
        ["--faults", "-0.1"],
        ["--faults", "nan"],
        ["--seed", "-1"],
        ["--log-format", "xml"],
    ],
)
def test_bad_sandbox_options_are_usage_errors(tmp_path: Path, args: list[str]) -> None:
    result = run_serve(tmp_path, *args)
    assert result.returncode == 2, result.stderr
    assert args[0] in result.stderr
    assert "Traceback" not in result.stderr
    assert "listening" not in result.stderr


def test_a_token_file_that_is_not_a_token_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "s.db.token").write_text("two words\n")
    (tmp_path / "s.db.token").chmod(0o600)
    result = run_serve(tmp_path)
    assert result.returncode == 1
    assert "s.db.token" in result.stderr and "delete it" in result.stderr
    assert "two words" not in result.stderr


def test_the_banner_says_what_is_injected_and_the_seed_that_repeats_it(tmp_path: Path) -> None:
    with serving(tmp_path, "--faults", "0.25", "--latency", "1-3", "--seed", "77") as served:
        line = next(line for line in served.banner if "faults" in line)
        assert "latency 1-3 ms" in line and "faults 25%" in line and "--seed 77" in line
        code, _ = served.stop()
    assert code == 0


def test_twenty_creates_through_faults_make_exactly_twenty_records(tmp_path: Path) -> None:
    # The seed is chosen so that every fault kind shows up during the run (it is repeatable).
    with serving(tmp_path, "--faults", "0.3", "--seed", "13") as served:
        cli = Remote(tmp_path, served.url, TOKEN)
        for n in range(20):
            result = cli.run(
                "conv", "create", "--contact-id", f"ct_fault_{n}", "-o", "id",
                CONVRISK_MAX_RETRIES="10",
            )  # fmt: skip
            assert result.returncode == 0, result.stderr
        code, log = served.stop()
    assert code == 0, log
    kinds = Counter(re.findall(r" fault=(\S+)$", log, re.M))
    assert set(kinds) == set(FAULTS), kinds
    with Client(LocalBackend(served.db_path)) as client:
        contacts = Counter(c["contact_id"] for c in client.conversations.iterate())
    assert contacts == Counter(f"ct_fault_{n}" for n in range(20))


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) a process has used so far, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _nofile_128() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128))


def test_half_sent_connections_beyond_the_descriptor_limit_do_not_stop_service(
    tmp_path: Path,
) -> None:
    """250 clients that send half a request, against a server with 128 descriptors: the head
    deadline frees them, and a normal client is served (the old server stopped for everyone)."""
    db_path = tmp_path / "serve.db"
    proc = subprocess.Popen(
        [CONVRISK, "serve", "--port", "0", "--db", str(db_path), "--token", TOKEN],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=isolated_env(tmp_path),
        preexec_fn=_nofile_128,
    )
    assert proc.stderr is not None
    url = ""
    for line in proc.stderr:
        match = re.match(r"convrisk serve: listening on (http://\S+)$", line)
        if match:
            url = match.group(1)
            break
    assert url, "serve did not start"
    port = int(url.rsplit(":", 1)[1])
    half: list[socket.socket] = []
    try:
        for _ in range(250):
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            sock.sendall(b"GET /v1/conversations HTTP/1.1\r\nHost: x\r\n")
            half.append(sock)
        cpu_before, wall_before = cpu_seconds(proc.pid), time.monotonic()
        result = Remote(tmp_path, url, TOKEN).run(
            "conv", "list", "-o", "json", CONVRISK_MAX_RETRIES="10", CONVRISK_TIMEOUT="60"
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "[]"
        # Meanwhile the server waited rather than spun (the old one pinned a CPU): a busy loop
        # would use about all of the time; waiting uses a small part of it.
        spent = cpu_seconds(proc.pid) - cpu_before
        assert spent < 0.5 * (time.monotonic() - wall_before), spent
    finally:
        for sock in half:
            sock.close()
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
