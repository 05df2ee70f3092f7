"""The access log of `serve`: one line per request (text or JSON) with time, client, method,
target, status and duration; never a token or a body; control characters always escaped."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import httpx
import pytest

from convrisk.local_backend.serve import access_log
from convrisk.local_backend.serve.access_log import AccessLog

from .conftest import TLS, TOKEN, Served, ServeWith, connect, read_all

CONV = "/v1/conversations"


@pytest.mark.parametrize("method", [b"GET", b"FOO"])
def test_control_characters_from_the_request_line_never_reach_the_log_raw(
    served: Served, method: bytes
) -> None:
    # Bytes 0x80-0xff in a request target: 0x9b is the C1 "CSI" escape of a terminal.
    with connect(served) as sock:
        sock.sendall(
            method + b" /v1/conversations/conv_\x9b31mX?x=\x9b2J HTTP/1.1\r\nHost: x\r\n"
            b"Connection: close\r\nAuthorization: Bearer " + TOKEN.encode() + b"\r\n\r\n"
        )
        answer = read_all(sock)
    # Both parsers refuse bytes outside visible ASCII in the request line (a JSON 400).
    assert answer.startswith(b"HTTP/1.1 400 ")
    assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["error"]["type"] == "invalid_request_error"
    assert served.logs
    assert all(line.isprintable() for line in served.logs)


def test_the_access_log_escapes_control_characters_in_what_it_is_given() -> None:
    lines: list[str] = []
    log = AccessLog(lines.append, "text", TOKEN)
    log.request("127.0.0.1:1", "G\x1bET", "/v1/\x1b[31m", "q=\x07\u202e", 200, 0.001)
    log.error("GET", "/v1/\x9b", "Traceback:\n  boom \x1b[2J")
    log.notice("warning", "odd \r\n input")
    assert all(part.isprintable() for line in lines for part in line.split("\n"))
    assert "G\\x1bET /v1/\\x1b[31m?q=\\x07\\u202e 200" in lines[0]
    assert "boom \\x1b[2J" in lines[1]
    assert "odd \\r\\n input" in lines[2]


def test_the_log_names_time_client_query_status_and_duration(
    served: Served, http: httpx.Client
) -> None:
    http.get(CONV, params={"limit": "2", "muted": "false"})
    (line,) = served.logs
    time_part, client, method, target, status, duration = line.split(" ")
    assert time.strptime(time_part[:19], "%Y-%m-%dT%H:%M:%S") and time_part.endswith("Z")
    assert re.fullmatch(r"127\.0\.0\.1:\d+", client)
    assert (method, target, status) == ("GET", f"{CONV}?limit=2&muted=false", "200")
    assert re.fullmatch(r"\d+\.\dms", duration)


def test_json_log_lines_are_one_object_per_request_without_token_or_body(
    serve_with: ServeWith,
) -> None:
    served = serve_with(log_format="json")
    with httpx.Client(base_url=served.url, verify=TLS, timeout=10) as client:
        client.post(
            CONV,
            json={"contact_id": "ct_body_marker"},
            headers={"Authorization": f"Bearer {TOKEN}"},
        )
        client.get(CONV, params={"limit": "\x1b"}, headers={"Authorization": "Bearer nope-x"})
    records = [json.loads(line) for line in served.logs]
    assert [(r["method"], r["path"], r["status"]) for r in records] == [
        ("POST", CONV, 200),
        ("GET", CONV, 401),
    ]
    assert records[1]["query"] == "limit=%1B"
    for record in records:
        assert set(record) == {"time", "client", "method", "path", "query", "status", "duration_ms"}
        assert record["client"].startswith("127.0.0.1:")
    text = "\n".join(served.logs)
    assert "ct_body_marker" not in text and TOKEN not in text and "nope-x" not in text


def test_an_unexpected_exception_is_logged_with_its_traceback_escaped(
    served: Served, http: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    def explode(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom \x1b[31mred")

    monkeypatch.setattr(served.server.backend.conversations, "retrieve", explode)
    response = http.get(f"{CONV}/conv_1")
    assert response.status_code == 500
    assert "boom" not in response.text
    log = "\n".join(served.logs)
    assert "RuntimeError: boom \\x1b[31mred" in log
    assert "\x1b" not in log


def test_a_literal_backslash_in_a_path_cannot_pass_for_an_escape_in_the_log(
    served: Served, http: httpx.Client
) -> None:
    # The request target given as bytes (httpcore's "target" extension): httpx 0.27 would
    # percent-encode the backslash itself, and the server must be shown it raw.
    http.get(CONV + "/conv_x", extensions={"target": (CONV + "/conv_\\x1b").encode()})
    assert served.logs[-1].split(" ")[3] == CONV + "/conv_\\\\x1b"


def test_a_forwarded_for_header_does_not_change_the_client_in_the_log(
    served: Served, http: httpx.Client
) -> None:
    http.get(CONV, headers={"X-Forwarded-For": "203.0.113.9"})
    assert served.logs[-1].split(" ")[1].startswith("127.0.0.1:")


@pytest.mark.parametrize(
    "moments", [[1.0, 1.5, 1.999, 2.0, 2.0004], [1764072000.123, 1764072000.9995, 1764072061.0]]
)
def test_a_log_line_s_time_is_the_moment_in_utc_to_the_millisecond(
    monkeypatch: pytest.MonkeyPatch, moments: list[float]
) -> None:
    for moment in moments:
        monkeypatch.setattr(time, "time", lambda moment=moment: moment)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(moment))
        assert access_log._now() == f"{stamp}.{int(moment * 1000) % 1000:03d}Z"
