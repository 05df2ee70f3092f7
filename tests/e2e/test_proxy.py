"""`convrisk serve --proxy-to URL` through the installed script, in front of services on
127.0.0.1: an honest one (another `convrisk serve`), one that breaks the contract in several
ways, and ones that refuse, hang, redirect or answer without end. Each behaviour runs once here;
the variants of its refusals run in-process in tests/cli/test_proxy.py, under the same names."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest

from tests import described
from tests.loopback import JSONService, on_loopback, running, url_of

from .both_backends import TOKEN, isolated_env, serving
from .console import run
from .screen import on_screen

pytestmark = pytest.mark.e2e

CONV = "/v1/conversations"
RISK = "/v1/risk-profiles"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
# The upstream's ids: the proxy checks them against the document's id patterns.
RISK_CREATE = ["risk", "create", "--customer-id", "c_1", "--profile-type", "moderate"]
CONV_ID = "conv_01JD0000000000000000000000"
RISK_ID = "rp_01JD0000000000000000000000"


def new(parent: Path, name: str) -> Path:
    """A fresh folder for one serve's database."""
    folder = parent / name
    folder.mkdir()
    return folder


def http(url: str) -> httpx.Client:
    """Raw HTTP to a serve, with the token (bounded)."""
    return httpx.Client(base_url=url, headers=AUTH, timeout=20)


def cli_env(home: Path, url: str) -> dict[str, str]:
    """convrisk pointed at `url` with the token, from a HOME of its own, no journal."""
    home.mkdir(exist_ok=True)
    return isolated_env(home, CONVRISK_BASE_URL=url, CONVRISK_TOKEN=TOKEN, CONVRISK_JOURNAL="off")


def journal(env: dict[str, str]) -> list[dict[str, Any]]:
    """The proxy's request journal, as `convrisk sandbox requests -o json` lists it."""
    listed = run(env, "sandbox", "requests", "-o", "json")
    assert listed.returncode == 0, listed.stderr
    entries: list[dict[str, Any]] = json.loads(listed.stdout)
    return entries


def violations_logged(log: str) -> list[dict[str, Any]]:
    """The violation lines of a serve's JSON log."""
    lines = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    return [line for line in lines if "violation" in line]


def test_the_cli_through_the_proxy_gives_what_it_gives_direct_with_no_violation(
    tmp_path: Path,
) -> None:
    with (
        serving(new(tmp_path, "up"), "--seed", "3") as upstream,
        serving(
            new(tmp_path, "proxy"), "--proxy-to", upstream.url, "--log-format", "json"
        ) as proxy,
    ):
        via = cli_env(tmp_path / "via", proxy.url)
        direct = cli_env(tmp_path / "direct", upstream.url)
        made = run(via, "conv", "create", "--contact-id", "ct_1", "-o", "id")
        assert made.returncode == 0, made.stderr
        conv_id = made.stdout.strip()
        for args in (
            [*RISK_CREATE, "--score", "41.5", "-o", "id"],
            ["conv", "update", conv_id, "--pin", "--pinned-message-id", "m_1", "-o", "json"],
            ["conv", "update", conv_id, "--mute", "--archive", "-o", "json"],
        ):
            done = run(via, *args)
            assert done.returncode == 0, (args, done.stderr)
        for args in (
            ["conv", "list", "-o", "json"],
            ["conv", "list", "--pinned", "-o", "jsonl"],
            ["conv", "get", conv_id, "-o", "json"],
            ["risk", "list", "--limit", "1", "--all", "-o", "json"],
            ["conv", "get", "conv_01JD0000000000000000000000"],  # 404
            ["conv", "list", "--limit", "0"],  # refused before it is sent
        ):
            through, straight = run(via, *args), run(direct, *args)
            assert (through.returncode, through.stdout, through.stderr) == (
                straight.returncode,
                straight.stdout,
                straight.stderr,
            ), args
        entries = journal(via)
        assert len(entries) >= 8
        assert all(entry["violations"] == [] for entry in entries)
        # Only the journal is the proxy's: reset would be the upstream's business.
        refused = run(via, "sandbox", "reset", "--yes")
        assert refused.returncode != 0
        assert "proxy mode" in refused.stderr
        code, log = proxy.stop()
    assert code == 0
    assert violations_logged(log) == []
    assert TOKEN not in log


def _record(**changes: Any) -> dict[str, Any]:
    return described.conversation(CONV_ID, 1_700_000_000, contact_id="ct_1") | changes


class Breaking(JSONService):
    """A service that breaks the contract a different way on each route."""

    def do_GET(self) -> None:
        token = self.headers.get("Authorization", "").partition(" ")[2]
        if self.path == f"{CONV}/{CONV_ID}":
            # A field of the wrong type (the token echoed in it: never shown by the proxy).
            self.send_json(200, _record(is_muted=token))
        elif self.path.startswith(CONV):
            self.send_json(200, {"data": [_record()]})  # a page without has_more
        elif self.path == f"{RISK}/{RISK_ID}":
            self.send_json(404, {"message": "no such profile"})  # not the error shape
        else:
            data = b"<html><body>maintenance</body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)


# Each break: the request, the rule named and what the line says.
BREAKS = [
    (f"{CONV}/{CONV_ID}", "body", "/is_muted"),
    (f"{CONV}?limit=5", "page", ""),
    (f"{RISK}/{RISK_ID}", "error-shape", ""),
    (RISK, "content-type", ""),
]


@pytest.fixture(scope="module")
def breaking() -> Iterator[str]:
    with running(on_loopback(Breaking)) as server:
        yield url_of(server)


def test_report_passes_each_broken_answer_through_and_logs_and_journals_it(
    tmp_path: Path, breaking: str
) -> None:
    with serving(new(tmp_path, "p"), "--proxy-to", breaking, "--log-format", "json") as proxy:
        env = cli_env(tmp_path / "c", proxy.url)
        with http(proxy.url) as client:
            for target, _, _ in BREAKS:
                upstream = httpx.get(breaking + target, headers=AUTH, timeout=20)
                answer = client.get(target)
                assert (answer.status_code, answer.content) == (
                    upstream.status_code,
                    upstream.content,
                )
                assert answer.headers.get("content-type") == upstream.headers["content-type"]
        entries = journal(env)
        assert [
            entry["path"] + (f"?{entry['query']}" if entry["query"] else "") for entry in entries
        ] == [target for target, _, _ in BREAKS]
        for entry, (_, rule, where) in zip(entries, BREAKS, strict=True):
            assert entry["violations"], entry
            assert entry["violations"][0]["rule"] == rule
            assert entry["violations"][0]["where"] == where
        assert '"***" is not of type "boolean"' in entries[0]["violations"][0]["message"]
        table = [line for line in on_screen(env, "sandbox", "requests", columns=160) if line]
        assert "200 (1 violation)" in table[1]
        assert "404 (2 violations)" in table[3]
        shown = run(env, "sandbox", "requests")
        assert shown.returncode == 0, shown.stderr
        assert "/is_muted" in shown.stdout  # the TSV's VIOLATIONS column
        code, log = proxy.stop()
    assert code == 0
    logged = violations_logged(log)
    assert [(line["path"], line["violation"]) for line in logged][:1] == [
        (f"{CONV}/{CONV_ID}", "body")
    ]
    assert {line["violation"] for line in logged} == {rule for _, rule, _ in BREAKS}
    assert TOKEN not in log
    assert TOKEN not in json.dumps(entries)
    assert TOKEN not in shown.stdout


def test_enforce_turns_each_broken_answer_into_a_502_naming_it(
    tmp_path: Path, breaking: str
) -> None:
    with (
        serving(new(tmp_path, "p"), "--proxy-to", breaking, "--validate", "enforce") as proxy,
        http(proxy.url) as client,
    ):
        for target, rule, where in BREAKS:
            answer = client.get(target)
            assert answer.status_code == 502
            assert answer.headers["content-type"] == "application/json"
            message = answer.json()["error"]["message"]
            assert message.startswith("The upstream's answer breaks the contract: ")
            assert (f"{rule} {where}:" if where else f"{rule}:") in message
            assert TOKEN not in message
        page = client.get(f"{CONV}?limit=5").json()["error"]
        assert page == {
            "type": "api_error",
            "code": "bad_gateway",
            "message": 'The upstream\'s answer breaks the contract: page: "has_more" is a '
            "required property",
            "param": None,
        }


class Trouble(JSONService):
    """A redirect, an endless body and a body said to be huge; counts what reached it."""

    hits: ClassVar[dict[str, int]] = {}
    sent: ClassVar[list[int]] = [0]

    def do_GET(self) -> None:
        self.hits[self.path] = self.hits.get(self.path, 0) + 1
        if self.path == f"{CONV}/{CONV_ID}":
            self.send_response(302)
            self.send_header("Location", url_of(self.server) + "/elsewhere")  # type: ignore[arg-type]
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path == CONV:
            # No Content-Length: the body ends when the connection does; 64 MiB at most.
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Connection", "close")
            self.end_headers()
            chunk = b" " * 65536
            try:
                for _ in range(1024):
                    self.wfile.write(chunk)
                    self.sent[0] += len(chunk)
            except OSError:
                pass  # the proxy hung up: it read no further
        else:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(4 * 1024**3))
            self.end_headers()
            self.wfile.write(b"{")


@contextmanager
def hung_port() -> Iterator[int]:
    """A port that accepts connections (the kernel does) and never answers."""
    with closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield sock.getsockname()[1]


def refused_port() -> int:
    """A port nothing listens on (bound, then closed)."""
    with closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_a_refused_upstream_is_a_502_and_a_hung_one_a_504_within_the_timeout(
    tmp_path: Path,
) -> None:
    refused = f"http://127.0.0.1:{refused_port()}"
    with serving(new(tmp_path, "r"), "--proxy-to", refused) as proxy, http(proxy.url) as client:
        answer = client.get(CONV)
        assert answer.status_code == 502
        assert answer.json()["error"]["message"].startswith("Cannot connect to the upstream")
        _, log = proxy.stop()
    assert "violation: GET /v1/conversations: upstream: cannot connect" in log
    with (
        hung_port() as port,
        serving(
            new(tmp_path, "h"),
            "--proxy-to",
            f"http://127.0.0.1:{port}",
            "--proxy-timeout",
            "1",
            "--validate",
            "enforce",
        ) as proxy,
        http(proxy.url) as client,
    ):
        started = time.monotonic()
        answer = client.get(CONV)
        took = time.monotonic() - started
        assert answer.status_code == 504
        assert answer.json()["error"]["code"] == "gateway_timeout"
        assert "within 1 seconds" in answer.json()["error"]["message"]
        assert 0.9 < took < 10
        _, log = proxy.stop()
    assert "upstream: the upstream did not answer within 1 seconds" in log


def test_a_redirect_is_never_followed_and_a_huge_answer_is_cut_short(tmp_path: Path) -> None:
    home = tmp_path / "p"
    home.mkdir()
    # The proxy's cap is the max_response_mb setting, as the client's is.
    assert run(isolated_env(home), "config", "set", "max_response_mb", "1").returncode == 0
    Trouble.hits.clear()
    with running(on_loopback(Trouble)) as server:
        upstream = url_of(server)
        with serving(home, "--proxy-to", upstream) as proxy, http(proxy.url) as client:
            moved = client.get(f"{CONV}/{CONV_ID}")
            assert moved.status_code == 302
            assert moved.headers["location"] == upstream + "/elsewhere"
            assert "/elsewhere" not in Trouble.hits
            entry = journal(cli_env(tmp_path / "c", proxy.url))[0]
            assert entry["violations"] == [
                {
                    "rule": "redirect",
                    "where": "",
                    "message": f"302 to {upstream}/elsewhere; the document has no redirects",
                }
            ]
            endless = client.get(CONV)
            assert endless.status_code == 502
            assert "over the cap of 1048576 bytes" in endless.json()["error"]["message"]
            said = client.get(RISK)
            assert said.status_code == 502
            assert "4294967296 bytes" in said.json()["error"]["message"]
        # The proxy stopped reading just past the cap: the upstream could not send it all.
        assert Trouble.sent[0] < 32 * 1024**2
        with serving(home, "--proxy-to", upstream, "--validate", "enforce") as proxy:
            with http(proxy.url) as client:
                moved = client.get(f"{CONV}/{CONV_ID}")
            assert moved.status_code == 502
            assert "redirect: 302 to" in moved.json()["error"]["message"]
            assert "/elsewhere" not in Trouble.hits


def test_bad_proxy_options_exit_2_with_one_line(tmp_path: Path) -> None:
    # A URL carrying a password, never shown; every bad option in-process.
    args = ["--proxy-to", "http://u:p@127.0.0.1/"]
    done = run(
        isolated_env(tmp_path), "serve", "--port", "0", "--db", str(tmp_path / "s.db"), *args
    )
    assert done.returncode == 2
    assert "must not carry a user name or password" in done.stderr
    assert "p@" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_plain_serve_loads_neither_httpx_nor_jsonschema_rs(tmp_path: Path) -> None:
    """The proxy's modules load only with --proxy-to: the modules a serve has loaded once it
    listens, plain and proxying."""
    loaded: dict[str, set[str]] = {}
    for name, extra in (("plain", []), ("proxy", ["--proxy-to", "http://127.0.0.1:9"])):
        loaded[name] = _imports(tmp_path / f"{name}-i", extra)
    assert not {"httpx", "jsonschema_rs"} & loaded["plain"]
    assert {"httpx", "jsonschema_rs"} <= loaded["proxy"]


def _imports(home: Path, extra: list[str]) -> set[str]:
    """The top-level modules a `convrisk serve` imported by the time it listened."""
    home.mkdir()
    code = (
        "import sys, threading\n"
        "from convrisk.cli.app import main\n"
        "import convrisk.local_backend.serve.server as server\n"
        "real = server.run_server\n"
        "def ready_then_report(**kw):\n"
        "    on_ready = kw['on_ready']\n"
        "    def report(url):\n"
        "        on_ready(url)\n"
        "        print(' '.join(sorted({m.split('.')[0] for m in sys.modules})), flush=True)\n"
        "        import os, signal; os.kill(os.getpid(), signal.SIGTERM)\n"
        "    kw['on_ready'] = report\n"
        "    return real(**kw)\n"
        "server.run_server = ready_then_report\n"
        f"main(['serve', '--port', '0', '--db', {str(home / 's.db')!r}, *{extra!r}])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=isolated_env(home),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


def test_faults_and_latency_still_apply_in_front_of_the_upstream(tmp_path: Path) -> None:
    with (
        serving(new(tmp_path, "up")) as upstream,
        serving(
            new(tmp_path, "p"),
            "--proxy-to",
            upstream.url,
            "--faults",
            "1",
            "--latency",
            "150",
            "--seed",
            "5",
        ) as proxy,
    ):
        with http(proxy.url) as client:
            for _ in range(12):
                started = time.monotonic()
                with contextlib.suppress(httpx.HTTPError):  # an injected drop
                    client.get(CONV)
                assert time.monotonic() - started >= 0.15
        assert not any("ids repeat" in line for line in proxy.banner)  # the upstream's ids
        entries = journal(cli_env(tmp_path / "c", proxy.url))
        assert len(entries) == 12
        assert all(entry["fault"] for entry in entries)
        # Only a drop after the operation reaches the upstream; the others are the proxy's own.
        reached = journal(cli_env(tmp_path / "d", upstream.url))
        assert len(reached) == sum(entry["fault"] == "drop-after" for entry in entries)


def test_a_path_with_a_dot_segment_is_not_forwarded(tmp_path: Path) -> None:
    with (
        serving(new(tmp_path, "up")) as upstream,
        serving(new(tmp_path, "p"), "--proxy-to", upstream.url) as proxy,
    ):
        # Sent as is (an HTTP client would resolve the dots itself).
        host, port = proxy.url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=20) as sock:
            sock.sendall(
                b"GET /v1/../v1/conversations HTTP/1.1\r\nHost: x\r\n"
                + f"Authorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n".encode()
            )
            head = sock.recv(4096)
        assert head.startswith(b"HTTP/1.1 404 ")
        assert journal(cli_env(tmp_path / "d", upstream.url)) == []


# Small JSON, nested deeper than the contract's validator walks (255 levels).
DEEP = b"[" * 300 + b"]" * 300


class Deep(JSONService):
    """Answers every request with a record whose contact_id nests 300 levels deep."""

    def do_GET(self) -> None:
        self.send_json(200, b'{"id": "' + CONV_ID.encode() + b'", "contact_id": ' + DEEP + b"}")

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.do_GET()


def test_a_body_nested_too_deep_to_check_is_reported_and_enforced_not_a_500(
    tmp_path: Path,
) -> None:
    sent = b'{"contact_id": ' + DEEP + b"}"
    with running(on_loopback(Deep)) as server:
        upstream = url_of(server)
        with serving(new(tmp_path, "p"), "--proxy-to", upstream) as proxy, http(proxy.url) as c:
            posted = c.post(CONV, content=sent, headers={"Content-Type": "application/json"})
            # Forwarded and passed through (report), not the proxy's own 500.
            assert (posted.status_code, posted.content) == (200, httpx.get(upstream).content)
            [entry] = journal(cli_env(tmp_path / "c", proxy.url))
            assert [(v["rule"], v["where"]) for v in entry["violations"]] == [
                ("request", "/body"),
                ("body", ""),
            ]
            assert all("too deep" in v["message"] for v in entry["violations"])
        with (
            serving(new(tmp_path, "e"), "--proxy-to", upstream, "--validate", "enforce") as proxy,
            http(proxy.url) as client,
        ):
            answer = client.get(f"{CONV}/{CONV_ID}")
            assert answer.status_code == 502
            assert answer.json()["error"]["message"] == (
                "The upstream's answer breaks the contract: body: objects and arrays nest too "
                "deep to check"
            )


def test_a_proxy_pointed_at_itself_answers_502_at_once_not_a_storm_of_requests(
    tmp_path: Path,
) -> None:
    port = refused_port()
    itself = f"http://127.0.0.1:{port}"
    with (
        serving(new(tmp_path, "p"), "--port", str(port), "--proxy-to", itself) as proxy,
        http(proxy.url) as client,
    ):
        assert proxy.url == itself
        started = time.monotonic()
        answer = client.get(CONV)
        assert time.monotonic() - started < 5  # not the 30 s timeout
        assert answer.status_code == 502
        assert "this proxy" in answer.json()["error"]["message"]
        # The client's request and the one that came back: the loop stopped at the first turn.
        assert len(journal(cli_env(tmp_path / "c", proxy.url))) == 2


class Utf8Redirect(JSONService):
    """A redirect whose Location is UTF-8 (bytes past latin-1); keeps the User-Agent it got."""

    agents: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.agents.append(self.headers.get("User-Agent", ""))  # as latin-1
        self.wfile.write(
            b"HTTP/1.1 302 Found\r\nLocation: /caf\xe2\x82\xac\r\nContent-Length: 0\r\n"
            b"Connection: close\r\n\r\n"
        )
        self.close_connection = True


def test_headers_past_ascii_go_both_ways_as_their_bytes_not_a_500(
    tmp_path: Path,
) -> None:
    with (
        running(on_loopback(Utf8Redirect)) as server,
        serving(new(tmp_path, "p"), "--proxy-to", url_of(server)) as proxy,
    ):
        host, port = proxy.url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=20) as sock:
            sock.sendall(
                f"GET {CONV} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n".encode()
                + b"User-Agent: caf\xc3\xa9\r\nConnection: close\r\n\r\n"
            )
            head = b""
            while b"\r\n\r\n" not in head and len(head) < 65536:
                got = sock.recv(4096)
                if not got:
                    break
                head += got
        assert head.startswith(b"HTTP/1.1 302 ")
        assert b"\r\nlocation: /caf\xe2\x82\xac\r\n" in head
        assert Utf8Redirect.agents == ["caf\xc3\xa9"]  # the client's bytes, as they came
        [entry] = journal(cli_env(tmp_path / "c", proxy.url))
        assert [v["rule"] for v in entry["violations"]] == ["redirect"]


class RawUpstream(JSONService):
    """An upstream that answers every GET with `head` as raw bytes (what no library would send),
    then a page as JSON."""

    head: ClassVar[bytes] = b"HTTP/1.1 200 OK\r\n"

    def do_GET(self) -> None:
        body = b'{"data": [], "has_more": false}'
        self.wfile.write(
            self.head
            + b"Content-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
            + body
        )
        self.close_connection = True


class StatusPastHttp(RawUpstream):
    """Answers status 999 (three digits, so an HTTP parser takes it; HTTP has no such status)."""

    head = b"HTTP/1.1 999 Odd\r\n"


def test_a_status_http_does_not_have_is_the_proxys_502_not_a_dropped_connection(
    tmp_path: Path,
) -> None:
    with (
        running(on_loopback(StatusPastHttp)) as server,
        serving(new(tmp_path, "p"), "--proxy-to", url_of(server)) as proxy,
        http(proxy.url) as client,
    ):
        answer = client.get(CONV)  # report: passed through if it could be; it cannot
        assert answer.status_code == 502
        assert "999" in answer.json()["error"]["message"]
        [entry] = journal(cli_env(tmp_path / "c", proxy.url))
        assert (entry["status"], [v["rule"] for v in entry["violations"]]) == (502, ["status"])
        _, log = proxy.stop()
    assert "Traceback" not in log


class HeaderPastHttp(RawUpstream):
    """An upstream whose Location header holds an escape character (raw bytes, as sent)."""

    head = b"HTTP/1.1 200 OK\r\nLocation: /x\x1b[31m\r\n"


def test_an_upstream_header_http_does_not_allow_is_the_proxys_502_not_a_dropped_connection(
    tmp_path: Path,
) -> None:
    with (
        running(on_loopback(HeaderPastHttp)) as server,
        serving(new(tmp_path, "p"), "--proxy-to", url_of(server)) as proxy,
        http(proxy.url) as client,
    ):
        answer = client.get(CONV)
        assert answer.status_code == 502
        message = answer.json()["error"]["message"]
        assert "location header" in message and "\\x1b" in message and "\x1b" not in message
        [entry] = journal(cli_env(tmp_path / "c", proxy.url))
        assert (entry["status"], [v["rule"] for v in entry["violations"]]) == (502, ["upstream"])
        _, log = proxy.stop()
    assert "Traceback" not in log


def test_spaces_after_a_request_header_value_are_not_part_of_it_through_the_proxy(
    tmp_path: Path,
) -> None:
    with (
        serving(new(tmp_path, "up")) as upstream,
        serving(new(tmp_path, "p"), "--proxy-to", upstream.url) as proxy,
    ):
        host, port = proxy.url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=20) as sock:
            sock.sendall(
                f"GET {CONV} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN} \r\n".encode()
                + b"User-Agent: spaced \t\r\nConnection: close\r\n\r\n"
            )
            head = b""
            while b"\r\n\r\n" not in head and len(head) < 65536:
                got = sock.recv(4096)
                if not got:
                    break
                head += got
        assert head.startswith(b"HTTP/1.1 200 "), head
