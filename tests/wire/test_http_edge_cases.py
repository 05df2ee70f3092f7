"""HTTP off the happy path: 405 only after authentication, two Authorization headers, a 500
that hides the server's files, HTTP/1.0 keep-alive, stalled or unfinished requests, a database
locked by another process, and an answer's head and body in one write."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
import threading
import time
from typing import Any

import httpx
import pytest

from convrisk.local_backend.serve import asgi_app, uvicorn_protocols
from convrisk.local_backend.serve.server import is_loopback

from .conftest import TLS, TOKEN, Served, connect, read_all

CONV = "/v1/conversations"
RISK = "/v1/risk-profiles"


@pytest.mark.parametrize("method", ["TRACE", "FOO", "PATCH", "BREW", "OPTIONS", "HEAD"])
@pytest.mark.parametrize(
    ("path", "allow"), [(CONV, "GET, POST"), (f"{RISK}/rp_1", "GET, PUT, DELETE")]
)
def test_a_method_the_route_lacks_is_405_with_allow_but_only_after_authentication(
    anon: httpx.Client, method: str, path: str, allow: str
) -> None:
    unauthenticated = anon.request(method, path)
    assert unauthenticated.status_code == 401
    assert unauthenticated.headers["www-authenticate"].startswith("Bearer")
    response = anon.request(method, path, headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 405
    assert response.headers["allow"] == allow
    if method != "HEAD":
        assert response.json()["error"]["code"] == "method_not_allowed"


def test_a_405_keeps_the_connection_usable(served: Served) -> None:
    with connect(served) as sock:
        for method in ("FOO", "GET", "TRACE", "GET"):
            sock.sendall(
                f"{method} {CONV} HTTP/1.1\r\nHost: x\r\n"
                f"Authorization: Bearer {TOKEN}\r\n\r\n".encode()
            )
            head = b""
            while b"\r\n\r\n" not in head:
                head += sock.recv(1)
            length = int(re.search(rb"content-length: (\d+)", head, re.I).group(1))  # type: ignore[union-attr]
            body = b""
            while len(body) < length:
                body += sock.recv(length - len(body))
            assert head.startswith(b"HTTP/1.1 405" if method != "GET" else b"HTTP/1.1 200")


@pytest.mark.parametrize(
    "pair",
    [(TOKEN, "wrong-token"), ("wrong-token", TOKEN), (TOKEN, TOKEN)],
    ids=["good-then-bad", "bad-then-good", "good-twice"],
)
def test_two_authorization_headers_are_a_400_and_create_nothing(
    served: Served, http: httpx.Client, pair: tuple[str, str]
) -> None:
    body = b'{"contact_id": "ct_twice"}'
    with connect(served) as sock:
        sock.sendall(
            (
                f"POST {CONV} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                f"Authorization: Bearer {pair[0]}\r\nAuthorization: Bearer {pair[1]}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
            ).encode()
            + body
        )
        answer = read_all(sock)
    assert answer.startswith(b"HTTP/1.1 400 ")
    error = json.loads(answer.split(b"\r\n\r\n", 1)[1])["error"]
    assert error["type"] == "invalid_request_error"
    assert "Authorization" in error["message"]
    assert http.get(CONV).json()["data"] == []


def test_a_500_carries_no_path_or_internals_and_the_log_has_them(
    served: Served, http: httpx.Client
) -> None:
    created = http.post(
        RISK, json={"customer_id": "c", "profile_type": "t", "score": 1, "details": {}}
    )
    rp_id = created.json()["id"]
    # Break the stored row the way a bad disk or a hand edit would.
    with sqlite3.connect(served.db_path) as db:
        db.execute("UPDATE risk_profiles SET details = '{broken' WHERE id = ?", (rp_id,))
    response = http.get(f"{RISK}/{rp_id}")
    assert response.status_code == 500
    error = response.json()["error"]
    assert error["type"] == "api_error"
    folder = str(served.db_path.parent)
    assert folder not in response.text and "wire.db" not in response.text
    assert "Traceback" not in response.text
    log = "\n".join(served.logs)
    assert f"GET {RISK}/{rp_id} 500" in log
    assert str(served.db_path) in log  # the reason, for the operator


def test_an_http10_keep_alive_request_is_answered_whole_and_never_left_hanging(
    served: Served,
) -> None:
    with connect(served) as sock:
        sock.sendall(
            f"GET {CONV}?limit=1 HTTP/1.0\r\nConnection: keep-alive\r\n"
            f"Authorization: Bearer {TOKEN}\r\n\r\n".encode()
        )
        # The answer either closes the connection or says keep-alive with a length; the old
        # server kept it open without saying so, and `ab -k` waited forever.
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = sock.recv(4096)
            assert chunk, "closed before the answer"
            head += chunk
        headers, _, body = head.partition(b"\r\n\r\n")
        assert headers.startswith(b"HTTP/1.1 200")
        length = int(re.search(rb"content-length: (\d+)", headers, re.I).group(1))  # type: ignore[union-attr]
        if re.search(rb"connection: keep-alive", headers, re.I):
            while len(body) < length:
                body += sock.recv(length - len(body))
        else:
            body += read_all(sock)
        assert json.loads(body) == {"has_more": False, "data": []}


def test_a_connection_that_never_finishes_its_request_head_is_closed(
    served: Served, http: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(uvicorn_protocols, "HEAD_SECONDS", 0.3)
    with connect(served) as silent, connect(served) as half:
        half.sendall(b"GET /v1/conversations HTTP/1.1\r\nHost: x\r\n")
        assert read_all(half) == b""
        assert read_all(silent) == b""
    # Meanwhile and after, others are served.
    assert http.get(CONV).status_code == 200


def test_a_body_that_stalls_gets_a_408_and_creates_nothing(
    served: Served, http: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(asgi_app, "BODY_SECONDS", 0.3)
    with connect(served) as sock:
        sock.sendall(
            f"POST {CONV} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
            "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{".encode()
        )
        answer = read_all(sock)
    assert answer.startswith(b"HTTP/1.1 408 ")
    assert b"connection: close" in answer.lower()
    assert http.get(CONV).json()["data"] == []


def test_the_server_is_named_convrisk_not_uvicorn(http: httpx.Client) -> None:
    response = http.get(CONV)
    assert response.headers["server"].startswith("convrisk/")
    assert response.headers["cache-control"] == "no-store"


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.0.2.7", False),
        ("example.org", False),
    ],
)
def test_only_loopback_addresses_count_as_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_a_write_that_must_wait_for_another_process_does_not_stall_other_requests(
    served: Served, http: httpx.Client
) -> None:
    result: dict[str, Any] = {}
    other = sqlite3.connect(served.db_path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:

        def create() -> None:
            with httpx.Client(base_url=served.url, verify=TLS, timeout=30) as client:
                result["response"] = client.post(
                    CONV,
                    json={"contact_id": "ct_waited"},
                    headers={"Authorization": f"Bearer {TOKEN}"},
                )

        writer = threading.Thread(target=create)
        writer.start()
        # The create waits for the lock on the writer thread; reads are answered meanwhile.
        for _ in range(5):
            assert http.get(CONV).json()["data"] == []
        assert writer.is_alive()
    finally:
        other.execute("ROLLBACK")
        other.close()
    writer.join(timeout=30)
    assert result["response"].status_code == 200
    assert [c["contact_id"] for c in http.get(CONV).json()["data"]] == ["ct_waited"]


def test_an_answer_head_and_body_go_out_in_one_write() -> None:
    class Recorder:
        def __init__(self) -> None:
            self.writes: list[bytes] = []
            self.closed = False

        def write(self, data: bytes) -> None:
            self.writes.append(data)

        def close(self) -> None:
            self.closed = True

    loop = asyncio.new_event_loop()
    try:
        recorder = Recorder()
        one = uvicorn_protocols.OneWrite(recorder, loop)  # type: ignore[arg-type]
        one.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n")
        one.write(b"{}")
        assert recorder.writes == [b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"]
        one.write(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n")
        assert len(recorder.writes) == 1  # held until the loop turns (a HEAD has no body)
        loop.run_until_complete(asyncio.sleep(0))
        assert recorder.writes[1].startswith(b"HTTP/1.1 405")
        one.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        one.close()
        assert recorder.writes[2] == b"HTTP/1.1 100 Continue\r\n\r\n" and recorder.closed
    finally:
        loop.close()


@pytest.mark.e2e  # slow: about a second, or more (the quick loop leaves it out)
def test_a_body_that_drips_gets_a_408_at_its_total_deadline_and_creates_nothing(
    served: Served, http: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A byte now and then never stalls long enough for BODY_SECONDS; the total deadline
    still ends it (the old server held such a connection for as long as the client liked)."""
    monkeypatch.setattr(asgi_app, "BODY_TOTAL_SECONDS", 0.5)
    body = b'{"contact_id": "ct_drip"}'
    with connect(served) as sock:
        sock.sendall(
            f"POST {CONV} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        )
        started = time.monotonic()
        answer = b""
        for byte in body[:-1]:  # at most 24 x 0.1 s
            sock.sendall(bytes([byte]))
            time.sleep(0.1)
            sock.settimeout(0.001)
            try:
                answer = sock.recv(65536)
            except TimeoutError:
                continue
            finally:
                sock.settimeout(10)
            break
        answer += read_all(sock)
        took = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 408 "), answer
    assert b"within 0.5 seconds" in answer
    assert took < 2.4
    assert http.get(CONV).json()["data"] == []


def test_a_failure_outside_the_wire_rules_is_a_500_in_the_error_shape(
    served: Served, http: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("broken at /secret/place")

    monkeypatch.setattr(served.server.wire, "start", broken)
    response = http.get(CONV)
    assert response.status_code == 500
    assert response.headers["content-type"] == "application/json"
    assert response.json()["error"]["type"] == "api_error"
    assert "/secret/place" not in response.text
    assert "/secret/place" in "\n".join(served.logs)


def test_a_giant_head_with_a_method_h11_parses_is_a_431_too(served: Served) -> None:
    with connect(served) as sock:
        sock.sendall(f"FOO {CONV} HTTP/1.1\r\nHost: x\r\nX-Giant: ".encode())
        try:
            for _ in range(64):  # 4 MiB at most
                sock.sendall(b"a" * 65536)
        except OSError:
            pass
        answer = read_all(sock)
    assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]
    error = json.loads(answer.split(b"\r\n\r\n", 1)[1])["error"]
    assert error["code"] == "request_header_fields_too_large"
    assert any("over 65536 bytes: answered 431" in line for line in served.logs), served.logs


def _pipelined(served: Served, *requests: bytes) -> list[bytes]:
    """Send `requests` in one write on one connection (the last closes it); the statuses."""
    with connect(served) as sock:
        sock.sendall(b"".join(requests))
        data = read_all(sock)
    return re.findall(rb"HTTP/1\.1 (\d{3}) ", data)


def _request(method: str, path: str, body: bytes = b"", *, last: bool = False) -> bytes:
    head = f"{method} {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
    if body:
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    if last:
        head += "Connection: close\r\n"
    return head.encode() + b"\r\n" + body


def test_a_foreign_method_right_after_a_body_is_answered_in_its_turn(
    served: Served, http: httpx.Client
) -> None:
    statuses = _pipelined(
        served,
        _request("POST", CONV, b'{"contact_id": "ct_first"}'),
        _request("BREW", CONV),
        _request("GET", CONV, last=True),
    )
    assert statuses == [b"200", b"405", b"200"]
    assert [c["contact_id"] for c in http.get(CONV).json()["data"]] == ["ct_first"]


def test_a_request_line_inside_a_body_is_only_text(served: Served, http: httpx.Client) -> None:
    text = "a FOO /v1/conversations HTTP/1.1 b"
    statuses = _pipelined(
        served,
        _request("POST", CONV, json.dumps({"contact_id": text}).encode()),
        _request("GET", CONV, last=True),
    )
    assert statuses == [b"200", b"200"]
    assert [c["contact_id"] for c in http.get(CONV).json()["data"]] == [text]
