"""`convrisk api`: one request to the interface, through the installed console script, on the
local database (the wire rules of `serve`, no socket) and against a `convrisk serve` subprocess."""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from .both_backends import TOKEN, Cli, cli, isolated_env, local_cli, serving  # noqa: F401
from .console import CONVRISK, SAFETY_TIMEOUT
from .screen import Terminal


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def made_conversations(backend: Cli, n: int) -> list[str]:
    """`n` conversations made through `api`; their ids, newest first (the list order)."""
    ids = []
    for i in range(n):
        body = json.dumps({"contact_id": f"c_{i}"})
        ids.append(json.loads(ok(backend.run("api", "/v1/conversations", "-d", body)))["id"])
    return ids[::-1]


def test_api_runs_every_verb_of_the_interface(cli: Cli) -> None:  # noqa: F811
    created = json.loads(ok(cli.run("api", "/v1/conversations", "-d", '{"contact_id": "c_1"}')))
    assert created["contact_id"] == "c_1" and created["id"].startswith("conv_")
    path = f"/v1/conversations/{created['id']}"
    assert json.loads(ok(cli.run("api", path))) == created
    updated = json.loads(ok(cli.run("api", "-X", "PUT", path, "-d", '{"is_muted": true}')))
    assert updated["is_muted"] is True and updated["id"] == created["id"]
    page = json.loads(ok(cli.run("api", "/v1/conversations?muted=true&limit=5")))
    assert page == {"has_more": False, "data": [updated]}
    risk = json.loads(
        ok(
            cli.run(
                "api",
                "/v1/risk-profiles",
                "-d",
                "-",
                input='{"customer_id": "cus_1", "profile_type": "moderate", "score": 70, '
                '"details": {}}',
            )
        )
    )
    assert risk["score"] == 70 and cli.count("risk_profiles") == 1
    deleted = json.loads(ok(cli.run("api", "-X", "delete", path)))
    assert deleted == {"id": created["id"], "deleted": True}
    assert cli.count("conversations") == 0


WELL_FORMED = "conv_" + "0" * 26


def test_an_error_answer_is_printed_with_the_error_line_and_its_exit_code(cli: Cli) -> None:  # noqa: F811
    missing = cli.run("api", f"/v1/conversations/{WELL_FORMED}")
    assert missing.returncode == 3
    assert json.loads(missing.stdout)["error"]["type"] == "not_found_error"
    assert missing.stderr == f"Error: No such conversation: {WELL_FORMED} (HTTP 404)\n"
    # An id the sandbox never mints is the request's fault: a 400 naming it.
    malformed = cli.run("api", "/v1/conversations/conv_nope")
    assert malformed.returncode == 1
    assert json.loads(malformed.stdout)["error"]["param"] == "id"
    invalid = cli.run("api", "/v1/risk-profiles", "-d", '{"customer_id": "cus_1"}')
    assert invalid.returncode == 1
    assert json.loads(invalid.stdout)["error"]["param"] == "profile_type"
    assert invalid.stderr.startswith("Error: ") and "(HTTP 400)" in invalid.stderr
    assert cli.count("risk_profiles") == 0


def test_a_method_the_route_lacks_is_a_405_naming_the_methods_it_has(cli: Cli) -> None:  # noqa: F811
    [conv_id] = made_conversations(cli, 1)
    for method, path in (("PATCH", "/v1/conversations"), ("POST", f"/v1/conversations/{conv_id}")):
        result = cli.run("api", "-X", method, path, "-d", "{}")
        assert result.returncode == 1, result.stderr
        assert json.loads(result.stdout)["error"]["code"] == "method_not_allowed"
        assert f"Method {method} is not allowed here" in result.stderr
        assert "(HTTP 405)" in result.stderr
    assert cli.count("conversations") == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["/conversations"], "PATH must start with /v1/"),
        (["http://127.0.0.1:1/v1/conversations"], "PATH must start with /v1/"),
        (["/v1/../admin"], "leads outside /v1/ once decoded"),
        (["/v1/%2E%2E/admin"], "leads outside /v1/ once decoded"),
        (["/v1/conversations/..%2F..%2Fadmin"], "leads outside /v1/ once decoded"),
        (["/v1/conversations/x%5C..%5Cadmin"], "cannot contain . or .. segments"),
        (["/v1/conversations?group_id=" + "é" * 20_000], "PATH is too long"),
        (["/v1/conversations#x"], "fragment"),
        (["/v1/conversations?x=a b"], "spaces or control characters"),
        (["-X", "GE T", "/v1/conversations"], "-X takes an HTTP method"),
        (["-X", "", "/v1/conversations", "-d", "{}"], "-X takes an HTTP method"),
        (["-d", "{nope", "/v1/conversations"], "-d: the argument is not valid JSON"),
        (["-d", "@/nonexistent/body.json", "/v1/conversations"], "-d: cannot read"),
        (["-X", "GET", "-d", "{}", "/v1/conversations"], "-d sends a body, which GET"),
        (["-X", "POST", "--paginate", "/v1/conversations"], "--paginate follows the pages"),
        (["--paginate", "/v1/conversations?ending_before=conv_1"], "drop ending_before"),
        (["--jq", ".[", "/v1/conversations"], "--jq does not compile"),
    ],
)
def test_bad_input_is_refused_before_any_request(cli: Cli, args: list[str], message: str) -> None:  # noqa: F811
    result = cli.run("api", *args)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert message in result.stderr and len(result.stderr.splitlines()) == 1
    assert cli.count("conversations") == 0
    if cli.serve is not None:
        # A request that is sent shows in serve's log: send one, wait for its line, and it
        # must be the only request there.
        ok(cli.run("api", "/v1/conversations?limit=1"))
        deadline = time.monotonic() + 10
        while not any("limit=1 200" in line for line in cli.serve.log):
            assert time.monotonic() < deadline, cli.serve.log
            time.sleep(0.05)
        assert sum(" /v1/" in line for line in cli.serve.log) == 1, cli.serve.log


def test_paginate_prints_every_item_of_every_page_as_one_json_line(cli: Cli) -> None:  # noqa: F811
    ids = made_conversations(cli, 7)
    result = cli.run("api", "/v1/conversations?limit=3", "--paginate")
    lines = ok(result).splitlines()
    assert [json.loads(line)["id"] for line in lines] == ids
    assert all(line == json.dumps(json.loads(line), separators=(",", ":")) for line in lines)
    after = cli.run("api", f"/v1/conversations?limit=2&starting_after={ids[1]}", "--paginate")
    assert [json.loads(line)["id"] for line in ok(after).splitlines()] == ids[2:]
    assert ok(cli.run("conv", "list", "--all", "-o", "id")).split() == ids


def test_paginate_without_a_limit_takes_pages_of_the_profile_s_page_size(
    cli: Cli,  # noqa: F811
) -> None:
    ids = made_conversations(cli, 12)
    result = cli.run("api", "/v1/conversations?muted=false", "--paginate", CONVRISK_PAGE_SIZE="5")
    assert [json.loads(line)["id"] for line in ok(result).splitlines()] == ids
    if cli.serve is not None:
        deadline = time.monotonic() + 10
        while sum("muted=false&limit=5" in line for line in cli.serve.log) < 3:
            assert time.monotonic() < deadline, cli.serve.log
            time.sleep(0.05)


def test_paginate_with_jq_runs_the_program_on_each_item(cli: Cli) -> None:  # noqa: F811
    ids = made_conversations(cli, 5)
    each = cli.run("api", "/v1/conversations?limit=2", "--paginate", "--jq", ".id")
    assert ok(each).split() == ids
    whole = cli.run("api", "/v1/conversations?limit=2", "--jq", "[.has_more, (.data|length)]")
    assert ok(whole) == "[true,2]\n"


def test_paginate_on_a_path_that_is_not_a_list_says_so(cli: Cli) -> None:  # noqa: F811
    [conv_id] = made_conversations(cli, 1)
    result = cli.run("api", f"/v1/conversations/{conv_id}", "--paginate")
    assert result.returncode == 1
    assert result.stdout == ""
    assert "did not answer with a list page" in result.stderr
    assert "--paginate needs a list path" in result.stderr


def test_a_body_from_a_file_is_sent_as_written(cli: Cli, tmp_path: Path) -> None:  # noqa: F811
    body = tmp_path / "profile.json"
    body.write_text(
        '\ufeff{"customer_id": "cus_é", "profile_type": "aggressive", "score": 1.5, "details": {}}'
    )
    made = json.loads(ok(cli.run("api", "/v1/risk-profiles", "-d", f"@{body}")))
    assert made["customer_id"] == "cus_é" and made["score"] == 1.5


def _normalised(text: str) -> str:
    """An answer with the parts that differ between two databases (ids, times) made equal."""
    text = re.sub(r"(conv|rp)_[0-9A-Z]{26}", r"\1_ID", text)
    return re.sub(r'"(created_at|updated_at)":[0-9.]+', r'"\1":T', text)


REQUESTS: list[list[str]] = [
    ["/v1/conversations", "-d", '{"contact_id": "c_1"}'],
    ["/v1/conversations", "-d", '{"group_id": "g_1", "contact_id": "c_1"}'],
    ["/v1/conversations", "-d", "[1]"],
    ["/v1/conversations", "-d", '{"contact_id": "c_é\\u0000"}'],
    ["/v1/conversations?limit=1"],
    ["/v1/conversations?limit=0"],
    ["/v1/conversations?muted=maybe"],
    ["/v1/conversations?group_id=%C3%A9&group_id=x"],
    ["/v1/conversations?group_id=é"],
    ["/v1/conversations/conv_missing"],
    ["/v1/conversations/conv_missing", "-X", "PUT", "-d", "{}"],
    ["/v1/nothing-here"],
    ["/v1/risk-profiles", "-d", '{"customer_id": "c", "profile_type": "x", "score": 101}'],
    ["/v1/risk-profiles", "-X", "DELETE"],
    ["/v1/risk-profiles?customer_id=c&limit=100"],
    ["/v1/conversations", "-X", "HEAD"],
    ["/v1/conversations/conv_missing", "-X", "HEAD"],
]


def test_both_backends_answer_every_request_alike(tmp_path: Path) -> None:
    (tmp_path / "local").mkdir()
    (tmp_path / "remote").mkdir()
    local = local_cli(tmp_path / "local")
    with serving(tmp_path / "remote") as served:
        remote_env = isolated_env(
            tmp_path / "remote", CONVRISK_BASE_URL=served.url, CONVRISK_TOKEN=TOKEN
        )
        remote = Cli("remote", tmp_path / "remote", served.db_path, remote_env, serve=served)
        for request in REQUESTS:
            here, there = local.run("api", *request), remote.run("api", *request)
            assert here.returncode == there.returncode, request
            assert _normalised(here.stdout) == _normalised(there.stdout), request
            assert _normalised(here.stderr) == _normalised(there.stderr), request
    local.close()


def test_the_active_profile_s_token_and_retries_are_used(tmp_path: Path) -> None:
    # A server that fails a third of its answers (500, 503, 429, dropped connections, and
    # connections dropped after the write): with retries, each create is made exactly once.
    with serving(tmp_path, "--faults", "0.3", "--seed", "7") as served:
        local = Cli("remote", tmp_path, served.db_path, isolated_env(tmp_path), serve=served)
        for key, value in (("base_url", served.url), ("token", TOKEN), ("max_retries", "10")):
            ok(local.run("config", "set", "--profile", "sandbox", key, value))
        for i in range(12):
            body = json.dumps({"contact_id": f"c_{i}"})
            ok(local.run("--profile", "sandbox", "api", "/v1/conversations", "-d", body))
        assert local.count("conversations") == 12
        listed = local.run("api", "--profile", "sandbox", "/v1/conversations?limit=5", "--paginate")
        assert len(ok(listed).splitlines()) == 12
        refused = local.run("api", "/v1/conversations", "--base-url", served.url)
        assert refused.returncode == 4
        assert json.loads(refused.stdout)["error"]["type"] == "authentication_error"
        assert TOKEN not in refused.stdout + refused.stderr
        local.close()


@pytest.mark.parametrize("columns", [60, 100])
def test_on_a_terminal_the_answer_is_indented_and_a_hostile_value_is_escaped(
    tmp_path: Path, columns: int
) -> None:
    local = local_cli(tmp_path)
    hostile = json.dumps({"contact_id": "\x1b]0;pwned\x07\x1b[2Jc_1"})
    made = json.loads(ok(local.run("api", "/v1/conversations", "-d", hostile)))
    term = Terminal(local.env, ["api", f"/v1/conversations/{made['id']}"], columns=columns)
    assert term.finish() == 0
    screen = term.screen()
    lines = term.text()
    assert screen.title == ""
    assert lines[0] == "{"
    assert f'  "id": "{made["id"]}",' in lines
    assert any("\\u001b]0;pwned\\u0007" in line for line in lines), lines
    assert lines[-1] == "}"
    local.close()


class _HtmlErrorPage(BaseHTTPRequestHandler):
    """A service behind a proxy that answers every request with an HTML error page, carrying
    escape sequences."""

    def do_GET(self) -> None:
        body = b"<html>\x1b]0;pwned\x07\x1b[2JBad gateway</html>\n"
        self.send_response(502)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def html_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _HtmlErrorPage)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_a_body_that_is_not_json_is_passed_through_piped_and_escaped_on_a_terminal(
    tmp_path: Path, html_server: str
) -> None:
    env = isolated_env(
        tmp_path, CONVRISK_BASE_URL=html_server, CONVRISK_TOKEN="tok", CONVRISK_MAX_RETRIES="0"
    )
    piped = subprocess.run(
        [CONVRISK, "api", "/v1/conversations"],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=SAFETY_TIMEOUT,
    )
    assert piped.returncode == 1
    assert piped.stdout == b"<html>\x1b]0;pwned\x07\x1b[2JBad gateway</html>\n"
    assert piped.stderr.decode().startswith("Error: The service answered HTTP 502")
    term = Terminal(env, ["api", "/v1/conversations"], columns=80)
    assert term.finish() == 1
    assert term.screen().title == ""
    lines = term.text()
    assert lines[0] == "<html>\\x1b]0;pwned\\x07\\x1b[2JBad gateway</html>"
    assert lines[1].startswith("Error: The service answered HTTP 502")


# -- a service that answers as it was told (redirects, echoes, bytes that are not UTF-8) --------

SECRET = "s3cret-token-for-api-tests"


class _Scripted(BaseHTTPRequestHandler):
    """Answers each path with the (status, headers, body) in the server's `script`; a body of
    None echoes the request's Authorization header back in an error message."""

    protocol_version = "HTTP/1.1"

    def _answer(self) -> None:
        assert isinstance(self.server, _ScriptedServer)
        self.server.seen.append(self.path)
        missing: tuple[int, list[tuple[str, str]], bytes | None]
        missing = (404, [], b'{"error": {"message": "?"}}')
        status, headers, body = self.server.script.get(self.path, missing)
        if body is None:
            echoed = self.headers.get("Authorization", "")
            body = json.dumps(
                {"error": {"message": f"bad header {echoed}", "param": echoed}, "you": echoed}
            ).encode()
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_DELETE = _answer

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _ScriptedServer(ThreadingHTTPServer):
    """The server of `_Scripted`: what to answer on each path, and the paths requested."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Scripted)
        self.script: dict[str, tuple[int, list[tuple[str, str]], bytes | None]] = {}
        self.seen: list[str] = []


@pytest.fixture
def scripted(tmp_path: Path) -> Iterator[tuple[_ScriptedServer, dict[str, str]]]:
    """A scripted service on loopback (fill `server.script`), and an environment pointing at it."""
    server = _ScriptedServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    env = isolated_env(
        tmp_path,
        CONVRISK_BASE_URL=f"http://127.0.0.1:{server.server_address[1]}",
        CONVRISK_TOKEN=SECRET,
        CONVRISK_MAX_RETRIES="0",
    )
    try:
        yield server, env
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def run_bytes(
    env: dict[str, str], *args: str, stdin: bytes = b""
) -> subprocess.CompletedProcess[bytes]:
    """convrisk run to its end, its streams as bytes."""
    return subprocess.run(
        [CONVRISK, *args], env=env, input=stdin, capture_output=True, timeout=SAFETY_TIMEOUT
    )


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_redirect_is_not_followed_and_fails_with_exit_1(
    scripted: tuple[_ScriptedServer, dict[str, str]], status: int
) -> None:
    server, env = scripted
    server.script["/v1/conversations"] = (
        status,
        [("Location", "http://127.0.0.1:1/v1/conversations")],
        b"",
    )
    result = run_bytes(env, "api", "/v1/conversations")
    assert result.returncode == 1, result
    assert result.stdout == b""
    stderr = result.stderr.decode()
    assert stderr.startswith(f"Error: The service answered HTTP {status}"), stderr
    assert "redirects are not followed" in stderr and len(stderr.splitlines()) == 1
    assert server.seen == ["/v1/conversations"]


def test_a_token_the_service_echoes_back_is_never_printed(
    scripted: tuple[_ScriptedServer, dict[str, str]],
) -> None:
    server, env = scripted
    server.script["/v1/conversations"] = (400, [], None)
    for args in (["api"], ["--debug", "api"]):
        result = run_bytes(env, *args, "/v1/conversations")
        assert result.returncode == 1, result
        assert SECRET.encode() not in result.stdout + result.stderr
        assert json.loads(result.stdout)["you"] == "Bearer ***"
        assert "Error: bad header Bearer *** (HTTP 400)" in result.stderr.decode()


def test_a_piped_body_is_written_byte_for_byte_even_when_not_utf8(
    scripted: tuple[_ScriptedServer, dict[str, str]],
) -> None:
    server, env = scripted
    body = b'{"name": "caf\xe9"}\n' + bytes(range(256))
    server.script["/v1/conversations"] = (200, [], body)
    result = run_bytes(env, "api", "/v1/conversations")
    assert result.returncode == 0, result
    assert result.stdout == body + b"\n"


@pytest.mark.parametrize("how", ["stdin", "argument", "file"])
def test_a_body_that_is_not_utf8_is_refused_before_any_request(
    cli: Cli,  # noqa: F811
    tmp_path: Path,
    how: str,
) -> None:
    latin1 = b'{"contact_id": "caf\xe9"}'
    if how == "stdin":
        result = run_bytes(cli.env, "api", "/v1/conversations", "-d", "-", stdin=latin1)
    elif how == "file":
        (tmp_path / "body.json").write_bytes(latin1)
        result = run_bytes(cli.env, "api", "/v1/conversations", "-d", f"@{tmp_path / 'body.json'}")
    else:
        argv = [str(CONVRISK).encode(), b"api", b"/v1/conversations", b"-d", latin1]
        result = subprocess.run(
            argv,
            env=cli.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=SAFETY_TIMEOUT,
        )
    stderr = result.stderr.decode()
    assert result.returncode == 2, stderr
    assert result.stdout == b""
    assert "-d:" in stderr and "not UTF-8" in stderr and len(stderr.splitlines()) == 1
    assert cli.count("conversations") == 0


def test_every_error_line_is_plain_even_with_convrisk_output_json(tmp_path: Path) -> None:
    local = local_cli(tmp_path)
    for args, code in (
        (["/v1/nothing-here"], 3),
        (["/nope"], 2),
        (["-X", "G T", "/v1/conversations"], 2),
        (["/v1/conversations", "-d", "{"], 2),
    ):
        result = local.run("api", *args, CONVRISK_OUTPUT="json")
        assert result.returncode == code, result.stderr
        assert result.stderr.startswith("Error: "), result.stderr
    local.close()


def test_on_a_terminal_a_number_too_large_for_a_float_is_shown_as_sent(
    scripted: tuple[_ScriptedServer, dict[str, str]],
) -> None:
    server, env = scripted
    body = b'{"n": 1e400, "s": "\\u001b[2J"}'
    server.script["/v1/conversations"] = (200, [], body)
    term = Terminal(env, ["api", "/v1/conversations"], columns=80)
    assert term.finish() == 0
    assert term.text() == ['{"n": 1e400, "s": "\\u001b[2J"}']


def test_piped_an_answer_holding_nan_or_1e400_is_valid_json_with_one_note(
    scripted: tuple[_ScriptedServer, dict[str, str]],
) -> None:
    # Issue 29, finding 7: such a body is no JSON at all as it came; jq and json.loads fail.
    server, env = scripted
    page = b'{"data": [{"id": "a", "n": 1e400}, {"id": "b", "n": NaN}], "has_more": false}'
    server.script["/v1/conversations"] = (200, [], page)
    server.script["/v1/conversations?limit=100"] = (200, [], page)

    def refuse(name: str) -> None:
        raise ValueError(f"{name} is not JSON")

    whole = run_bytes(env, "api", "/v1/conversations")
    assert whole.returncode == 0, whole.stderr
    body = json.loads(whole.stdout, parse_constant=refuse)
    assert [item["n"] for item in body["data"]] == ["Infinity", "NaN"]
    paged = run_bytes(env, "api", "/v1/conversations", "--paginate")
    assert paged.returncode == 0, paged.stderr
    lines = [json.loads(line, parse_constant=refuse) for line in paged.stdout.splitlines()]
    assert [item["n"] for item in lines] == ["Infinity", "NaN"]
    for result in (whole, paged):
        assert result.stderr.decode().count("Note: numbers that JSON cannot hold") == 1


def test_every_example_of_the_help_works(tmp_path: Path) -> None:
    local = local_cli(tmp_path)
    [conv_id] = made_conversations(local, 1)
    profile = {"customer_id": "cus_1", "profile_type": "moderate", "score": 50, "details": {}}
    (tmp_path / "profile.json").write_text(json.dumps(profile))
    help_text = ok(local.run("api", "--help"))
    lines = [line.strip() for line in help_text.splitlines()]
    examples = [line for line in lines if line.startswith("convrisk api ")]
    assert len(examples) == 4, help_text
    for example in examples:
        line = example.replace("conv_01HVZ8Q2K4M6P8R0T2V4X6Z8B0", conv_id)
        result = subprocess.run(
            ["sh", "-c", line.replace("convrisk", str(CONVRISK), 1)],
            env=local.env,
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=SAFETY_TIMEOUT,
        )
        assert result.returncode == 0, (example, result.stderr)
    assert local.store.conversations.retrieve(conv_id)["is_muted"] is True
    local.close()


def test_the_hint_after_a_failure_part_way_gives_a_cursor_that_can_be_pasted(
    scripted: tuple[_ScriptedServer, dict[str, str]],
) -> None:
    server, env = scripted
    page = {"data": [{"id": "x"}, {"id": "a&limit=1 b"}], "has_more": True}
    # Without limit= in PATH, --paginate asks for pages of the profile's page_size (100).
    server.script["/v1/conversations?limit=100"] = (200, [], json.dumps(page).encode())
    result = run_bytes(env, "api", "/v1/conversations", "--paginate")
    assert result.returncode == 3, result
    assert server.seen == [
        "/v1/conversations?limit=100",
        "/v1/conversations?limit=100&starting_after=a%26limit%3D1%20b",
    ]
    hint = result.stderr.decode().splitlines()[0]
    assert hint.endswith("with starting_after=a%26limit%3D1%20b in PATH."), hint
    server.script["/v1/conversations?limit=100&starting_after=a%26limit%3D1%20b"] = (
        200,
        [],
        b'{"data": [{"id": "y"}], "has_more": false}',
    )
    again = run_bytes(
        env, "api", "/v1/conversations?starting_after=a%26limit%3D1%20b", "--paginate"
    )
    assert again.returncode == 0 and again.stdout == b'{"id":"y"}\n'


def test_locally_a_database_failure_is_named_not_left_in_a_log_there_is_none(
    tmp_path: Path,
) -> None:
    local = local_cli(tmp_path)
    local.db_path.write_bytes(b"this is not an SQLite file, but text " * 100)
    result = local.run("api", "/v1/conversations")
    assert result.returncode == 1, result.stderr
    assert "is not a convrisk database" in result.stderr, result.stderr
    assert "is not a convrisk database" in json.loads(result.stdout)["error"]["message"]
    assert "log" not in result.stdout + result.stderr
    local.close()
