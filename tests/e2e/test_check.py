"""`convrisk check` through the installed script: passing against a real `convrisk serve` and
leaving nothing behind, failing against a loopback service that changes one field, JUnit XML,
--keep, Ctrl-C, and the profiles it refuses or asks under. Each behaviour runs once here; the
variants of one (each output format check cannot print) run in-process: tests/cli/test_check.py."""

from __future__ import annotations

import json
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar
from xml.etree import ElementTree as ET

import httpx
import pytest

from tests.loopback import JSONService, on_loopback, running, url_of

from .both_backends import Serve, isolated_env, serve, serving
from .console import SAFETY_TIMEOUT, piped, run
from .screen import Terminal

__all__ = ["serve"]

RECORDS_CREATED = 9  # what the question of a protected profile asks to be typed back


@pytest.fixture
def client_env(serve: Serve, tmp_path: Path) -> dict[str, str]:
    """A client of `serve` with a home of its own; the service holds records of others: a
    muted conversation, an archived one and a risk profile (so lists hold more than the
    check's)."""
    env = {
        **isolated_env(tmp_path / "client"),
        "CONVRISK_BASE_URL": serve.url,
        "CONVRISK_TOKEN": serve.token,
    }
    auth = {"Authorization": f"Bearer {serve.token}"}
    with httpx.Client(base_url=serve.url, headers=auth, timeout=10) as http:
        muted = http.post("/v1/conversations", json={"contact_id": "someone"}).json()["id"]
        http.put(f"/v1/conversations/{muted}", json={"is_muted": True, "is_pinned": True})
        archived = http.post("/v1/conversations", json={"group_id": "team"}).json()["id"]
        http.put(f"/v1/conversations/{archived}", json={"archived_at": 1_600_000_000})
        profile = {"customer_id": "cus_9", "profile_type": "aggressive", "score": 3, "details": {}}
        http.post("/v1/risk-profiles", json=profile)
    return env


def held(env: dict[str, str]) -> list[dict[str, Any]]:
    """Every record the service holds, ids and times included (the sandbox's snapshot)."""
    result = run(env, "sandbox", "snapshot", "-")
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_check_passes_against_serve_and_leaves_the_service_as_it_was(
    client_env: dict[str, str],
) -> None:
    before = held(client_env)
    result = run(client_env, "check")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == ""
    assert f"Checked: {steps(result)} steps run, 0 differences." in result.stderr.splitlines()
    assert "Deleted the 7 records the check left." in result.stderr
    assert held(client_env) == before
    assert client_env["CONVRISK_TOKEN"] not in result.stdout + result.stderr


def test_check_passes_against_a_sandbox_with_a_fixed_clock_and_seeded_ids(tmp_path: Path) -> None:
    """A sandbox stamping 2025 (or any time of the document's range) is not a service whose
    times are wrong: check masks its times once they are Unix seconds."""
    with serving(tmp_path, "--seed", "7", "--clock", "2025-01-01T00:00:00Z") as sandbox:
        env = isolated_env(tmp_path, CONVRISK_BASE_URL=sandbox.url, CONVRISK_TOKEN=sandbox.token)
        result = run(env, "check")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == ""


def steps(result: Any) -> int:
    """The number of steps the check announced on stderr."""
    first = result.stderr.splitlines()[0]
    assert first.startswith("Checking "), result.stderr
    return int(first.split(": ")[1].split()[0])


def test_check_keep_leaves_its_records_and_prints_ids_that_exist(
    client_env: dict[str, str], serve: Serve
) -> None:
    before = {record["id"] for record in held(client_env)}
    result = run(client_env, "check", "--keep")
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    kept = [line.strip() for line in lines[lines.index("Kept 7 records (--keep):") + 1 :]][:7]
    assert all(line.startswith(("conv_", "rp_")) for line in kept), lines
    assert {record["id"] for record in held(client_env)} == before | set(kept)
    marker = result.stderr.splitlines()[0].rsplit(" ", 1)[-1].rstrip(".")
    auth = {"Authorization": f"Bearer {serve.token}"}
    with httpx.Client(base_url=serve.url, headers=auth, timeout=10) as http:
        for record_id in kept:
            path = "conversations" if record_id.startswith("conv_") else "risk-profiles"
            answer = http.get(f"/v1/{path}/{record_id}")
            assert answer.status_code == 200
            record = answer.json()
            assert marker in (record.get("group_id"), record.get("customer_id"))
            http.delete(f"/v1/{path}/{record_id}")


class ChangesOneField(JSONService):
    """Forwards every request to a real serve and sends its answer back, but the score of a
    risk profile fetched alone comes back as a string. Counts the requests; with `hold_at`, the
    answer to the request of that number (done upstream) waits, at most SAFETY_TIMEOUT, until
    `release` is set."""

    upstream: ClassVar[str] = ""
    score: ClassVar[str] = "{score}"  # what the score becomes: a string
    seen: ClassVar[int] = 0
    hold_at: ClassVar[int | None] = None
    reached: ClassVar[threading.Event]
    release: ClassVar[threading.Event]
    lock: ClassVar[threading.Lock]

    @classmethod
    def fresh(
        cls, upstream: str, hold_at: int | None = None, score: str = "{score}"
    ) -> type[ChangesOneField]:
        """A handler class of its own (class state is per test)."""
        return type(
            "Fresh",
            (cls,),
            {
                "upstream": upstream,
                "seen": 0,
                "hold_at": hold_at,
                "score": score,
                "reached": threading.Event(),
                "release": threading.Event(),
                "lock": threading.Lock(),
            },
        )

    def _forward(self) -> None:
        with self.lock:
            type(self).seen += 1
            number = self.seen
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        headers = {
            name: value
            for name, value in self.headers.items()
            if name.lower() in ("authorization", "content-type", "idempotency-key")
        }
        with httpx.Client(base_url=self.upstream, timeout=10) as http:
            answer = http.request(self.command, self.path, content=body, headers=headers)
        if number == self.hold_at:  # done upstream, its answer not yet back
            self.reached.set()
            self.release.wait(SAFETY_TIMEOUT)
        data = answer.content
        path = self.path.partition("?")[0]
        if self.command == "GET" and path.startswith("/v1/risk-profiles/") and answer.is_success:
            record = answer.json()
            record["score"] = self.score.format(score=record["score"])
            data = json.dumps(record).encode()
        self.send_json(answer.status_code, data)

    do_GET = do_POST = do_PUT = do_DELETE = _forward


@pytest.fixture
def breaking(serve: Serve) -> Iterator[type[ChangesOneField]]:
    """ChangesOneField in front of `serve`, on 127.0.0.1."""
    handler = ChangesOneField.fresh(serve.url)
    with running(on_loopback(handler)) as server:
        handler.url = url_of(server)  # type: ignore[attr-defined]
        yield handler


def test_check_names_the_field_a_service_changes_and_fails_with_junit(
    client_env: dict[str, str], breaking: type[ChangesOneField], tmp_path: Path
) -> None:
    before = held(client_env)
    env = {**client_env, "CONVRISK_BASE_URL": breaking.url}  # type: ignore[attr-defined]
    report = tmp_path / "check.xml"
    result = run(env, "check", "--junit", str(report))
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    for n, score in ((1, "42"), (2, "7.5"), (3, "90")):
        name = f"get risk profile #{n}"
        assert f'{name}: body /score: service sent "{score}", the sandbox {score}' in lines
        assert any(line.startswith(f"{name}: contract: body /score: ") for line in lines), lines
    assert all(line.startswith("get risk profile #") for line in lines), lines
    assert result.stderr.splitlines()[-1] == (
        f"Error: {steps(result)} steps run, {len(lines)} differences: the service does not "
        "answer as convrisk serve does."
    )
    suite = ET.parse(report).getroot()
    assert suite.tag == "testsuite" and suite.get("failures") == "3"
    assert int(suite.get("tests", "0")) == steps(result)
    assert all(float(case.get("time", "-1")) >= 0 for case in suite)
    failed = {case.get("name"): case for case in suite if case.find("failure") is not None}
    assert set(failed) == {f"get risk profile #{n}" for n in (1, 2, 3)}
    messages = [f.get("message") for f in failed["get risk profile #1"].iter("failure")]
    assert 'body /score: service sent "42", the sandbox 42' in messages
    assert held(client_env) == before  # cleaned up although steps failed
    as_json = run(env, "check", "-o", "json")
    assert as_json.returncode == 1
    rows = json.loads(as_json.stdout)
    assert len(rows) == len(lines)
    first = rows[0]
    assert first["step"] == "get risk profile #1" and first["method"] == "GET"
    assert first["target"].startswith("/v1/risk-profiles/rp_")
    assert json.loads(as_json.stderr.splitlines()[-1])["error"]["type"] == "check_failed"


def test_ctrl_c_stops_the_check_and_deletes_what_it_created_even_an_answer_it_lost(
    client_env: dict[str, str], serve: Serve
) -> None:
    before = held(client_env)
    # Ctrl-C while the answer to the fifth create is on its way: the record exists upstream.
    handler = ChangesOneField.fresh(serve.url, hold_at=5)
    with running(on_loopback(handler)) as server:
        env = {**client_env, "CONVRISK_BASE_URL": url_of(server)}
        child = piped(env, "check")
        try:
            assert handler.reached.wait(SAFETY_TIMEOUT)
            child.send_signal(signal.SIGINT)
            _, err = child.communicate(timeout=SAFETY_TIMEOUT)
        finally:
            handler.release.set()
            if child.poll() is None:
                child.kill()
                child.wait(timeout=SAFETY_TIMEOUT)
    assert child.returncode == 130
    stderr = err.decode()
    assert "The check stopped before its last step." in stderr
    assert "Deleted the 5 records the check left." in stderr
    assert stderr.splitlines()[-1] == "Interrupted."
    assert held(client_env) == before


def test_check_refuses_a_read_only_profile_before_sending(
    client_env: dict[str, str], serve: Serve
) -> None:
    before = held(client_env)
    assert run(client_env, "config", "set", "read_only", "true").returncode == 0
    result = run(client_env, "check")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "Error: The profile 'default' is read-only (read_only = true in the config file): "
        "refusing to create and delete check records on the service; nothing was sent."
    ]
    assert held(client_env) == before


def test_check_under_a_protected_profile_asks_or_needs_yes(client_env: dict[str, str]) -> None:
    before = held(client_env)
    assert run(client_env, "config", "set", "protected", "true").returncode == 0
    refused = run(client_env, "check")
    assert refused.returncode == 2
    assert "is protected" in refused.stderr and "--yes" in refused.stderr
    assert held(client_env) == before
    term = Terminal(client_env, ["check"], columns=120)
    question = f"Type the number of records ({RECORDS_CREATED}) to create and delete check"
    term.read_until(b") to create and delete check records on the service: ")
    assert any(line.startswith(question) for line in term.text()), term.text()
    term.send(f"{RECORDS_CREATED}\r".encode())
    assert term.finish() == 0
    assert any(line.startswith("Checked: ") for line in term.text())
    with_yes = run(client_env, "check", "--yes")
    assert with_yes.returncode == 0, with_yes.stderr
    assert "Protected profile 'default' (" in with_yes.stderr
    assert held(client_env) == before


def test_check_on_the_local_database_is_a_usage_error(tmp_path: Path) -> None:
    result = run(isolated_env(tmp_path), "check")
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "set base_url" in lines[0] and "convrisk serve" in lines[0]


def test_check_refuses_a_junit_file_in_a_missing_folder_before_sending(
    client_env: dict[str, str], tmp_path: Path
) -> None:
    before = held(client_env)
    result = run(client_env, "check", "--junit", str(tmp_path / "nowhere" / "check.xml"))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"Error: --junit: the folder of {tmp_path / 'nowhere' / 'check.xml'} does not exist."
    ]
    assert held(client_env) == before


def test_check_with_a_token_the_service_refuses_says_so_once_and_leaves_nothing(
    client_env: dict[str, str],
) -> None:
    before = held(client_env)
    result = run({**client_env, "CONVRISK_TOKEN": "not-the-token"}, "check")
    assert result.returncode == 4
    assert result.stdout == ""
    assert result.stderr.splitlines()[-1].startswith("Error: ")
    assert "not-the-token" not in result.stderr
    assert held(client_env) == before


def test_check_refuses_as_curl_and_sends_nothing(client_env: dict[str, str]) -> None:
    before = held(client_env)
    result = run(client_env, "--as-curl", "check")
    assert result.returncode == 2
    assert result.stdout == ""
    assert "--as-curl sends nothing" in result.stderr.splitlines()[0]
    assert held(client_env) == before


def test_on_a_terminal_a_difference_is_one_line_with_the_services_text_escaped(
    client_env: dict[str, str], serve: Serve
) -> None:
    hostile = "\x1b]0;pwned\x07\u202e{score}"
    handler = ChangesOneField.fresh(serve.url, score=hostile)
    with running(on_loopback(handler)) as server:
        env = {**client_env, "CONVRISK_BASE_URL": url_of(server)}
        term = Terminal(env, ["check"], columns=160)
        assert term.finish() == 1
    assert b"\x1b]0;pwned" not in term.output and "\u202e".encode() not in term.output
    lines = term.text()
    sent = '"\\u001b]0;pwned\\u0007\\u202e42"'  # JSON's escapes, then U+202E's
    expected = f"get risk profile #1: body /score: service sent {sent}, the sandbox 42"
    assert expected in lines, lines
    assert lines[-1].startswith("Error: ") and "differences" in lines[-1]
    assert not any(line.startswith("step ") for line in lines)  # no progress left behind


def test_check_refuses_an_output_format_it_cannot_print_before_sending(
    client_env: dict[str, str],
) -> None:
    before = held(client_env)
    result = run(client_env, "check", "-o", "yaml")  # -o id as well, in-process
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1 and "-o" in result.stderr
    assert held(client_env) == before
