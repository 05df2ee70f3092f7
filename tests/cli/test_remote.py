"""The command line against a remote service that answers differently where the interface is
silent (DESIGN 1.3): a real HTTP server on loopback sending milliseconds, extra fields, 204 on
delete, odd error bodies."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import ClassVar

import pytest

from tests import described
from tests.cli.conftest import Invoke
from tests.loopback import JSONService, on_loopback, running, url_of

TOKEN = "tok_remote_secret_0123456789"
MS = 1714564800123  # 2024-05-01 12:00:00.123 UTC in milliseconds

CONV = {
    **described.conversation("conv_ms", MS, contact_id="c_1", is_muted=True, last_active_at=MS),
    "topic": "billing",  # a field the interface does not know
}


class OddService(JSONService):
    """A service that follows the interface but differs where it is silent."""

    seen_auth: ClassVar[list[str]] = []

    def _send(
        self, status: int, body: object = None, content_type: str = "application/json"
    ) -> None:
        data = (
            b""
            if body is None
            else (body if isinstance(body, bytes) else json.dumps(body).encode())
        )
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _authorized(self) -> bool:
        header = self.headers.get("Authorization", "")
        self.seen_auth.append(header)
        if header != f"Bearer {TOKEN}":
            self._send(401, {"error": {"type": "authentication_error", "message": "Bad token."}})
            return False
        return True

    def do_GET(self) -> None:
        if not self._authorized():
            return
        path = self.path.split("?")[0]
        if path == "/v1/conversations":
            self._send(200, {"has_more": False, "data": [CONV]})
        elif path == "/v1/conversations/conv_ms":
            self._send(200, CONV)
        elif path == "/v1/conversations/conv_boom":
            self._send(503, {"error": {"type": "api_error", "message": "Overloaded."}})
        elif path == "/v1/risk-profiles":
            self._send(500, b"<html>Internal trouble</html>", "text/html")
        else:
            self._send(404, {"error": {"message": f"No such thing: {path.rsplit('/', 1)[-1]}"}})

    def do_DELETE(self) -> None:
        if not self._authorized():
            return
        if self.path == "/v1/conversations/conv_ms":
            self._send(204)
        elif self.path == "/v1/risk-profiles/rp_1":
            self._send(200, {"id": "rp_1", "deleted": True, "object": "risk_profile"})
        elif self.path == "/v1/risk-profiles/rp_odd":
            self._send(200, {"ok": True, "gone": "rp_odd"})
        elif self.path == "/v1/risk-profiles/rp_kept":
            self._send(200, {"id": "rp_kept", "deleted": False})
        else:
            self._send(404, {"error": "not here"})


@pytest.fixture
def remote(monkeypatch: pytest.MonkeyPatch, home: object) -> Iterator[str]:
    """The odd service on loopback; CONVRISK_BASE_URL/TOKEN point at it, no retries."""
    OddService.seen_auth = []
    with running(on_loopback(OddService)) as server:
        url = url_of(server)
        monkeypatch.setenv("CONVRISK_BASE_URL", url)
        monkeypatch.setenv("CONVRISK_TOKEN", TOKEN)
        monkeypatch.setenv("CONVRISK_MAX_RETRIES", "0")
        yield url


def test_milliseconds_show_as_the_right_utc_date_in_tables(remote: str, invoke: Invoke) -> None:
    header, row = invoke("conv", "list").ok().lines()
    cells = dict(zip(header.split("\t"), row.split("\t"), strict=True))
    assert cells["created_at"] == "2024-05-01 12:00:00Z"
    assert cells["last_active_at"] == "2024-05-01 12:00:00Z"
    assert cells["is_muted"] == "true"


def test_json_keeps_the_service_values_and_unknown_fields(remote: str, invoke: Invoke) -> None:
    assert invoke("conv", "list", "-o", "json").ok().json() == [CONV]
    assert invoke("conv", "get", "conv_ms", "-o", "jsonl").ok().jsonl() == [CONV]
    assert OddService.seen_auth[-1] == f"Bearer {TOKEN}"


def test_delete_prints_deleted_when_the_answer_says_so_or_has_no_body(
    remote: str, invoke: Invoke
) -> None:
    no_body = invoke("conv", "delete", "conv_ms", "--yes", "-o", "json").ok().json()
    assert no_body == {"id": "conv_ms", "deleted": True}
    with_extra = invoke("risk", "delete", "rp_1", "--yes", "-o", "json").ok().json()
    assert with_extra == {"id": "rp_1", "deleted": True}


@pytest.mark.parametrize(
    ("id", "said"),
    [("rp_kept", "does not say it was deleted (deleted: false)"), ("rp_odd", "deleted: absent")],
)
def test_a_2xx_delete_answer_that_does_not_say_deleted_is_an_error(
    remote: str, invoke: Invoke, id: str, said: str
) -> None:
    result = invoke("risk", "delete", id, "--yes", "-o", "jsonl")
    assert result.code == 1 and result.stdout == ""
    error = json.loads(result.stderr)["error"]
    assert said in error["message"] and error["status"] == 200 and error["id"] == id


def test_not_found_carries_the_http_status(remote: str, invoke: Invoke) -> None:
    plain = invoke("conv", "get", "conv_nope")
    assert plain.code == 3
    assert plain.stderr == "Error: No such thing: conv_nope (HTTP 404)\n"
    as_json = invoke("conv", "get", "conv_nope", "-o", "json")
    assert as_json.code == 3 and as_json.stdout == ""
    error = json.loads(as_json.stderr)["error"]
    assert error["status"] == 404 and error["id"] == "conv_nope"
    assert error["type"] == "not_found_error"


def test_a_server_error_page_is_exit_1_with_the_status(remote: str, invoke: Invoke) -> None:
    result = invoke("risk", "list")
    assert result.code == 1 and result.stdout == ""
    assert result.stderr.startswith("Error: ") and "500" in result.stderr
    assert result.stderr.count("\n") == 1


def test_a_wrong_token_is_exit_4_and_the_token_is_never_shown(
    remote: str, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONVRISK_TOKEN", "tok_wrong_but_secret_987654")
    for args in (("conv", "list"), ("--debug", "conv", "list", "-o", "json"), ("config", "show")):
        result = invoke(*args)
        assert "tok_wrong_but_secret_987654" not in result.stdout + result.stderr
        assert TOKEN not in result.stdout + result.stderr
    denied = invoke("conv", "list")
    assert denied.code == 4 and "401" in denied.stderr
    assert OddService.seen_auth[-1] == "Bearer tok_wrong_but_secret_987654"


def test_a_missing_token_warns_and_the_service_refuses(
    remote: str, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CONVRISK_TOKEN")
    result = invoke("conv", "list")
    assert result.code == 4
    assert "No token is set" in result.stderr


def test_an_unreachable_service_is_exit_5(
    home: object, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("CONVRISK_MAX_RETRIES", "0")
    monkeypatch.setenv("CONVRISK_TOKEN", TOKEN)
    result = invoke("--base-url", f"http://127.0.0.1:{port}", "conv", "get", "conv_1", "conv_2")
    assert result.code == 5
    # The loop stops at the first unreachable id: the next one would fail the same way. The
    # service is what failed, so no id is blamed.
    assert result.stderr.count("Error:") == 1 and "conv_" not in result.stderr
    as_json = invoke("--base-url", f"http://127.0.0.1:{port}", "conv", "list", "-o", "json")
    assert as_json.code == 5 and as_json.stdout == ""
    assert json.loads(as_json.stderr)["error"]["type"] == "connection_error"


def test_several_ids_exit_with_the_first_failures_code(remote: str, invoke: Invoke) -> None:
    first_broken = invoke("conv", "get", "conv_boom", "conv_ms", "conv_nope", "-o", "id")
    assert first_broken.code == 1
    assert first_broken.lines() == ["conv_ms"]
    assert len(first_broken.stderr.splitlines()) == 2
    first_missing = invoke("conv", "get", "conv_nope", "conv_boom", "conv_ms", "-o", "id")
    assert first_missing.code == 3
    assert first_missing.lines() == ["conv_ms"]
