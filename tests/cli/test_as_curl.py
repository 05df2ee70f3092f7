"""--as-curl's command lines: a request the remote backend builds, captured and never sent, as one
curl line that a shell reads back to the same method, URL, headers and body bytes."""

from __future__ import annotations

import json
import shlex
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from convrisk import api_client
from convrisk.api_client.record_types import ConversationCreateParams
from convrisk.api_client.remote.capture import (
    PLACEHOLDER_BASE_URL,
    PLACEHOLDER_TOKEN,
    Captured,
    CapturedRequest,
    CaptureTransport,
)
from convrisk.api_client.remote.http import HTTPBackend
from convrisk.cli.output.as_curl import command_line
from convrisk.local_backend.backend import LocalBackend

from .conftest import REMOTE_TOKEN, Backends, Invoke, Result
from .recording_service import Request, comparable, recorder
from .serving_in_process import never_serve

SECRET = "s3cret-token-value"
BASE = "http://127.0.0.1:8765"


@pytest.fixture
def captured() -> Iterator[tuple[HTTPBackend, list[CapturedRequest]]]:
    """A remote backend whose requests are captured into a list."""
    seen: list[CapturedRequest] = []
    backend = HTTPBackend(BASE, SECRET, transport=CaptureTransport(seen.append))
    try:
        yield backend, seen
    finally:
        backend.close()


def words_of(line: str) -> list[str]:
    """The words a POSIX shell reads from `line` (no $'...' words in it)."""
    return shlex.split(line)


def headers_of(words: list[str]) -> dict[str, str]:
    """The -H headers of a curl line's words."""
    headers = {}
    for i, word in enumerate(words):
        if word == "-H":
            name, _, value = words[i + 1].partition(":")
            headers[name] = value.removeprefix(" ")
    return headers


def shell_value(word: str, **env: str) -> bytes:
    """The bytes bash makes of one word of a printed line (with `env` set)."""
    result = subprocess.run(
        ["bash", "-c", f"printf %s {word}"],
        capture_output=True,
        env={"PATH": "/usr/bin:/bin", **env},
        timeout=30,
        check=True,
    )
    return result.stdout


def test_a_create_is_one_curl_line_with_every_header_and_the_exact_body(
    captured: tuple[HTTPBackend, list[CapturedRequest]],
) -> None:
    backend, seen = captured
    with pytest.raises(Captured):
        backend.conversations.create({"contact_id": "c_1"}, idempotency_key="key-1")
    (request,) = seen
    line = command_line(request)
    assert "\n" not in line and SECRET not in line and PLACEHOLDER_TOKEN not in line
    words = words_of(line)
    assert words[:4] == ["curl", "-X", "POST", f"{BASE}/v1/conversations"]
    headers = headers_of(words)
    assert headers == {
        "User-Agent": f"convrisk/{api_client.__version__}",
        "Accept": "application/json",
        "Authorization": "Bearer $CONVRISK_TOKEN",
        "Content-Type": "application/json",
        "Idempotency-Key": "key-1",
    }
    assert '-H "Authorization: Bearer $CONVRISK_TOKEN"' in line  # expanded by the shell
    assert words[words.index("--data-binary") + 1].encode() == request.body
    assert request.body == b'{"contact_id":"c_1"}'


def test_nothing_is_answered_so_a_read_stops_at_its_request(
    captured: tuple[HTTPBackend, list[CapturedRequest]],
) -> None:
    backend, seen = captured
    with pytest.raises(Captured):
        backend.conversations.list({"muted": True}, limit=5)
    assert [(r.method, r.url) for r in seen] == [
        ("GET", f"{BASE}/v1/conversations?muted=true&limit=5")
    ]
    words = words_of(command_line(seen[0]))
    assert "--data-binary" not in words and "Content-Type" not in headers_of(words)


def test_a_batch_of_creates_is_captured_one_at_a_time_in_order(
    captured: tuple[HTTPBackend, list[CapturedRequest]],
) -> None:
    backend, seen = captured
    items: list[tuple[ConversationCreateParams, str | None]] = [
        ({"contact_id": f"c_{n}"}, f"key-{n}") for n in range(20)
    ]
    with pytest.raises(Captured):
        backend.conversations.create_many(items)
    # One request: the batch cannot go on without the first answer, and sends nothing at once.
    assert [r.body for r in seen] == [b'{"contact_id":"c_0"}']


def test_the_local_backend_s_url_is_the_variable_that_names_the_service() -> None:
    seen: list[CapturedRequest] = []
    backend = HTTPBackend(
        PLACEHOLDER_BASE_URL, PLACEHOLDER_TOKEN, transport=CaptureTransport(seen.append)
    )
    with pytest.raises(Captured):
        backend.conversations.delete("conv_01HV0000000000000000000000")
    backend.close()
    line = command_line(seen[0])
    assert "invalid" not in line
    url_word = line.split()[3]
    assert url_word == '"$CONVRISK_BASE_URL"/v1/conversations/conv_01HV0000000000000000000000'
    value = shell_value(url_word, CONVRISK_BASE_URL="https://api.example.com")
    assert value == b"https://api.example.com/v1/conversations/conv_01HV0000000000000000000000"


@pytest.mark.parametrize(
    "body",
    [
        b'{"a": "it\'s"}',
        b'{\n  "a": "two lines"\n}',
        b'{"a": "bell \x07 esc \x1b[31m"}',
        b'{"a": "\xe2\x80\xae reversed, caf\xc3\xa9, bang!"}',
        b'{"a": "back\\\\slash $HOME `id`"}',
    ],
)
def test_any_body_is_one_safe_line_that_the_shell_reads_back_byte_for_byte(body: bytes) -> None:
    request = CapturedRequest("PATCH", f"{BASE}/v1/conversations/x", (), body)
    line = command_line(request)
    assert "\n" not in line and "\x1b" not in line and "\x07" not in line
    assert "\u202e" not in line
    word = line.split(" --data-binary ", 1)[1]
    assert shell_value(word, HOME="/nowhere") == body


def test_a_post_without_a_body_sends_an_empty_one_without_curl_s_form_type() -> None:
    request = CapturedRequest("POST", f"{BASE}/v1/conversations", (("Content-Length", "0"),), b"")
    words = words_of(command_line(request))
    assert words[-2:] == ["--data-binary", ""]
    assert headers_of(words) == {"Content-Type": ""}


def test_head_is_curl_s_head_and_a_body_starting_with_at_is_not_read_as_a_file() -> None:
    head = words_of(command_line(CapturedRequest("HEAD", f"{BASE}/v1/conversations", (), b"")))
    assert head[:3] == ["curl", "--head", f"{BASE}/v1/conversations"]
    at = CapturedRequest("POST", f"{BASE}/v1/x", (("Content-Type", "application/json"),), b"@f")
    assert words_of(command_line(at))[-2:] == ["--data-raw", "@f"]


def test_a_url_with_glob_characters_turns_curl_s_globbing_off() -> None:
    request = CapturedRequest("GET", f"{BASE}/v1/conversations?a[]={{x}}", (), b"")
    words = words_of(command_line(request))
    assert "--globoff" in words and f"{BASE}/v1/conversations?a[]={{x}}" in words


def test_stdout_holds_curl_lines_only_whatever_the_output_format(
    invoke: Invoke, db_path: Path, terminal: Callable[..., None]
) -> None:
    ids = ["conv_01HV0000000000000000000000", "conv_01HV0000000000000000000001"]
    for extra in (["-o", "json"], ["-o", "csv"], ["--jq", ".id"], ["-o", "table"]):
        if extra == ["-o", "table"]:
            terminal("stdout", "stderr")
        result = invoke("conv", "get", *ids, *extra, "--as-curl").ok()
        lines = result.lines()
        assert [shlex.split(line)[2:4] for line in lines] == [
            ["GET", f"$CONVRISK_BASE_URL/v1/conversations/{id}"] for id in ids
        ]
        assert "2 requests printed" in result.stderr
    assert not db_path.exists()  # the local database is not even opened


def test_the_token_never_reaches_a_line_and_the_service_s_url_is_written_out(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONVRISK_BASE_URL", "http://127.0.0.1:9/")
    monkeypatch.setenv("CONVRISK_TOKEN", SECRET)
    created = invoke("--as-curl", "conv", "create", "--contact-id", "c_1").ok()
    assert SECRET not in created.stdout + created.stderr
    (line,) = created.lines()
    assert shlex.split(line)[3] == "http://127.0.0.1:9/v1/conversations"
    assert "set CONVRISK_TOKEN" in created.stderr and "CONVRISK_BASE_URL" not in created.stderr
    monkeypatch.delenv("CONVRISK_TOKEN")
    untokened = invoke("conv", "create", "--contact-id", "c_1", "--as-curl").ok()
    assert "Authorization" not in untokened.stdout  # the request carries none either
    assert "No token is set" in untokened.stderr


def test_a_command_that_fails_its_checks_prints_nothing_and_keeps_its_exit_code(
    invoke: Invoke,
) -> None:
    both = invoke("conv", "create", "--contact-id", "c", "--group-id", "g", "--as-curl")
    assert both.code == 2 and both.stdout == "" and "printed" not in both.stderr
    mixed = invoke("conv", "get", "conv_01HV0000000000000000000000", "rp_1", "--as-curl")
    assert mixed.code == 2 and len(mixed.lines()) == 1
    assert "1 request printed" in mixed.stderr


# -- the variants of tests/e2e/test_as_curl.py, in-process: both backends (`either`), every
# command; the installed script runs each behaviour once there ------------------------------


def curl_lines(result: Result) -> list[str]:
    """stdout of a run with --as-curl, which must succeed: one curl line each."""
    assert result.code == 0, result.stderr
    lines = result.lines()
    assert all(line.startswith("curl ") for line in lines), result.stdout
    return lines


def method_of(line: str) -> str:
    """The method of a printed line (`curl -X METHOD ...`)."""
    return shlex.split(line)[2]


def bash(line: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run a printed line in bash, with only PATH and `env` set (no proxy)."""
    return subprocess.run(
        ["bash", "-c", line],
        env={"PATH": "/usr/bin:/bin", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def stored(db: Path) -> list[Any]:
    """Every conversation and risk profile in a database, as stored."""
    with LocalBackend(db) as backend:
        return [
            *backend.conversations.list(limit=100)["data"],
            *backend.risk_profiles.list(limit=100)["data"],
        ]


def made(either: Backends, *args: str) -> str:
    """The id of a record made through the CLI."""
    return either.invoke(*args, "-o", "id").ok().stdout.strip()


def assert_no_request_reached(either: Backends, logged_before: int) -> None:
    """The in-process serve logged no request since `logged_before` lines: one real request
    (a status) is sent, its line awaited, and it must be the only new one."""
    either.invoke("status").ok()
    deadline = time.monotonic() + 10
    while len(either.log) <= logged_before and time.monotonic() < deadline:
        time.sleep(0.01)
    new = either.log[logged_before:]
    assert len(new) == 1 and "GET /v1/conversations?limit=1 200" in new[0], new


def test_every_command_that_sends_prints_its_requests_and_sends_nothing(
    either: Backends, tmp_path: Path
) -> None:
    a, b = (made(either, "conv", "create", "--contact-id", f"c_{n}") for n in (1, 2))
    rp = made(
        either, "risk", "create", "--customer-id", "cus_1", "--profile-type", "moderate",
        "--score", "50",
    )  # fmt: skip
    records = tmp_path / "records.jsonl"
    records.write_text(
        '{"contact_id": "c_new"}\n{"group_id": "g_new"}\n'
        + json.dumps({"id": a, "is_muted": True})
        + "\n"
        + json.dumps({"id": b, "is_pinned": True})
    )
    before = stored(either.db_path)
    logged = len(either.log)
    cases = [
        (["conv", "create", "--contact-id", "c_9"], ["POST"]),
        (["conv", "update", a, b, "--mute"], ["PUT", "PUT"]),
        (["conv", "delete", a, b], ["DELETE", "DELETE"]),  # no --yes, no terminal: no question
        (["risk", "delete", rp, "--yes"], ["DELETE"]),
        (["conv", "get", a, b, "-o", "json"], ["GET", "GET"]),
        (["conv", "list", "--all", "-o", "jsonl"], ["GET"]),
        (["conv", "import", str(records)], ["POST", "POST", "PUT", "PUT"]),
        (["conv", "import", str(records), "--dry-run"], ["GET", "GET"]),
        (["api", "-X", "PUT", f"/v1/conversations/{a}", "-d", '{"is_muted": true}'], ["PUT"]),
        (["status", "-o", "json"], ["GET"]),
        (["conv", "update", a, "--unmute", "--dry-run"], ["GET"]),
    ]
    for args, methods in cases:
        for argv in (["--as-curl", *args], [*args, "--as-curl"]):
            result = either.invoke(*argv)
            assert [method_of(line) for line in curl_lines(result)] == methods, argv
            assert "nothing was sent" in result.stderr
            assert REMOTE_TOKEN not in result.stdout + result.stderr
    assert stored(either.db_path) == before
    if either.remote:
        assert_no_request_reached(either, logged)


def test_a_list_prints_its_first_page_and_says_why_it_stops_there(either: Backends) -> None:
    whole = either.invoke("conv", "list", "--all", "--as-curl")
    assert len(curl_lines(whole)) == 1
    assert "only the first page" in whole.stderr
    short = either.invoke("conv", "list", "--limit", "5", "--as-curl")
    assert "limit=5" in curl_lines(short)[0] and "first page" not in short.stderr


def test_commands_that_send_nothing_refuse_as_curl(
    either: Backends, monkeypatch: pytest.MonkeyPatch
) -> None:
    never_serve(monkeypatch)
    for argv in (
        ["config", "path", "--as-curl"],
        ["--as-curl", "serve", "--port", "0"],
        ["history", "--as-curl"],
    ):
        result = either.invoke(*argv)
        assert result.code == 2 and "sends none" in result.stderr, argv
        assert result.stdout == ""
    planned = either.invoke("conv", "create", "--contact-id", "c_1", "--dry-run", "--as-curl")
    assert planned.code == 0 and planned.stdout == ""
    assert "made no request" in planned.stderr


@pytest.fixture
def target(either: Backends, cli_server: Any, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The serve the printed lines are run against: the remote backend's own, or (for the local
    one) the module's in-process serve over a database of its own. Its URL and database."""
    if either.url is not None:
        yield either.url, either.db_path
        return
    db = tmp_path / "target.db"
    with LocalBackend(db) as backend, cli_server.serving(backend, []) as running:
        yield running.url, db


def test_printed_lines_run_with_curl_against_serve(
    either: Backends, target: tuple[str, Path]
) -> None:
    url, db = target
    shell = {"CONVRISK_TOKEN": REMOTE_TOKEN, "CONVRISK_BASE_URL": url}
    invoke = either.invoke
    (create,) = curl_lines(invoke("conv", "create", "--contact-id", "c_curl", "--as-curl"))
    made = json.loads(bash(create, **shell).stdout)
    assert made["contact_id"] == "c_curl" and made["id"].startswith("conv_")
    again = json.loads(bash(create, **shell).stdout)  # the same Idempotency-Key: replayed
    assert again == made
    (update,) = curl_lines(invoke("conv", "update", made["id"], "--mute", "--as-curl"))
    assert json.loads(bash(update, **shell).stdout)["is_muted"] is True
    (delete,) = curl_lines(invoke("conv", "delete", made["id"], "--as-curl"))
    assert json.loads(bash(delete, **shell).stdout) == {"id": made["id"], "deleted": True}
    risk = invoke(
        "risk", "create", "--customer-id", "cus_é", "--profile-type", "moderate", "--score",
        "72.5", "--details", '{"note": "it\'s \\u0007 here"}', "--as-curl",
    )  # fmt: skip
    profile = json.loads(bash(curl_lines(risk)[0], **shell).stdout)
    assert profile["customer_id"] == "cus_é" and profile["details"] == {"note": "it's \x07 here"}
    assert [r["id"] for r in stored(db)] == [profile["id"]]


def test_both_backends_print_the_same_requests(
    invoke: Invoke, cli_server: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    records = tmp_path / "records.jsonl"
    id = "conv_01HV0000000000000000000000"
    records.write_text('{"contact_id": "c_1"}\n' + json.dumps({"id": id, "is_pinned": True}))
    with LocalBackend(tmp_path / "remote.db") as backend, cli_server.serving(backend, []) as srv:

        def printed(remote: bool, args: list[str]) -> list[list[str]]:
            if remote:
                monkeypatch.delenv("CONVRISK_DB", raising=False)
                monkeypatch.setenv("CONVRISK_BASE_URL", srv.url)
                monkeypatch.setenv("CONVRISK_TOKEN", REMOTE_TOKEN)
            else:
                monkeypatch.delenv("CONVRISK_BASE_URL", raising=False)
                monkeypatch.delenv("CONVRISK_TOKEN", raising=False)
                monkeypatch.setenv("CONVRISK_DB", str(tmp_path / "local.db"))
            lines = curl_lines(invoke(*args, "--as-curl"))
            return [shlex.split(line) for line in lines]

        for args in (["conv", "import", str(records)], ["conv", "update", id, "--mute"]):
            from_local, from_remote = printed(False, args), printed(True, args)
            with_url = [
                [word.replace("$CONVRISK_BASE_URL", srv.url) for word in words]
                for words in from_local
            ]
            assert with_url == from_remote, args


@pytest.fixture
def recording(monkeypatch: pytest.MonkeyPatch, home: Path) -> Iterator[tuple[str, list[Request]]]:
    """A Recorder on loopback, convrisk pointed at it: its URL and what it has seen."""
    with recorder() as (url, seen):
        monkeypatch.setenv("CONVRISK_BASE_URL", url)
        monkeypatch.setenv("CONVRISK_TOKEN", "tok")
        yield url, seen


def test_every_request_carries_the_user_agent(
    invoke: Invoke, recording: tuple[str, list[Request]], tmp_path: Path
) -> None:
    _, seen = recording
    records = tmp_path / "records.jsonl"
    records.write_text(
        '{"contact_id": "c_1"}\n{"contact_id": "c_2"}\n{"id": "conv_1", "is_muted": true}\n'
    )
    commands = [
        ["conv", "list", "--all"],
        ["conv", "get", "conv_1", "conv_2"],
        ["conv", "create", "--contact-id", "c_1"],
        ["conv", "update", "conv_1", "--mute"],
        ["conv", "delete", "conv_1", "--yes"],
        ["conv", "import", str(records)],
        ["risk", "list"],
        ["api", "-X", "POST", "/v1/risk-profiles", "-d", "{}"],
        ["status"],
    ]
    for args in commands:
        result = invoke(*args)
        assert result.code == 0, (args, result.stderr)
    # At least one request per command's operation (a journaled write may read first).
    assert len(seen) >= 12 and {m for m, *_ in seen} == {"GET", "POST", "PUT", "DELETE"}
    assert {headers.get("user-agent") for _, _, headers, _ in seen} == {
        f"convrisk/{api_client.__version__}"
    }


def test_printed_lines_send_what_convrisk_sends(
    invoke: Invoke,
    recording: tuple[str, list[Request]],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    _, seen = recording
    records = tmp_path / "records.jsonl"
    records.write_text(
        '{"contact_id": "c_1"}\n{"group_id": "g_é"}\n{"id": "conv_1", "archived_at": 1714564800}\n'
    )
    commands = [
        ["conv", "import", str(records)],
        ["conv", "update", "conv_1", "conv_2", "--pin", "--archived-at", "2024-05-01"],
        ["conv", "delete", "conv_1", "--yes"],
        ["conv", "list", "--group-id", "g é&x=1 /?", "--limit", "5"],
        ["risk", "create", "--customer-id", "c", "--profile-type", "low", "--score", "1"],
        ["api", "-X", "PATCH", "/v1/conversations/conv_1?x=1", "-d", '{\n "a": "\\u00e9"\n}'],
    ]
    for args in commands:
        del seen[:]
        # The journal reads a record before changing it, for itself: --as-curl journals
        # nothing, so the operation's own requests are compared.
        monkeypatch.setenv("CONVRISK_JOURNAL", "off")
        assert invoke(*args).code == 0, args
        monkeypatch.delenv("CONVRISK_JOURNAL")
        sent = list(seen)
        del seen[:]
        for line in curl_lines(invoke(*args, "--as-curl")):
            bash(line, CONVRISK_TOKEN="tok")
        by_curl = list(seen)
        assert len(sent) == len(by_curl) > 0, args
        if args[1] == "create":  # a create's random key: the one printed is another
            for requests in (sent, by_curl):
                for request in requests:
                    request[2].pop("idempotency-key")
        assert comparable(sent) == comparable(by_curl), args


def test_guarded_profiles_print_without_a_question_and_nothing_is_journaled(
    either: Backends, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CONVRISK_JOURNAL", "off")
    a = made(either, "conv", "create", "--contact-id", "c_1")
    records = tmp_path / "records.jsonl"
    records.write_text('{"contact_id": "c_2"}\n' + json.dumps({"id": a, "is_pinned": True}))
    for key in ("read_only", "protected"):
        either.invoke("config", "set", "--profile", key, key, "true").ok()
    journal = tmp_path / "journal.jsonl"
    monkeypatch.setenv("CONVRISK_JOURNAL", str(journal))
    before = stored(either.db_path)
    writes = [
        ["conv", "create", "--contact-id", "c_3"],
        ["conv", "update", a, "--mute"],
        ["conv", "delete", a],
        ["conv", "import", str(records)],
        ["api", "-X", "DELETE", f"/v1/conversations/{a}"],
    ]
    for profile in ("read_only", "protected"):
        for args in writes:
            # No terminal and no --yes: a question or a refusal would be exit 2.
            result = either.invoke("--profile", profile, *args, "--as-curl")
            assert curl_lines(result), (profile, args)
            assert "nothing was sent" in result.stderr
            # Run by hand, the line writes past every guard: said once, as a warning.
            mark = profile.replace("_", "-")
            warning = f"Warning: The profile {profile!r} is {mark}: the printed writes, run by hand"
            assert warning in result.stderr
    assert stored(either.db_path) == before
    assert not journal.exists()


def test_on_a_terminal_a_protected_write_asks_nothing_and_the_line_shows_no_control(
    either: Backends, terminal: Callable[..., None]
) -> None:
    a = made(either, "conv", "create", "--contact-id", "c_1")
    either.invoke("config", "set", "--profile", "prod", "protected", "true").ok()
    before = stored(either.db_path)
    body = '{"is_muted": true,\n "note": "\u202e\x1b"}'.replace("\x1b", "\\u001b")
    terminal("stdin", "stdout", "stderr")
    for args in (
        ["conv", "delete", a],
        ["api", "-X", "PUT", f"/v1/conversations/{a}", "-d", body],
    ):
        # A question would read an answer from a stdin that has none: not exit 0.
        result = either.invoke("--profile", "prod", *args, "--as-curl")
        assert result.code == 0, result.stderr
        assert "Type the number" not in result.stdout + result.stderr
        assert "\u202e" not in result.stdout + result.stderr
        assert result.stdout.startswith("curl -X ")
        assert "nothing was sent" in result.stderr
        assert ("\\xe2\\x80\\xae" in result.stdout) == (args[0] == "api")
    assert stored(either.db_path) == before
