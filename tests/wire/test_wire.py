"""The wire rules of `convrisk serve` (DESIGN section 1), checked with raw HTTP requests."""

from __future__ import annotations

import http.client
import json
import re
import socket
import threading
import time
from typing import Any

import httpx
import pytest

from convrisk.api_client.resources import CONVERSATIONS

from .conftest import TOKEN, Served, ServeWith

CONV = "/v1/conversations"
RISK = "/v1/risk-profiles"
RISK_BODY = {"customer_id": "cus_1", "profile_type": "moderate", "score": 55, "details": {}}


def assert_error(
    response: httpx.Response, status: int, type_: str, param: str | None = None
) -> str:
    """The response is a JSON error of this status, type and param; returns its message."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    assert int(response.headers["content-length"]) == len(response.content)
    body = response.json()
    assert set(body) == {"error"}
    error = body["error"]
    assert set(error) == {"type", "code", "message", "param"}
    assert error["type"] == type_
    assert error["param"] == param
    assert isinstance(error["code"], str) and error["code"]
    assert isinstance(error["message"], str) and error["message"]
    assert "Traceback" not in error["message"]
    return str(error["message"])


def raw_exchange(served: Served, request: bytes) -> tuple[http.client.HTTPResponse, bytes]:
    """Send these exact bytes on a new connection; the parsed answer and its body."""
    with socket.create_connection(("127.0.0.1", served.server.server_port), timeout=10) as sock:
        sock.sendall(request)
        response = http.client.HTTPResponse(sock)
        response.begin()
        return response, response.read()


def new_conversation(http: httpx.Client, **body: Any) -> dict[str, Any]:
    """Create a conversation (a contact one unless told) and return its JSON."""
    response = http.post(CONV, json=body or {"contact_id": "ct_1"})
    assert response.status_code == 200, response.text
    created: dict[str, Any] = response.json()
    return created


# -- authentication ---------------------------------------------------------------------------


def test_missing_token_is_401_with_bearer_challenge(served: Served, anon: httpx.Client) -> None:
    response = anon.get(CONV)
    assert_error(response, 401, "authentication_error")
    assert response.headers["www-authenticate"].startswith("Bearer")


@pytest.mark.parametrize(
    "header",
    [f"Bearer {TOKEN}x", "Bearer", f"Basic {TOKEN}", TOKEN, f"Bearer {TOKEN[:-1]}", "Bearer é"],
)
def test_wrong_token_is_401(served: Served, anon: httpx.Client, header: str) -> None:
    response = anon.get(CONV, headers={b"Authorization": header.encode()})
    assert_error(response, 401, "authentication_error")
    assert response.headers["www-authenticate"].startswith("Bearer")


def test_auth_comes_before_routing_and_body_checks(served: Served, anon: httpx.Client) -> None:
    assert_error(anon.get("/v1/nothing-here"), 401, "authentication_error")
    response = anon.post(CONV, content=b"not json", headers={"Content-Type": "x/y"})
    assert_error(response, 401, "authentication_error")


def test_right_token_with_any_scheme_case_is_accepted(served: Served, anon: httpx.Client) -> None:
    response = anon.get(CONV, headers={"Authorization": f"bearer {TOKEN}"})
    assert response.status_code == 200


def test_unauthenticated_create_makes_nothing(
    served: Served, anon: httpx.Client, http: httpx.Client
) -> None:
    response = anon.post(CONV, json={"contact_id": "ct_x"})
    assert response.status_code == 401
    assert http.get(CONV).json()["data"] == []


# -- routes and methods -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/v1",
        "/v1/",
        "/v2/conversations",
        "/v1/conversation",
        "/v1/conversations/a/b",
        "/v1/risk_profiles",
        "/v1/conversations/",
    ],
)
def test_unknown_route_is_404_json(http: httpx.Client, path: str) -> None:
    assert_error(http.get(path), 404, "not_found_error")


@pytest.mark.parametrize(
    "path", [CONV + "/conv_00000000000000000000000000", RISK + "/rp_" + "0" * 26]
)
def test_unknown_id_is_404_json_for_every_verb(http: httpx.Client, path: str) -> None:
    assert_error(http.get(path), 404, "not_found_error", "id")
    assert_error(http.put(path, json={}), 404, "not_found_error", "id")
    assert_error(http.delete(path), 404, "not_found_error", "id")


@pytest.mark.parametrize("path", [CONV + "/conv_nope", RISK + "/rp_nope", RISK + "/conv_x"])
def test_an_id_serve_never_mints_is_400_json_naming_it_for_every_verb(
    http: httpx.Client, path: str
) -> None:
    for answer in (http.get(path), http.put(path, json={}), http.delete(path)):
        assert "is not a" in assert_error(answer, 400, "invalid_request_error", "id")


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("DELETE", CONV, "GET, POST"),
        ("PUT", RISK, "GET, POST"),
        ("PATCH", CONV, "GET, POST"),
        ("POST", CONV + "/conv_x", "GET, PUT, DELETE"),
        ("PATCH", RISK + "/rp_x", "GET, PUT, DELETE"),
        ("OPTIONS", RISK + "/rp_x", "GET, PUT, DELETE"),
    ],
)
def test_wrong_method_is_405_with_allow(
    http: httpx.Client, method: str, path: str, allow: str
) -> None:
    response = http.request(method, path)
    assert_error(response, 405, "invalid_request_error")
    assert response.headers["allow"] == allow


def test_head_is_405_without_a_body(http: httpx.Client) -> None:
    response = http.head(CONV)
    assert response.status_code == 405
    assert response.headers["allow"] == "GET, POST"
    assert response.content == b""
    # The connection stays usable: no stray body bytes were written after the head.
    assert http.get(CONV).status_code == 200


def test_unknown_method_is_405_with_allow_and_garbage_a_json_400(served: Served) -> None:
    auth = f"Authorization: Bearer {TOKEN}\r\n"
    response, body = raw_exchange(
        served, f"BREW /v1/conversations HTTP/1.1\r\nHost: x\r\n{auth}\r\n".encode()
    )
    assert response.status == 405
    assert response.getheader("Allow") == "GET, POST"
    assert response.getheader("Content-Type") == "application/json"
    assert json.loads(body)["error"]["type"] == "invalid_request_error"
    response, body = raw_exchange(served, b"nonsense\r\n\r\n")
    assert response.status == 400
    assert json.loads(body)["error"]["type"] == "invalid_request_error"


# -- request bodies ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "application/xml"]
)
def test_body_of_another_content_type_is_415(http: httpx.Client, content_type: str) -> None:
    response = http.post(
        CONV, content=b'{"contact_id": "ct_1"}', headers={"Content-Type": content_type}
    )
    assert_error(response, 415, "invalid_request_error")
    assert http.get(CONV).json()["data"] == []


def test_body_without_content_type_is_415(http: httpx.Client) -> None:
    response = http.post(CONV, content=b'{"contact_id": "ct_1"}')
    assert_error(response, 415, "invalid_request_error")


def test_json_with_utf8_charset_is_accepted(http: httpx.Client) -> None:
    body = json.dumps({"contact_id": "ct_é"}).encode()
    response = http.post(
        CONV, content=body, headers={"Content-Type": "application/json; charset=utf-8"}
    )
    assert response.status_code == 200
    assert response.json()["contact_id"] == "ct_é"


def test_put_on_a_form_body_is_415(http: httpx.Client) -> None:
    conv = new_conversation(http)
    response = http.put(f"{CONV}/{conv['id']}", data={"is_muted": "true"})
    assert_error(response, 415, "invalid_request_error")
    assert http.get(f"{CONV}/{conv['id']}").json()["is_muted"] is False


def test_body_over_one_mib_is_413_and_nothing_is_created(http: httpx.Client) -> None:
    details = {"blob": "x" * (1024 * 1024)}
    response = http.post(RISK, json={**RISK_BODY, "details": details})
    assert_error(response, 413, "invalid_request_error")
    assert http.get(RISK).json()["data"] == []


def test_body_of_exactly_one_mib_is_read(http: httpx.Client) -> None:
    head = json.dumps({**RISK_BODY, "details": {"blob": ""}}).encode()
    padding = 1024 * 1024 - len(head)
    body = json.dumps({**RISK_BODY, "details": {"blob": "y" * padding}}).encode()
    assert len(body) == 1024 * 1024
    response = http.post(RISK, content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 200, response.text
    assert len(response.json()["details"]["blob"]) == padding


def test_413_is_answered_before_the_body_when_the_client_expects_100(served: Served) -> None:
    request = (
        f"POST {CONV} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
        "Content-Type: application/json\r\nContent-Length: 50000000\r\n"
        "Expect: 100-continue\r\n\r\n"
    ).encode()
    response, body = raw_exchange(served, request)
    assert response.status == 413
    assert json.loads(body)["error"]["code"] == "body_too_large"


@pytest.mark.parametrize(
    "body",
    [
        b"{not json",
        b"",
        b'{"contact_id": "ct_1",}',
        b"\xff\xfe{}",
        b'{"contact_id": NaN}',
        b"[" * 100_000 + b"]" * 100_000,
    ],
)
def test_body_that_is_not_json_is_400(http: httpx.Client, body: bytes) -> None:
    response = http.post(CONV, content=body, headers={"Content-Type": "application/json"})
    message = assert_error(response, 400, "invalid_request_error")
    assert "JSON" in message


@pytest.mark.parametrize("body", [b"[]", b'"ct_1"', b"42", b"null", b'[{"contact_id": "ct_1"}]'])
def test_body_that_is_not_a_json_object_is_400(http: httpx.Client, body: bytes) -> None:
    response = http.post(CONV, content=body, headers={"Content-Type": "application/json"})
    message = assert_error(response, 400, "invalid_request_error")
    assert "object" in message
    assert http.get(CONV).json()["data"] == []


def test_invalid_content_length_is_400(served: Served) -> None:
    request = (
        f"POST {CONV} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
        "Content-Type: application/json\r\nContent-Length: twelve\r\n\r\n{}"
    ).encode()
    response, body = raw_exchange(served, request)
    assert response.status == 400
    assert "Content-Length" in json.loads(body)["error"]["message"]


def test_chunked_body_is_refused_with_411(http: httpx.Client) -> None:
    def chunks() -> Any:
        yield b'{"contact_id": "ct_1"}'

    response = http.post(CONV, content=chunks(), headers={"Content-Type": "application/json"})
    assert_error(response, 411, "invalid_request_error")
    assert http.get(CONV).json()["data"] == []


def test_bare_put_without_body_changes_nothing(http: httpx.Client) -> None:
    conv = new_conversation(http)
    response = http.put(f"{CONV}/{conv['id']}")
    assert response.status_code == 200
    assert response.json() == conv


def test_bare_post_without_body_names_the_missing_party(http: httpx.Client) -> None:
    assert_error(http.post(CONV), 400, "invalid_request_error", "contact_id")


def test_input_rules_reach_the_wire_with_their_param(http: httpx.Client) -> None:
    response = http.post(CONV, json={"contact_id": "ct_1", "colour": "red"})
    assert_error(response, 400, "invalid_request_error", "colour")
    response = http.post(RISK, json={**RISK_BODY, "score": True})
    assert_error(response, 400, "invalid_request_error", "score")
    rp = http.post(RISK, json=RISK_BODY).json()
    response = http.put(f"{RISK}/{rp['id']}", json={"customer_id": "cus_2"})
    assert_error(response, 400, "invalid_request_error", "customer_id")


# -- query parsing ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "limit", ["0", "101", "-1", "abc", "1.5", "", "1e2", "\uff19", "99999999999"]
)
def test_bad_limit_is_400_naming_limit(http: httpx.Client, limit: str) -> None:
    assert_error(http.get(CONV, params={"limit": limit}), 400, "invalid_request_error", "limit")


def test_limit_bounds_and_default(http: httpx.Client) -> None:
    for n in range(12):
        new_conversation(http, contact_id=f"ct_{n}")
    assert len(http.get(CONV).json()["data"]) == 10
    assert len(http.get(CONV, params={"limit": "1"}).json()["data"]) == 1
    page = http.get(CONV, params={"limit": "100"}).json()
    assert len(page["data"]) == 12
    assert page["has_more"] is False


@pytest.mark.parametrize(
    ("value", "muted"), [("true", True), ("1", True), ("false", False), ("0", False)]
)
def test_boolean_filter_values(http: httpx.Client, value: str, muted: bool) -> None:
    quiet = new_conversation(http, contact_id="ct_quiet")
    loud = new_conversation(http, contact_id="ct_loud")
    assert http.put(f"{CONV}/{quiet['id']}", json={"is_muted": True}).status_code == 200
    ids = [c["id"] for c in http.get(CONV, params={"muted": value}).json()["data"]]
    assert ids == [quiet["id"] if muted else loud["id"]]


@pytest.mark.parametrize(
    "param", [f.name for f in CONVERSATIONS.interface_filters() if f.type == "boolean"]
)
@pytest.mark.parametrize("value", ["yes", "", "2", "truee", "null"])
def test_bad_boolean_filter_is_400_naming_it(http: httpx.Client, param: str, value: str) -> None:
    assert_error(http.get(CONV, params={param: value}), 400, "invalid_request_error", param)


@pytest.mark.parametrize(
    ("path", "param"),
    [(CONV, "colour"), (RISK, "muted"), (CONV, "customer_id"), (RISK, "group_id"), (CONV, "Limit")],
)
def test_unknown_query_parameter_is_400_naming_it(
    http: httpx.Client, path: str, param: str
) -> None:
    message = assert_error(http.get(path, params={param: "x"}), 400, "invalid_request_error", param)
    assert param in message


def test_query_parameter_given_twice_is_400(http: httpx.Client) -> None:
    response = http.get(CONV + "?limit=5&limit=6")
    assert_error(response, 400, "invalid_request_error", "limit")


def test_query_on_a_single_object_route_is_400(http: httpx.Client) -> None:
    conv = new_conversation(http)
    response = http.get(f"{CONV}/{conv['id']}", params={"expand": "all"})
    assert_error(response, 400, "invalid_request_error", "expand")


def test_string_filters_and_cursors_travel_through_the_query(http: httpx.Client) -> None:
    a = http.post(RISK, json={**RISK_BODY, "customer_id": "cus a&b"}).json()
    http.post(RISK, json={**RISK_BODY, "customer_id": "cus_other"})
    data = http.get(RISK, params={"customer_id": "cus a&b"}).json()["data"]
    assert [r["id"] for r in data] == [a["id"]]
    data = http.get(RISK, params={"customer_id": "cus a&b", "profile_type": "aggressive"}).json()
    assert data["data"] == []
    newer = http.get(RISK, params={"limit": "1"}).json()["data"][0]
    after = http.get(RISK, params={"starting_after": newer["id"]}).json()["data"]
    assert [r["id"] for r in after] == [a["id"]]
    before = http.get(RISK, params={"ending_before": a["id"]}).json()["data"]
    assert [r["id"] for r in before] == [newer["id"]]


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ({"starting_after": "rp_1"}, "starting_after"),
        ({"ending_before": ""}, "ending_before"),
        ({"group_id": ""}, "group_id"),
    ],
)
def test_bad_cursor_or_filter_value_is_400_naming_it(
    http: httpx.Client, query: dict[str, str], param: str
) -> None:
    assert_error(http.get(CONV, params=query), 400, "invalid_request_error", param)


# -- answers ----------------------------------------------------------------------------------


def test_responses_are_json_with_content_length(http: httpx.Client) -> None:
    conv = new_conversation(http)
    for response in (http.get(CONV), http.get(f"{CONV}/{conv['id']}")):
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/json"
        assert int(response.headers["content-length"]) == len(response.content)
    assert set(http.get(CONV).json()) == {"has_more", "data"}


def test_delete_answers_200_with_the_id_then_404(http: httpx.Client) -> None:
    conv = new_conversation(http)
    response = http.delete(f"{CONV}/{conv['id']}")
    assert response.status_code == 200
    assert response.json() == {"id": conv["id"], "deleted": True}
    assert_error(http.get(f"{CONV}/{conv['id']}"), 404, "not_found_error", "id")
    assert_error(http.delete(f"{CONV}/{conv['id']}"), 404, "not_found_error", "id")


def test_percent_encoded_id_is_decoded(http: httpx.Client) -> None:
    conv = new_conversation(http)
    encoded = "".join(f"%{b:02X}" for b in conv["id"].encode())
    assert http.get(f"{CONV}/{encoded}").json() == conv


# -- idempotency ------------------------------------------------------------------------------


def test_same_key_same_body_replays_the_answer_without_a_duplicate(http: httpx.Client) -> None:
    headers = {"Idempotency-Key": "key-1"}
    first = http.post(RISK, json=RISK_BODY, headers=headers)
    second = http.post(RISK, json=RISK_BODY, headers=headers)
    assert first.status_code == second.status_code == 200
    assert second.json() == first.json()
    assert len(http.get(RISK).json()["data"]) == 1


def test_same_key_other_body_is_400_and_creates_nothing(http: httpx.Client) -> None:
    headers = {"Idempotency-Key": "key-2"}
    assert http.post(CONV, json={"contact_id": "ct_1"}, headers=headers).status_code == 200
    response = http.post(CONV, json={"contact_id": "ct_2"}, headers=headers)
    assert_error(response, 400, "invalid_request_error", "idempotency_key")
    assert [c["contact_id"] for c in http.get(CONV).json()["data"]] == ["ct_1"]


def test_other_keys_or_no_key_create_new_objects(http: httpx.Client) -> None:
    for headers in ({"Idempotency-Key": "a"}, {"Idempotency-Key": "b"}, {}, {}):
        assert http.post(CONV, json={"contact_id": "ct_1"}, headers=headers).status_code == 200
    assert len(http.get(CONV).json()["data"]) == 4


# -- connections, threads, logs, failures -----------------------------------------------------


def test_one_connection_is_kept_alive_across_requests_and_errors(served: Served) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", served.server.server_port, timeout=10)
    auth = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    ports = set()
    try:
        for method, path, body, status in [
            ("POST", CONV, b'{"contact_id": "ct_1"}', 200),
            ("GET", CONV + "?limit=1", None, 200),
            ("GET", "/v1/none", None, 404),
            ("POST", CONV, b"{bad", 400),
            ("POST", CONV, b'{"contact_id": "ct_1"}', 200),
            ("GET", CONV + "?limit=abc", None, 400),
            ("DELETE", CONV, b'{"x": 1}', 405),
            ("GET", CONV, None, 200),
        ]:
            conn.request(method, path, body=body, headers=auth)
            response = conn.getresponse()
            response.read()
            assert response.status == status
            assert response.getheader("Connection") != "close"
            assert conn.sock is not None
            ports.add(conn.sock.getsockname()[1])
    finally:
        conn.close()
    assert len(ports) == 1


def test_a_stalled_client_does_not_stall_others(served: Served, http: httpx.Client) -> None:
    with socket.create_connection(("127.0.0.1", served.server.server_port), timeout=10) as slow:
        slow.sendall(
            f"POST {CONV} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
            "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{".encode()
        )
        # The first client is mid-body; others are served meanwhile.
        assert http.post(CONV, json={"contact_id": "ct_fast"}).status_code == 200
        assert len(http.get(CONV).json()["data"]) == 1


def test_access_log_has_time_client_request_status_and_never_token_or_body(
    served: Served, anon: httpx.Client, http: httpx.Client
) -> None:
    http.post(CONV, json={"contact_id": "ct_secret_marker"})
    http.get(CONV, params={"limit": "abc"})
    anon.get(CONV, headers={"Authorization": "Bearer guessed-token"})
    lines = list(served.logs)
    assert len(lines) == 3
    stamp = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z 127\.0\.0\.1:\d+"
    assert re.fullmatch(stamp + f" POST {CONV} 200 [0-9.]+ms", lines[0]), lines[0]
    assert re.fullmatch(stamp + rf" GET {CONV}\?limit=abc 400 [0-9.]+ms", lines[1]), lines[1]
    assert re.fullmatch(stamp + f" GET {CONV} 401 [0-9.]+ms", lines[2]), lines[2]
    text = "\n".join(lines)
    for secret in (TOKEN, "guessed-token", "ct_secret_marker"):
        assert secret not in text


def test_server_close_ends_keep_alive_connections(serve_with: ServeWith) -> None:
    served = serve_with()  # a server of its own: the test stops it
    conn = http.client.HTTPConnection("127.0.0.1", served.server.server_port, timeout=10)
    conn.request("GET", CONV, headers={"Authorization": f"Bearer {TOKEN}"})
    assert conn.getresponse().read()
    served.server.shutdown()
    served.server.server_close()
    with pytest.raises((ConnectionError, http.client.HTTPException, OSError)):
        conn.auto_open = 0
        conn.request("GET", CONV, headers={"Authorization": f"Bearer {TOKEN}"})
        conn.getresponse()
    conn.close()


def test_a_request_in_flight_is_answered_while_the_server_closes(serve_with: ServeWith) -> None:
    served = serve_with()  # a server of its own: the test stops it
    body = b'{"contact_id": "ct_in_flight"}'
    with socket.create_connection(("127.0.0.1", served.server.server_port), timeout=10) as sock:
        sock.sendall(
            f"POST {CONV} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            + body[:5]
        )
        # Wait until the server has begun on this request (its body is still incomplete).
        while not served.server.in_flight:
            time.sleep(0.01)
        served.server.shutdown()
        closing = threading.Thread(target=served.server.server_close)
        closing.start()
        sock.sendall(body[5:])
        response = http.client.HTTPResponse(sock)
        response.begin()
        assert response.status == 200
        assert json.loads(response.read())["contact_id"] == "ct_in_flight"
        closing.join(timeout=10)
        assert not closing.is_alive()
    # The row is there for the next server over the same file.
    assert served.server.backend.conversations.list()["data"][0]["contact_id"] == "ct_in_flight"
