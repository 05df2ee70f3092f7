"""`convrisk api`: one request to the interface, through the installed console script, on the
local database (the wire rules of `serve`, no socket) and against a `convrisk serve` subprocess.
Each behaviour runs once here; its variants (both backends, every value) run in-process in
tests/cli/test_api_cmd.py, under the same test names."""

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

from tests.cli.scripted_service import ScriptedServer, scripted_service

from .both_backends import TOKEN, Cli, isolated_env, local_cli, over_serve, serving
from .console import CONVRISK, SAFETY_TIMEOUT
from .screen import Terminal

__all__ = ["over_serve"]  # a fixture


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def made_conversations(backend: Cli, n: int) -> list[str]:
    """`n` conversations seeded into the backend's database (fast: no convrisk started; the
    in-process twins make theirs through `api`); their ids, newest first (the list order)."""
    made = [backend.store.conversations.create({"contact_id": f"c_{i}"}) for i in range(n)]
    return [record["id"] for record in made][::-1]


def test_api_runs_every_verb_of_the_interface(over_serve: Cli) -> None:
    created = json.loads(
        ok(over_serve.run("api", "/v1/conversations", "-d", '{"contact_id": "c_1"}'))
    )
    assert created["contact_id"] == "c_1" and created["id"].startswith("conv_")
    path = f"/v1/conversations/{created['id']}"
    assert json.loads(ok(over_serve.run("api", path))) == created
    updated = json.loads(ok(over_serve.run("api", "-X", "PUT", path, "-d", '{"is_muted": true}')))
    assert updated["is_muted"] is True and updated["id"] == created["id"]
    page = json.loads(ok(over_serve.run("api", "/v1/conversations?muted=true&limit=5")))
    assert page == {"has_more": False, "data": [updated]}
    risk = json.loads(
        ok(
            over_serve.run(
                "api",
                "/v1/risk-profiles",
                "-d",
                "-",
                input='{"customer_id": "cus_1", "profile_type": "moderate", "score": 70, '
                '"details": {}}',
            )
        )
    )
    assert risk["score"] == 70 and over_serve.count("risk_profiles") == 1
    deleted = json.loads(ok(over_serve.run("api", "-X", "delete", path)))
    assert deleted == {"id": created["id"], "deleted": True}
    assert over_serve.count("conversations") == 0


WELL_FORMED = "conv_" + "0" * 26


def test_an_error_answer_is_printed_with_the_error_line_and_its_exit_code(over_serve: Cli) -> None:
    missing = over_serve.run("api", f"/v1/conversations/{WELL_FORMED}")
    assert missing.returncode == 3
    assert json.loads(missing.stdout)["error"]["type"] == "not_found_error"
    assert missing.stderr == f"Error: No such conversation: {WELL_FORMED} (HTTP 404)\n"
    # An id the sandbox never mints is the request's fault: a 400 naming it.
    malformed = over_serve.run("api", "/v1/conversations/conv_nope")
    assert malformed.returncode == 1
    assert json.loads(malformed.stdout)["error"]["param"] == "id"
    invalid = over_serve.run("api", "/v1/risk-profiles", "-d", '{"customer_id": "cus_1"}')
    assert invalid.returncode == 1
    assert json.loads(invalid.stdout)["error"]["param"] == "profile_type"
    assert invalid.stderr.startswith("Error: ") and "(HTTP 400)" in invalid.stderr
    assert over_serve.count("risk_profiles") == 0


def test_a_method_the_route_lacks_is_a_405_naming_the_methods_it_has(over_serve: Cli) -> None:
    [conv_id] = made_conversations(over_serve, 1)
    for method, path in (("PATCH", "/v1/conversations"), ("POST", f"/v1/conversations/{conv_id}")):
        result = over_serve.run("api", "-X", method, path, "-d", "{}")
        assert result.returncode == 1, result.stderr
        assert json.loads(result.stdout)["error"]["code"] == "method_not_allowed"
        assert f"Method {method} is not allowed here" in result.stderr
        assert "(HTTP 405)" in result.stderr
    assert over_serve.count("conversations") == 1


def test_bad_input_is_refused_before_any_request(over_serve: Cli) -> None:
    # One of the refusals, against serve; every one of them, on both backends: in-process.
    result = over_serve.run("api", "/v1/%2E%2E/admin")
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert "leads outside /v1/ once decoded" in result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert over_serve.count("conversations") == 0
    assert over_serve.serve is not None
    # A request that is sent shows in serve's log: send one, wait for its line, and it must be
    # the only request there.
    ok(over_serve.run("api", "/v1/conversations?limit=1"))
    deadline = time.monotonic() + 10
    while not any("limit=1 200" in line for line in over_serve.serve.log):
        assert time.monotonic() < deadline, over_serve.serve.log
        time.sleep(0.05)
    assert sum(" /v1/" in line for line in over_serve.serve.log) == 1, over_serve.serve.log


def test_paginate_prints_every_item_of_every_page_as_one_json_line(over_serve: Cli) -> None:
    ids = made_conversations(over_serve, 7)
    result = over_serve.run("api", "/v1/conversations?limit=3", "--paginate")
    lines = ok(result).splitlines()
    assert [json.loads(line)["id"] for line in lines] == ids
    assert all(line == json.dumps(json.loads(line), separators=(",", ":")) for line in lines)
    after = over_serve.run(
        "api", f"/v1/conversations?limit=2&starting_after={ids[1]}", "--paginate"
    )
    assert [json.loads(line)["id"] for line in ok(after).splitlines()] == ids[2:]
    assert ok(over_serve.run("conv", "list", "--all", "-o", "id")).split() == ids


def test_paginate_without_a_limit_takes_pages_of_the_profile_s_page_size(over_serve: Cli) -> None:
    ids = made_conversations(over_serve, 12)
    result = over_serve.run(
        "api", "/v1/conversations?muted=false", "--paginate", CONVRISK_PAGE_SIZE="5"
    )
    assert [json.loads(line)["id"] for line in ok(result).splitlines()] == ids
    if over_serve.serve is not None:
        deadline = time.monotonic() + 10
        while sum("muted=false&limit=5" in line for line in over_serve.serve.log) < 3:
            assert time.monotonic() < deadline, over_serve.serve.log
            time.sleep(0.05)


def test_paginate_with_jq_runs_the_program_on_each_item(over_serve: Cli) -> None:
    ids = made_conversations(over_serve, 5)
    each = over_serve.run("api", "/v1/conversations?limit=2", "--paginate", "--jq", ".id")
    assert ok(each).split() == ids
    whole = over_serve.run(
        "api", "/v1/conversations?limit=2", "--jq", "[.has_more, (.data|length)]"
    )
    assert ok(whole) == "[true,2]\n"


def test_paginate_on_a_path_that_is_not_a_list_says_so(over_serve: Cli) -> None:
    [conv_id] = made_conversations(over_serve, 1)
    result = over_serve.run("api", f"/v1/conversations/{conv_id}", "--paginate")
    assert result.returncode == 1
    assert result.stdout == ""
    assert "did not answer with a list page" in result.stderr
    assert "--paginate needs a list path" in result.stderr


def test_a_body_from_a_file_is_sent_as_written(over_serve: Cli, tmp_path: Path) -> None:
    body = tmp_path / "profile.json"
    body.write_text(
        '\ufeff{"customer_id": "cus_é", "profile_type": "aggressive", "score": 1.5, "details": {}}'
    )
    made = json.loads(ok(over_serve.run("api", "/v1/risk-profiles", "-d", f"@{body}")))
    assert made["customer_id"] == "cus_é" and made["score"] == 1.5


def _normalised(text: str) -> str:
    """An answer with the parts that differ between two databases (ids, times) made equal."""
    text = re.sub(r"(conv|rp)_[0-9A-Z]{26}", r"\1_ID", text)
    return re.sub(r'"(created_at|updated_at)":[0-9.]+', r'"\1":T', text)


# One request here (an error: exit code, answer and error line); every request of
# tests/cli/test_api_cmd.py's REQUESTS, in-process.
REQUEST = ["/v1/conversations/conv_missing", "-X", "PUT", "-d", "{}"]


def test_both_backends_answer_every_request_alike(tmp_path: Path) -> None:
    (tmp_path / "local").mkdir()
    (tmp_path / "remote").mkdir()
    local = local_cli(tmp_path / "local")
    with serving(tmp_path / "remote") as served:
        remote_env = isolated_env(
            tmp_path / "remote", CONVRISK_BASE_URL=served.url, CONVRISK_TOKEN=TOKEN
        )
        remote = Cli("remote", tmp_path / "remote", served.db_path, remote_env, serve=served)
        here, there = local.run("api", *REQUEST), remote.run("api", *REQUEST)
        assert here.returncode == there.returncode == 1
        assert _normalised(here.stdout) == _normalised(there.stdout)
        assert _normalised(here.stderr) == _normalised(there.stderr)
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


def test_on_a_terminal_the_answer_is_indented_and_a_hostile_value_is_escaped(
    tmp_path: Path,
) -> None:
    local = local_cli(tmp_path)
    hostile = json.dumps({"contact_id": "\x1b]0;pwned\x07\x1b[2Jc_1"})
    made = json.loads(ok(local.run("api", "/v1/conversations", "-d", hostile)))
    # A real terminal of two widths (what pyte renders is the point): a narrow one and a wide.
    for columns in (60, 100):
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


@pytest.fixture
def scripted(tmp_path: Path) -> Iterator[tuple[ScriptedServer, dict[str, str]]]:
    """A scripted service on loopback (fill `server.script`), and an environment pointing at it."""
    with scripted_service() as (server, url):
        env = isolated_env(
            tmp_path, CONVRISK_BASE_URL=url, CONVRISK_TOKEN=SECRET, CONVRISK_MAX_RETRIES="0"
        )
        yield server, env


def run_bytes(
    env: dict[str, str], *args: str, stdin: bytes = b""
) -> subprocess.CompletedProcess[bytes]:
    """convrisk run to its end, its streams as bytes."""
    return subprocess.run(
        [CONVRISK, *args], env=env, input=stdin, capture_output=True, timeout=SAFETY_TIMEOUT
    )


def test_a_redirect_is_not_followed_and_fails_with_exit_1(
    scripted: tuple[ScriptedServer, dict[str, str]],
) -> None:
    # One status here; 301, 302, 307 and 308 in-process.
    status = 302
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
    scripted: tuple[ScriptedServer, dict[str, str]],
) -> None:
    server, env = scripted
    server.script["/v1/conversations"] = (400, [], None)
    # With --debug (its traceback too); without it as well, in-process.
    result = run_bytes(env, "--debug", "api", "/v1/conversations")
    assert result.returncode == 1, result
    assert SECRET.encode() not in result.stdout + result.stderr
    assert json.loads(result.stdout)["you"] == "Bearer ***"
    assert "Error: bad header Bearer *** (HTTP 400)" in result.stderr.decode()


def test_a_piped_body_is_written_byte_for_byte_even_when_not_utf8(
    scripted: tuple[ScriptedServer, dict[str, str]],
) -> None:
    server, env = scripted
    body = b'{"name": "caf\xe9"}\n' + bytes(range(256))
    server.script["/v1/conversations"] = (200, [], body)
    result = run_bytes(env, "api", "/v1/conversations")
    assert result.returncode == 0, result
    assert result.stdout == body + b"\n"


def test_a_body_that_is_not_utf8_is_refused_before_any_request(over_serve: Cli) -> None:
    # The argument: bytes in argv as the process gets them (stdin and a file, in-process).
    latin1 = b'{"contact_id": "caf\xe9"}'
    argv = [str(CONVRISK).encode(), b"api", b"/v1/conversations", b"-d", latin1]
    result = subprocess.run(
        argv,
        env=over_serve.env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=SAFETY_TIMEOUT,
    )
    stderr = result.stderr.decode()
    assert result.returncode == 2, stderr
    assert result.stdout == b""
    assert "-d:" in stderr and "not UTF-8" in stderr and len(stderr.splitlines()) == 1
    assert over_serve.count("conversations") == 0


def test_every_error_line_is_plain_even_with_convrisk_output_json(tmp_path: Path) -> None:
    local = local_cli(tmp_path)
    # One failure here, with the setting as the process reads it; the others in-process.
    result = local.run("api", "/v1/nothing-here", CONVRISK_OUTPUT="json")
    assert result.returncode == 3, result.stderr
    assert result.stderr.startswith("Error: "), result.stderr
    local.close()


def test_on_a_terminal_a_number_too_large_for_a_float_is_shown_as_sent(
    scripted: tuple[ScriptedServer, dict[str, str]],
) -> None:
    server, env = scripted
    body = b'{"n": 1e400, "s": "\\u001b[2J"}'
    server.script["/v1/conversations"] = (200, [], body)
    term = Terminal(env, ["api", "/v1/conversations"], columns=80)
    assert term.finish() == 0
    assert term.text() == ['{"n": 1e400, "s": "\\u001b[2J"}']


def test_piped_an_answer_holding_nan_or_1e400_is_valid_json_with_one_note(
    scripted: tuple[ScriptedServer, dict[str, str]],
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
    made_conversations(local, 1)
    profile = {"customer_id": "cus_1", "profile_type": "moderate", "score": 50, "details": {}}
    (tmp_path / "profile.json").write_text(json.dumps(profile))
    made = ok(local.run("api", "/v1/risk-profiles", "-d", f"@{tmp_path / 'profile.json'}"))
    profile_id = json.loads(made)["id"]
    help_text = ok(local.run("api", "--help"))
    lines = [line.strip() for line in help_text.splitlines()]
    examples = [line for line in lines if line.startswith("convrisk api ")]
    assert len(examples) == 4, help_text
    for example in examples:
        line = example.replace("rp_01HVZ8Q2K4M6P8R0T2V4X6Z8B0", profile_id)
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
    assert local.store.risk_profiles.retrieve(profile_id)["score"] == 80
    local.close()


def test_the_hint_after_a_failure_part_way_gives_a_cursor_that_can_be_pasted(
    scripted: tuple[ScriptedServer, dict[str, str]],
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
