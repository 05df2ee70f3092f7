"""--as-curl's command lines: a request the remote backend builds, captured and never sent, as one
curl line that a shell reads back to the same method, URL, headers and body bytes."""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Iterator

import pytest

from convrisk import api_client
from convrisk.api_client.capture import (
    PLACEHOLDER_BASE_URL,
    PLACEHOLDER_TOKEN,
    Captured,
    CapturedRequest,
    CaptureTransport,
)
from convrisk.api_client.http import HTTPBackend
from convrisk.api_client.params import ConversationCreateParams
from convrisk.cli.as_curl import command_line

SECRET = "s3cret-token-value"
BASE = "http://127.0.0.1:8765"


@pytest.fixture
def captured() -> Iterator[tuple[HTTPBackend, list[CapturedRequest]]]:
    """A remote backend whose requests are captured into a list."""
    seen: list[CapturedRequest] = []
    backend = HTTPBackend(BASE, SECRET, transport=CaptureTransport(seen.append))
    try:
        yield backend, seen
    finally:
        backend.close()


def words_of(line: str) -> list[str]:
    """The words a POSIX shell reads from `line` (no $'...' words in it)."""
    return shlex.split(line)


def headers_of(words: list[str]) -> dict[str, str]:
    """The -H headers of a curl line's words."""
    headers = {}
    for i, word in enumerate(words):
        if word == "-H":
            name, _, value = words[i + 1].partition(":")
            headers[name] = value.removeprefix(" ")
    return headers


def shell_value(word: str, **env: str) -> bytes:
    """The bytes bash makes of one word of a printed line (with `env` set)."""
    result = subprocess.run(
        ["bash", "-c", f"printf %s {word}"],
        capture_output=True,
        env={"PATH": "/usr/bin:/bin", **env},
        timeout=30,
        check=True,
    )
    return result.stdout


def test_a_create_is_one_curl_line_with_every_header_and_the_exact_body(
    captured: tuple[HTTPBackend, list[CapturedRequest]],
) -> None:
    backend, seen = captured
    with pytest.raises(Captured):
        backend.conversations.create({"contact_id": "c_1"}, idempotency_key="key-1")
    (request,) = seen
    line = command_line(request)
    assert "\n" not in line and SECRET not in line and PLACEHOLDER_TOKEN not in line
    words = words_of(line)
    assert words[:4] == ["curl", "-X", "POST", f"{BASE}/v1/conversations"]
    headers = headers_of(words)
    assert headers == {
        "User-Agent": f"convrisk/{api_client.__version__}",
        "Accept": "application/json",
        "Authorization": "Bearer $CONVRISK_TOKEN",
        "Content-Type": "application/json",
        "Idempotency-Key": "key-1",
    }
    assert '-H "Authorization: Bearer $CONVRISK_TOKEN"' in line  # expanded by the shell
    assert words[words.index("--data-binary") + 1].encode() == request.body
    assert request.body == b'{"contact_id":"c_1"}'


def test_nothing_is_answered_so_a_read_stops_at_its_request(
    captured: tuple[HTTPBackend, list[CapturedRequest]],
) -> None:
    backend, seen = captured
    with pytest.raises(Captured):
        backend.conversations.list({"muted": True}, limit=5)
    assert [(r.method, r.url) for r in seen] == [
        ("GET", f"{BASE}/v1/conversations?muted=true&limit=5")
    ]
    words = words_of(command_line(seen[0]))
    assert "--data-binary" not in words and "Content-Type" not in headers_of(words)


def test_a_batch_of_creates_is_captured_one_at_a_time_in_order(
    captured: tuple[HTTPBackend, list[CapturedRequest]],
) -> None:
    backend, seen = captured
    items: list[tuple[ConversationCreateParams, str | None]] = [
        ({"contact_id": f"c_{n}"}, f"key-{n}") for n in range(20)
    ]
    with pytest.raises(Captured):
        backend.conversations.create_many(items)
    # One request: the batch cannot go on without the first answer, and sends nothing at once.
    assert [r.body for r in seen] == [b'{"contact_id":"c_0"}']


def test_the_local_backend_s_url_is_the_variable_that_names_the_service() -> None:
    seen: list[CapturedRequest] = []
    backend = HTTPBackend(
        PLACEHOLDER_BASE_URL, PLACEHOLDER_TOKEN, transport=CaptureTransport(seen.append)
    )
    with pytest.raises(Captured):
        backend.conversations.delete("conv_01HV0000000000000000000000")
    backend.close()
    line = command_line(seen[0])
    assert "invalid" not in line
    url_word = line.split()[3]
    assert url_word == '"$CONVRISK_BASE_URL"/v1/conversations/conv_01HV0000000000000000000000'
    value = shell_value(url_word, CONVRISK_BASE_URL="https://api.example.com")
    assert value == b"https://api.example.com/v1/conversations/conv_01HV0000000000000000000000"


@pytest.mark.parametrize(
    "body",
    [
        b'{"a": "it\'s"}',
        b'{\n  "a": "two lines"\n}',
        b'{"a": "bell \x07 esc \x1b[31m"}',
        b'{"a": "\xe2\x80\xae reversed, caf\xc3\xa9, bang!"}',
        b'{"a": "back\\\\slash $HOME `id`"}',
    ],
)
def test_any_body_is_one_safe_line_that_the_shell_reads_back_byte_for_byte(body: bytes) -> None:
    request = CapturedRequest("PATCH", f"{BASE}/v1/conversations/x", (), body)
    line = command_line(request)
    assert "\n" not in line and "\x1b" not in line and "\x07" not in line
    assert "\u202e" not in line
    word = line.split(" --data-binary ", 1)[1]
    assert shell_value(word, HOME="/nowhere") == body


def test_a_post_without_a_body_sends_an_empty_one_without_curl_s_form_type() -> None:
    request = CapturedRequest("POST", f"{BASE}/v1/conversations", (("Content-Length", "0"),), b"")
    words = words_of(command_line(request))
    assert words[-2:] == ["--data-binary", ""]
    assert headers_of(words) == {"Content-Type": ""}


def test_head_is_curl_s_head_and_a_body_starting_with_at_is_not_read_as_a_file() -> None:
    head = words_of(command_line(CapturedRequest("HEAD", f"{BASE}/v1/conversations", (), b"")))
    assert head[:3] == ["curl", "--head", f"{BASE}/v1/conversations"]
    at = CapturedRequest("POST", f"{BASE}/v1/x", (("Content-Type", "application/json"),), b"@f")
    assert words_of(command_line(at))[-2:] == ["--data-raw", "@f"]


def test_a_url_with_glob_characters_turns_curl_s_globbing_off() -> None:
    request = CapturedRequest("GET", f"{BASE}/v1/conversations?a[]={{x}}", (), b"")
    words = words_of(command_line(request))
    assert "--globoff" in words and f"{BASE}/v1/conversations?a[]={{x}}" in words
