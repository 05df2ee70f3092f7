"""`convrisk serve` as a sandbox: its options, its token, its limits, and faults end to end.
Each behaviour runs once here; the variants of its refusals (every token, every bad option) run
in-process in tests/cli/test_serve_cli.py, under the same test names."""

from __future__ import annotations

import json
import os
import re
import resource
import socket
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import httpx
import jsonschema_rs

from convrisk.api_client import Client
from convrisk.local_backend.backend import LocalBackend
from convrisk.local_backend.serve.faults import FAULTS

from .both_backends import TOKEN, Remote, Serve, isolated_env, serving
from .both_backends import serve as serve  # a fixture: one `convrisk serve` for this module
from .console import CONVRISK


def run_serve(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`convrisk serve ARGS` expected to stop by itself (a refusal); never waits past 30 s."""
    return subprocess.run(
        [CONVRISK, "serve", "--port", "0", "--db", str(home / "s.db"), *args],
        capture_output=True,
        text=True,
        timeout=30,
        env=isolated_env(home, **env),
    )


def test_a_token_that_is_not_a_header_token_is_refused_with_exit_2(tmp_path: Path) -> None:
    # From the environment, as the process reads it; every token, from --token as well, in-process.
    token = "my secret token"
    result = run_serve(tmp_path, CONVRISK_SERVE_TOKEN=token)
    assert result.returncode == 2, result.stderr
    assert "listening" not in result.stderr
    assert "spaces or characters" in result.stderr
    assert token not in result.stderr
    assert not (tmp_path / "s.db.token").exists()


def test_a_parent_pid_that_is_not_the_parent_of_serve_is_refused_with_exit_2(
    tmp_path: Path,
) -> None:
    # One value here; every kind of wrong value in-process.
    result = run_serve(tmp_path, CONVRISK_SERVE_PARENT_PID=str(os.getppid()))  # not its parent
    assert result.returncode == 2, result.stderr
    assert "CONVRISK_SERVE_PARENT_PID is" in result.stderr
    assert "listening" not in result.stderr


def test_bad_sandbox_options_are_usage_errors(tmp_path: Path) -> None:
    args = ["--faults", "1.5"]  # one of them; every one in-process
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
    proc, port = _serve_limited(tmp_path, tmp_path / "serve.db", _nofile_128)
    half: list[socket.socket] = []
    try:
        for _ in range(250):
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            sock.sendall(b"GET /v1/conversations HTTP/1.1\r\nHost: x\r\n")
            half.append(sock)
        cpu_before, wall_before = cpu_seconds(proc.pid), time.monotonic()
        result = Remote(tmp_path, f"http://127.0.0.1:{port}", TOKEN).run(
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


# -- the wire against a real `convrisk serve`: raw sockets on 127.0.0.1, bounded ---------------

READ_SECONDS = 15  # at most, for any one read of an answer (the head deadline is 10 s)


def _connect(served: Serve) -> socket.socket:
    port = int(served.url.rsplit(":", 1)[1])
    return socket.create_connection(("127.0.0.1", port), timeout=READ_SECONDS)


def _read_answer(sock: socket.socket, buffered: bytes = b"") -> tuple[bytes, dict[str, str], bytes]:
    """One answer (status line, headers, body by its Content-Length), bounded by the socket's
    timeout; the bytes read past it are dropped."""
    data = buffered
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"closed before an answer: {data!r}"
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    status, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines)}
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        chunk = sock.recv(65536)
        assert chunk, "closed in the middle of an answer"
        rest += chunk
    return status.encode("latin-1"), headers, rest[:length]


def _error_of(body: bytes) -> dict[str, object]:
    error = json.loads(body)["error"]
    assert set(error) == {"type", "code", "message", "param"}, error
    return dict(error)


def _peak_mib(pid: int) -> float:
    """A process's peak resident memory (VmHWM), in MiB."""
    status = Path(f"/proc/{pid}/status").read_text()
    match = re.search(r"^VmHWM:\s+(\d+) kB", status, re.M)
    assert match
    return int(match.group(1)) / 1024


def test_a_giant_request_head_is_refused_with_431_before_it_fills_memory(serve: Serve) -> None:
    with _connect(serve) as sock:
        sock.sendall(b"GET /v1/conversations HTTP/1.1\r\nHost: x\r\nX-Giant: ")
        sent = 0
        try:
            while sent < 16 * 1024 * 1024:  # the old server took all of it and more
                sock.sendall(b"a" * 65536)
                sent += 65536
        except OSError:
            pass  # refused and closed: what is expected, the answer is waiting
        status, headers, body = _read_answer(sock)
        assert status.startswith(b"HTTP/1.1 431 "), status
        assert headers["connection"] == "close"
        assert headers["content-type"] == "application/json"
        assert _error_of(body)["type"] == "invalid_request_error"
    # The head is refused past 64 KiB; what follows is read and dropped for a few seconds (a
    # lingering close, bounded at 4 MiB) so that the client can read the answer.
    assert sent < 8 * 1024 * 1024
    assert _peak_mib(serve.proc.pid) < 150  # the old server: 237 MiB for one such connection


def test_a_head_just_under_the_cap_is_served(serve: Serve) -> None:
    with _connect(serve) as sock:
        filler = "a" * (48 * 1024)
        sock.sendall(
            f"GET /v1/conversations?limit=1 HTTP/1.1\r\nHost: x\r\nX-Big: {filler}\r\n"
            f"Authorization: Bearer {serve.token}\r\n\r\n".encode()
        )
        status, _, body = _read_answer(sock)
    assert status.startswith(b"HTTP/1.1 200 "), (status, body)


def test_a_pipelined_get_followed_by_a_foreign_method_gets_both_answers_in_order(
    serve: Serve,
) -> None:
    auth = f"Authorization: Bearer {serve.token}\r\n"
    requests = (
        f"GET /v1/conversations?limit=1 HTTP/1.1\r\nHost: x\r\n{auth}\r\n"
        f"FOO /v1/conversations HTTP/1.1\r\nHost: x\r\n{auth}\r\n"
        f"GET /v1/risk-profiles?limit=1 HTTP/1.1\r\nHost: x\r\n{auth}Connection: close\r\n\r\n"
    ).encode()
    with _connect(serve) as sock:
        sock.sendall(requests)  # one segment
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    statuses = re.findall(rb"HTTP/1\.1 (\d{3}) ", data)
    assert statuses == [b"200", b"405", b"200"], data
    assert b'"method_not_allowed"' in data


def test_a_body_over_the_limit_gets_its_413_not_a_broken_pipe(serve: Serve) -> None:
    body = b'{"contact_id": "' + b"x" * (2 * 1024 * 1024) + b'"}'
    with _connect(serve) as sock:
        sock.sendall(
            f"POST /v1/conversations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {serve.token}"
            f"\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        )
        # The server refuses by the Content-Length at once; the client is still sending.
        time.sleep(0.3)
        sock.sendall(body)  # the old server had closed: a reset or a broken pipe here
        status, headers, answer = _read_answer(sock)
        assert status.startswith(b"HTTP/1.1 413 ")
        assert headers["connection"] == "close"
        assert "too large" in str(_error_of(answer)["message"])


def test_convrisk_reports_a_413_from_serve_as_too_large_and_does_not_retry(
    serve: Serve, tmp_path: Path
) -> None:
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"note": "y" * (2 * 1024 * 1024)}))
    cli = Remote(tmp_path, serve.url, serve.token)
    for _ in range(3):
        result = cli.run(
            "risk", "create", "--customer-id", "c_big", "--profile-type", "t", "--score", "1",
            "--details", f"@{big}",
        )  # fmt: skip
        assert result.returncode == 1, result.stderr
        assert "too large" in result.stderr and "413" in result.stderr
        assert "retry" not in result.stderr.lower()


def _nofile_48() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (48, 48))


def test_over_the_connection_limit_the_503_is_in_the_error_shape(tmp_path: Path) -> None:
    """48 descriptors leave serve 16 connections (local_backend.serve.server): the 17th is refused
    with a 503 that carries the error shape and Retry-After, like every other error."""
    proc, port = _serve_limited(tmp_path, tmp_path / "s.db", _nofile_48)
    idle: list[socket.socket] = []
    try:
        for _ in range(16):
            idle.append(socket.create_connection(("127.0.0.1", port), timeout=READ_SECONDS))
        time.sleep(0.3)  # accepted, each a connection of the server
        with socket.create_connection(("127.0.0.1", port), timeout=READ_SECONDS) as sock:
            sock.sendall(
                f"GET /v1/conversations HTTP/1.1\r\nHost: x\r\n"
                f"Authorization: Bearer {TOKEN}\r\n\r\n".encode()
            )
            status, headers, body = _read_answer(sock)
        assert status.startswith(b"HTTP/1.1 503 "), (status, body)
        assert headers["content-type"] == "application/json"
        assert "retry-after" in headers
        assert _error_of(body)["type"] == "api_error"
    finally:
        for sock in idle:
            sock.close()
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err


RISK_EDGE = {"customer_id": "c", "profile_type": "t", "score": 1, "details": {}}
EDGE_BODIES: list[tuple[str, str, dict[str, object]]] = [
    ("post", "RiskProfileCreate", {**RISK_EDGE, "profile_type": "\x1d"}),
    ("post", "RiskProfileCreate", {**RISK_EDGE, "customer_id": "\u00a0"}),
    ("post", "RiskProfileCreate", {**RISK_EDGE, "profile_type": "\ufeff"}),
    ("post", "RiskProfileCreate", {**RISK_EDGE, "profile_type": "\x85x"}),
    ("post", "RiskProfileCreate", {**RISK_EDGE, "score": 2.5e300}),
    ("post", "RiskProfileCreate", {**RISK_EDGE, "score": 2**53 + 1}),
    ("post", "RiskProfileCreate", {**RISK_EDGE, "score": -(2**53)}),
    ("put", "ConversationUpdate", {"archived_at": 1.797e308}),
    ("put", "ConversationUpdate", {"archived_at": 253402300799}),
    ("put", "ConversationUpdate", {"archived_at": 253402300800}),
    ("put", "ConversationUpdate", {"archived_at": 0.5}),
]


def test_the_served_document_says_what_the_server_does_at_the_edges(serve: Serve) -> None:
    """Each body is accepted by `serve` exactly when the schema it serves says it is valid, as
    schemathesis judges (jsonschema_rs: ECMAScript's regular expressions, as JSON Schema says)."""
    headers = {"Authorization": f"Bearer {serve.token}"}
    with httpx.Client(base_url=serve.url, headers=headers, timeout=30) as http:
        doc = http.get("/openapi.json").json()
        assert "DESIGN" not in json.dumps(doc)
        conv = http.post("/v1/conversations", json={"contact_id": "ct_edges"}).json()
        for method, model, body in EDGE_BODIES:
            schema = {**doc["components"]["schemas"][model], "components": doc["components"]}
            valid = jsonschema_rs.validator_for(schema).is_valid(body)
            if method == "post":
                answer = http.post("/v1/risk-profiles", json=body)
            else:
                answer = http.put(f"/v1/conversations/{conv['id']}", json=body)
            assert answer.status_code == (200 if valid else 400), (body, valid, answer.text)


def _serve_limited(
    tmp_path: Path, db_path: Path, limit: Callable[[], None]
) -> tuple[subprocess.Popen[str], int]:
    """`convrisk serve` on `db_path` whose descriptors `limit` caps (run in the child before it
    starts); it and its port once it listens."""
    proc = subprocess.Popen(
        [CONVRISK, "serve", "--port", "0", "--db", str(db_path), "--token", TOKEN],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=isolated_env(tmp_path),
        preexec_fn=limit,
    )
    assert proc.stderr is not None
    url = ""
    for line in proc.stderr:
        match = re.match(r"convrisk serve: listening on (http://\S+)$", line)
        if match:
            url = match.group(1)
            break
    assert url, "serve did not start"
    return proc, int(url.rsplit(":", 1)[1])
