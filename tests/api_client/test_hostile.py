"""A hostile remote never hangs, floods or misleads the client (real servers on 127.0.0.1)."""

from __future__ import annotations

import json
import shutil
import ssl
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.hostile_server import MIB, HostileServer
from convrisk.api_client.errors import (
    APIConnectionError,
    APITimeoutError,
    InvalidRequestError,
    ServiceError,
)
from convrisk.api_client.remote.http import HTTPBackend
from convrisk.local_backend.backend import LocalBackend
from convrisk.local_backend.serve.server import make_server
from tests.loopback import JSONService, on_loopback, running, url_of
from tests.through_httpx import ThroughHttpx

from .conftest import conversation

CAP = MIB
# Every call here is bounded by this much, so a hang fails the test instead of stalling the suite.
SAFETY_SECONDS = 30.0


def within(call: Callable[[], Any], seconds: float = SAFETY_SECONDS) -> Any:
    """The result of `call()`, or what it raised; fails the test if it is still running later."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"the call was still running after {seconds:g} s"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


@pytest.fixture
def hostile() -> Iterator[Callable[..., HostileServer]]:
    """Start a HostileServer of a kind: `hostile("trickle", pause=0.3)`; stopped after the test."""
    started: list[HostileServer] = []

    def start(kind: str, **options: Any) -> HostileServer:
        server = HostileServer(kind, max_seconds=60, **options).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.mark.e2e  # slow: waits out a timeout of a second or more
def test_a_service_trickling_its_headers_times_out_at_the_setting(
    hostile: Callable[..., HostileServer],
) -> None:
    server = hostile("trickle", pause=0.3)
    backend = HTTPBackend(server.url, "tok", timeout=1, max_retries=0)
    with backend, pytest.raises(APITimeoutError) as info:
        within(lambda: backend.conversations.list())
    assert "timeout 1 s" in str(info.value)
    assert "127.0.0.1" in str(info.value)
    assert server.requests == 1


@pytest.mark.e2e  # slow: waits out a timeout of a second or more
def test_trickled_headers_are_retried_like_any_timeout_then_fail(
    hostile: Callable[..., HostileServer],
) -> None:
    server = hostile("trickle", pause=0.3)
    waits: list[float] = []
    backend = HTTPBackend(
        server.url, "tok", timeout=0.6, max_retries=2, sleep=waits.append, random=lambda: 1.0
    )
    with backend, pytest.raises(APITimeoutError) as info:
        within(lambda: backend.risk_profiles.retrieve("rp_1"))
    assert server.requests == 3
    assert waits == [0.5, 1.0]
    assert "gave up after 3 attempts" in str(info.value)


@pytest.mark.e2e  # slow: about a second, or more (the quick loop leaves it out)
def test_a_gzip_bomb_stops_at_the_size_limit_and_is_not_retried(
    hostile: Callable[..., HostileServer],
) -> None:
    server = hostile("gzip-bomb", size=64 * MIB)
    assert server.wire_bytes < CAP // 4  # small on the wire, 64 times the limit once decoded
    backend = HTTPBackend(server.url, "tok", max_response_bytes=CAP, sleep=lambda s: None)
    with backend, pytest.raises(ServiceError) as info:
        within(lambda: backend.conversations.list())
    message = str(info.value)
    assert "1 MiB" in message
    assert "max_response_mb" in message
    assert "CONVRISK_MAX_RESPONSE_MB" in message
    assert server.requests == 1


def test_a_plain_body_over_the_limit_stops_at_the_limit(
    hostile: Callable[..., HostileServer],
) -> None:
    server = hostile("big", size=16 * MIB)
    backend = HTTPBackend(server.url, "tok", max_response_bytes=CAP, sleep=lambda s: None)
    with backend, pytest.raises(ServiceError, match="over the 1 MiB limit") as info:
        within(lambda: backend.conversations.list())
    assert "max_response_mb" in str(info.value)
    assert server.requests == 1


def test_a_declared_length_over_the_limit_fails_at_once_without_reading(
    hostile: Callable[..., HostileServer],
) -> None:
    # The server declares 10 GiB and then sends nothing: only refusing at the headers is quick
    # (waiting for the body would end in a timeout, a different error).
    server = hostile("huge-length", size=10 * 1024 * MIB)
    backend = HTTPBackend(
        server.url, "tok", timeout=20, max_response_bytes=CAP, sleep=lambda s: None
    )
    with backend, pytest.raises(ServiceError) as info:
        within(lambda: backend.conversations.retrieve("conv_1"))
    message = str(info.value)
    assert "declared 10737418240 bytes, not read" in message
    assert "1 MiB limit" in message
    assert server.requests == 1


def _page_of(size: int) -> bytes:
    """A JSON page of one conversation padded with spaces to exactly `size` bytes."""
    start = json.dumps({"has_more": False, "data": [conversation("conv_big")]}).encode()
    body = start[:-1] + b" " * (size - len(start)) + b"}"
    assert len(body) == size
    return body


@pytest.mark.parametrize("gzip_body", [False, True], ids=["plain", "gzip"])
def test_a_page_of_exactly_the_limit_is_read(
    hostile: Callable[..., HostileServer], gzip_body: bool
) -> None:
    server = hostile("page", body=_page_of(CAP), gzip_body=gzip_body)
    with HTTPBackend(server.url, "tok", max_response_bytes=CAP) as backend:
        first = within(lambda: backend.conversations.list())
        second = within(lambda: backend.conversations.list())
    assert [c["id"] for c in first["data"]] == ["conv_big"]
    assert second == first
    assert server.requests == 2


@pytest.mark.parametrize("gzip_body", [False, True], ids=["plain", "gzip"])
def test_a_page_one_byte_over_the_limit_is_refused(
    hostile: Callable[..., HostileServer], gzip_body: bool
) -> None:
    server = hostile("page", body=_page_of(CAP + 1), gzip_body=gzip_body)
    backend = HTTPBackend(server.url, "tok", max_response_bytes=CAP)
    with backend, pytest.raises(ServiceError, match="over the 1 MiB limit"):
        within(lambda: backend.conversations.list())
    assert server.requests == 1


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "1"])
def test_a_bad_size_limit_is_refused_before_any_request(value: object) -> None:
    with pytest.raises(InvalidRequestError, match="max_response_bytes"):
        HTTPBackend("http://127.0.0.1:9", "tok", max_response_bytes=value)  # type: ignore[arg-type]


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[str]:
    """A real `convrisk serve` (in-process) on a loopback port; its URL."""
    local = LocalBackend(tmp_path / "serve.db")
    server = make_server(local, token="serve-tok")
    try:
        with server.running():
            yield server.url
    finally:
        local.close()


@pytest.mark.parametrize("suffix", ["/v1", "/v1/", "/"])
def test_a_base_url_ending_in_v1_is_the_same_service(serve: str, suffix: str) -> None:
    with HTTPBackend(serve + suffix, "serve-tok", max_retries=0) as backend:
        made = backend.conversations.create({"contact_id": "ct_v1"})
        page = backend.conversations.list()
        assert backend.conversations.retrieve(made["id"]) == made
    assert [c["id"] for c in page["data"]] == [made["id"]]


def test_any_other_path_prefix_is_kept_before_v1() -> None:
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        return httpx.Response(200, json={"data": [], "has_more": False})

    for base in ("http://svc.test/api", "http://svc.test/api/v1", "http://svc.test/api/v1/"):
        mock = ThroughHttpx(httpx.MockTransport(answer))
        with HTTPBackend(base, "tok", transport=mock, allow_insecure_http=True) as backend:
            backend.conversations.list()
    assert seen == ["/api/v1/conversations"] * 3


def test_https_against_a_plain_http_port_says_to_try_http(serve: str) -> None:
    url = serve.replace("http://", "https://")
    backend = HTTPBackend(url, "serve-tok", max_retries=0)
    with backend, pytest.raises(APIConnectionError) as info:
        within(lambda: backend.conversations.list())
    message = str(info.value)
    assert "plain HTTP" in message
    assert "http://" in message
    assert not isinstance(info.value, APITimeoutError)


@pytest.fixture
def no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """An environment with no proxy settings of its own."""
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    return monkeypatch


def test_the_proxy_set_in_the_environment_is_used(
    hostile: Callable[..., HostileServer], no_proxy_env: pytest.MonkeyPatch
) -> None:
    proxy = hostile("page", body=_page_of(400))
    no_proxy_env.setenv("HTTP_PROXY", proxy.url)
    # The proxy is on loopback, not svc.test: the token would go on over plain http.
    with HTTPBackend("http://svc.test:8080", "tok", allow_insecure_http=True) as backend:
        page = within(lambda: backend.conversations.list(limit=5))
    assert [c["id"] for c in page["data"]] == ["conv_big"]
    assert proxy.request_lines == ["GET http://svc.test:8080/v1/conversations?limit=5 HTTP/1.1"]


def test_no_proxy_sends_straight_to_the_service(
    hostile: Callable[..., HostileServer], no_proxy_env: pytest.MonkeyPatch
) -> None:
    proxy = hostile("page", body=_page_of(400))
    service = hostile("page", body=_page_of(500))
    no_proxy_env.setenv("HTTP_PROXY", proxy.url)
    no_proxy_env.setenv("NO_PROXY", "127.0.0.1")
    with HTTPBackend(service.url, "tok") as backend:
        within(lambda: backend.conversations.list(limit=5))
    assert proxy.requests == 0
    assert service.request_lines == ["GET /v1/conversations?limit=5 HTTP/1.1"]


@pytest.mark.e2e  # slow: waits out a timeout of a second or more
def test_a_proxy_trickling_its_headers_times_out_too(
    hostile: Callable[..., HostileServer], no_proxy_env: pytest.MonkeyPatch
) -> None:
    proxy = hostile("trickle", pause=0.3)
    no_proxy_env.setenv("HTTP_PROXY", proxy.url)
    backend = HTTPBackend(
        "http://svc.test:8080", "tok", timeout=1, max_retries=0, allow_insecure_http=True
    )
    with backend, pytest.raises(APITimeoutError, match="timeout 1 s"):
        within(lambda: backend.conversations.list())
    assert proxy.requests == 1


def test_a_proxy_convrisk_cannot_use_is_refused_before_any_request(
    no_proxy_env: pytest.MonkeyPatch,
) -> None:
    no_proxy_env.setenv("ALL_PROXY", "socks5://user:secret@127.0.0.1:1080")
    with pytest.raises(InvalidRequestError, match="not an http:// or https:// proxy") as info:
        HTTPBackend("http://127.0.0.1:9", "tok")
    assert info.value.param == "proxy"
    assert "secret" not in str(info.value)


@pytest.fixture
def tls_service(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A loopback https service with a fresh self-signed certificate; its URL and that cert."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True, timeout=30,
    )  # fmt: skip
    body = _page_of(400)

    class Handler(JSONService):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self.send_json(200, body)

    server = on_loopback(Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    with running(server):
        yield url_of(server, "https"), cert


def test_https_is_spoken_and_verified_against_the_trusted_certificates(
    tls_service: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, cert = tls_service
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    with HTTPBackend(url, "tok", max_retries=0) as backend:
        page = within(lambda: backend.conversations.list())
    assert [c["id"] for c in page["data"]] == ["conv_big"]


def test_https_to_an_untrusted_certificate_is_refused(
    tls_service: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _ = tls_service
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    backend = HTTPBackend(url, "tok", max_retries=0)
    with backend, pytest.raises(APIConnectionError, match="CERTIFICATE_VERIFY_FAILED"):
        within(lambda: backend.conversations.list())


@pytest.mark.e2e  # slow: waits out a timeout of a second or more
def test_a_reused_connection_trickling_its_headers_times_out_too(
    hostile: Callable[..., HostileServer],
) -> None:
    server = hostile("page-then-trickle", body=_page_of(400), pause=0.3)
    with HTTPBackend(server.url, "tok", timeout=1, max_retries=0) as backend:
        first = within(lambda: backend.conversations.list())
        with pytest.raises(APITimeoutError, match="timeout 1 s"):
            within(lambda: backend.conversations.list())
    assert [c["id"] for c in first["data"]] == ["conv_big"]
    # Both went over one keep-alive connection: the second request's turn was the trickle.
    assert server.requests == 2
