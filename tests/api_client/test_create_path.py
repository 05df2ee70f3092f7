"""Creates over the default transport (the deadline transport over httpcore) against a real
loopback server: the same request on the wire as httpx sends, and the same rules for answers
(retries, the deadline, the size limit, encodings) as every other request."""

from __future__ import annotations

import gzip
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from convrisk.api_client.errors import APITimeoutError, InvalidRequestError, ServiceError
from convrisk.api_client.record_types import RiskProfileCreateParams
from convrisk.api_client.records import Created
from convrisk.api_client.remote.http import HTTPBackend
from tests.through_httpx import ThroughHttpx

from .conftest import risk_profile

PARAMS: RiskProfileCreateParams = {
    "customer_id": "cus_1",
    "profile_type": "moderate",
    "score": 55,
    "details": {"horizon": "10y"},
}
ANSWER = json.dumps(risk_profile("rp_made")).encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.server.seen.append((self.path, dict(self.headers.items()), body))
        script = self.server.script
        step = script.pop(0) if script else "ok"
        if step == "drop":
            self.close_connection = True
            return
        status, payload, extra = 200, ANSWER, dict[str, str]()
        if step == "503":
            status, payload = 503, b'{"error":{"type":"api_error","message":"busy"}}'
        elif step == "400":
            status = 400
            payload = (
                b'{"error":{"type":"invalid_request_error","message":"bad score","param":"score"}}'
            )
        elif step == "replayed":
            extra = {"Idempotent-Replayed": "true"}
        elif step == "replayed-now":  # the stored answer of an object created a moment ago
            made = risk_profile("rp_made", created_at=int(time.time()))
            payload, extra = json.dumps(made).encode(), {"Idempotent-Replayed": "true"}
        elif step == "gzip":
            payload, extra = gzip.compress(ANSWER), {"Content-Encoding": "gzip"}
        elif step == "big":
            payload = b'{"id":"rp_made","pad":"' + b"x" * 4096 + b'"}'
        if step == "chunked" or step == "big-chunked":
            if step == "big-chunked":
                payload = b'{"id":"rp_made","pad":"' + b"x" * 4096 + b'"}'
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for start in range(0, len(payload), 100):
                piece = payload[start : start + 100]
                self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
            return
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in extra.items():
            self.send_header(name, value)
        self.end_headers()
        if step == "trickle":
            for start in range(len(payload)):
                if self.server.stopping.wait(0.2):
                    return
                try:
                    self.wfile.write(payload[start : start + 1])
                    self.wfile.flush()
                except OSError:
                    return
            return
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.seen: list[tuple[str, dict[str, str], bytes]] = []
        self.script: list[str] = []
        self.stopping = threading.Event()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"


@pytest.fixture
def server() -> Iterator[_Server]:
    """A loopback service answering POSTs as its `script` says (one step per request)."""
    srv = _Server()
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    yield srv
    srv.stopping.set()
    srv.shutdown()
    srv.server_close()
    thread.join(timeout=10)


def _quick(**options: Any) -> dict[str, Any]:
    """Options that keep retries fast."""
    return {"sleep": lambda _: None, **options}


@pytest.mark.parametrize("base_path", ["", "/prefix", "/prefix/v1/"])
def test_a_create_sends_the_same_request_as_httpx_would(server: _Server, base_path: str) -> None:
    direct = HTTPBackend(server.url + base_path, "tok-direct")
    through_httpx = HTTPBackend(
        server.url + base_path, "tok-direct", transport=ThroughHttpx(httpx.HTTPTransport())
    )
    try:
        made = direct.risk_profiles.create(PARAMS, idempotency_key="key-1")
        also = through_httpx.risk_profiles.create(PARAMS, idempotency_key="key-1")
    finally:
        direct.close()
        through_httpx.close()
    assert made == also == risk_profile("rp_made")
    (path, headers, body), (other_path, other_headers, other_body) = server.seen
    expected_path = "/prefix/v1/risk-profiles" if base_path else "/v1/risk-profiles"
    assert path == other_path == expected_path
    assert body == other_body
    assert json.loads(body) == PARAMS
    assert headers["Idempotency-Key"] == "key-1"
    assert headers["Authorization"] == "Bearer tok-direct"
    assert headers["Content-Type"] == "application/json"
    assert headers["Content-Length"] == str(len(body))
    assert {k.lower(): v for k, v in headers.items()} == {
        k.lower(): v for k, v in other_headers.items()
    }


def test_a_create_carries_the_headers_httpx_client_would_send(server: _Server) -> None:
    with HTTPBackend(server.url, "tok-direct") as backend:
        backend.risk_profiles.create(PARAMS, idempotency_key="key-1")
    (_, sent, body) = server.seen[0]
    ours = {"User-Agent", "Accept", "Authorization", "Content-Type", "Idempotency-Key"}
    with httpx.Client(base_url=server.url) as client:
        client.post(
            "/v1/risk-profiles",
            content=body,
            headers={name: sent[name] for name in ours},
        )
    (_, expected, _) = server.seen[1]
    assert {k.lower(): v for k, v in sent.items()} == {k.lower(): v for k, v in expected.items()}


def test_creates_reuse_one_connection(server: _Server) -> None:
    backend = HTTPBackend(server.url, "tok")
    peers: set[tuple[str, int]] = set()
    original = _Handler.do_POST

    def recording(handler: _Handler) -> None:
        peers.add(handler.client_address)
        original(handler)

    _Handler.do_POST = recording  # type: ignore[method-assign,assignment]
    try:
        for number in range(5):
            backend.risk_profiles.create(PARAMS, idempotency_key=f"key-{number}")
    finally:
        _Handler.do_POST = original  # type: ignore[method-assign]
        backend.close()
    assert len(server.seen) == 5
    assert len(peers) == 1


@pytest.mark.parametrize("step", ["gzip", "chunked"])
def test_a_compressed_or_chunked_answer_to_a_create_is_read_whole(
    server: _Server, step: str
) -> None:
    server.script = [step]
    with HTTPBackend(server.url, "tok") as backend:
        assert backend.risk_profiles.create(PARAMS) == risk_profile("rp_made")


def test_a_create_answered_503_or_dropped_is_retried_with_the_same_key(server: _Server) -> None:
    server.script = ["503", "drop", "ok"]
    with HTTPBackend(server.url, "tok", **_quick(max_retries=2)) as backend:
        assert backend.risk_profiles.create(PARAMS)["id"] == "rp_made"
    keys = [headers["Idempotency-Key"] for _, headers, _ in server.seen]
    assert len(keys) == 3
    assert len(set(keys)) == 1


def test_a_refused_create_is_the_service_error_with_its_param(server: _Server) -> None:
    server.script = ["400"]
    with (
        HTTPBackend(server.url, "tok") as backend,
        pytest.raises(InvalidRequestError, match="bad score") as caught,
    ):
        backend.risk_profiles.create(PARAMS)
    assert caught.value.param == "score"
    assert caught.value.status == 400


@pytest.mark.parametrize("step", ["big", "big-chunked"])
def test_a_create_answer_over_the_size_limit_is_refused(server: _Server, step: str) -> None:
    server.script = [step]
    with (
        HTTPBackend(server.url, "tok", max_response_bytes=1024) as backend,
        pytest.raises(ServiceError, match="limit on a response") as caught,
    ):
        backend.risk_profiles.create(PARAMS)
    assert caught.value.code == "response_too_large"


@pytest.mark.e2e  # slow: waits out a timeout of a second or more
def test_a_create_answer_trickling_past_the_timeout_times_out(server: _Server) -> None:
    server.script = ["trickle"]
    with (
        HTTPBackend(server.url, "tok", timeout=1, max_retries=0) as backend,
        pytest.raises(APITimeoutError, match="the whole answer took longer"),
    ):
        backend.risk_profiles.create(PARAMS)


def test_create_many_over_the_default_transport_answers_in_order(server: _Server) -> None:
    server.script = ["ok", "400", "ok"]
    with HTTPBackend(server.url, "tok") as backend:
        results = backend.risk_profiles.create_many(
            [(PARAMS, f"key-{number}") for number in range(3)], stop_on_error=True
        )
    assert isinstance(results[0], Created) and isinstance(results[0].record, dict)
    assert isinstance(results[1], InvalidRequestError)
    assert len(results) == 2


@pytest.mark.parametrize(
    ("script", "replayed"),
    [
        (["ok"], False),
        (["replayed"], True),
        (["replayed-now"], True),  # the first attempt: the service's word stands
        # The first attempt's answer was lost, so the replay that answers the retry may be of
        # this call's own create: the object's created_at, against the service's Date, tells.
        (["drop", "replayed-now"], False),
        (["503", "replayed-now"], False),  # likewise after a 5xx, which may have been done
        (["drop", "replayed"], True),  # created long before this call: an earlier call's
    ],
)
def test_a_create_is_replayed_only_when_the_service_says_so_of_an_earlier_call(
    server: _Server, script: list[str], replayed: bool
) -> None:
    server.script = list(script)
    with HTTPBackend(server.url, "tok", **_quick()) as backend:
        (result,) = backend.risk_profiles.create_many([(PARAMS, "key-1")])
    assert isinstance(result, Created) and result.record["id"] == "rp_made"
    assert result.replayed is replayed
