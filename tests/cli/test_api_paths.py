"""`convrisk api` refuses, in-process on the local database, every PATH a server could decode into
another path (issue 29, finding 8): exit 2, one line naming the problem, nothing written; and,
against a loopback service, sends nothing (the variants of tests/e2e/test_api_paths.py, under
its test names)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.conftest import Invoke

from .raw_service import OK, raw_service

PATHS = [
    ("/v1/%c0%ae%c0%ae/x", "not UTF-8"),
    ("/v1/%c0%ae%c0%ae/conversations", "not UTF-8"),
    ("/v1/conversations/%c0%af", "not UTF-8"),
    ("/v1/%2525c0%2525ae/x", "not UTF-8"),
    ("/v1/\uff0e\uff0e/x", "U+FF0E"),
    ("/v1/%EF%BC%8E%EF%BC%8E/conversations", "U+FF0E"),
    ("/v1/conversations/\uff0e", "U+FF0E"),
    ("/v1/conversations/a\uff0fb", "U+FF0F"),
    ("/v1/\u2025/conversations", "U+2025"),
    ("/v1/%u002e%u002e/x", "%u escape"),
    ("/v1/%u002E%u002e/conversations", "%u escape"),
    ("/v1/%25u002e/x", "%u escape"),
    ("/v1/..%00/x", "NUL"),
    ("/v1/conversations%00", "NUL"),
    ("/v1/conversations/%2500", "NUL"),
]


@pytest.mark.parametrize(("path", "named"), PATHS)
def test_api_refuses_the_path_with_exit_2_and_writes_nothing(
    invoke: Invoke, path: str, named: str
) -> None:
    for args in ([path], ["-X", "POST", path, "-d", '{"contact_id": "c"}']):
        result = invoke("api", *args)
        assert result.code == 2, (args, result.stderr)
        (line,) = result.stderr.splitlines()
        assert line.startswith("Error: PATH ") and named in line, line
        assert result.stdout == ""
    assert invoke("conv", "list", "-o", "id").ok().stdout == ""


def test_a_plain_path_with_unicode_in_an_id_still_reaches_the_service(invoke: Invoke) -> None:
    # The service itself answers (a 400 on the id's shape, exit 1): the check let it through.
    result = invoke("api", "/v1/conversations/conv_caf\u00e9")
    assert result.code == 1, result.stderr
    assert "not a conversation id" in result.stderr and "(HTTP 400)" in result.stderr


@pytest.fixture
def remote(monkeypatch: pytest.MonkeyPatch, home: Path) -> Iterator[list[bytes]]:
    """convrisk pointed at a loopback service that answers 200 to all: what it read."""
    with raw_service(OK) as (url, seen):
        monkeypatch.setenv("CONVRISK_BASE_URL", url)
        monkeypatch.setenv("CONVRISK_TOKEN", "tok-api-paths")
        yield seen


@pytest.mark.parametrize("path", ["/v1/..;/admin", "/v1/%252e%252e/admin"])
def test_api_refuses_a_path_that_leads_outside_v1_once_decoded(
    invoke: Invoke, remote: list[bytes], path: str
) -> None:
    result = invoke("api", path)
    assert result.code == 2, result.stderr
    assert "leads outside /v1/" in result.stderr
    assert remote == []


@pytest.mark.parametrize(
    ("path", "named"),
    [
        ("/v1/%c0%ae%c0%ae/x", "is not UTF-8 once percent-decoded"),
        ("/v1/\uff0e\uff0e/x", "U+FF0E, which Unicode normalization (NFKC) reads as '.'"),
        ("/v1/%u002e%u002e/x", "holds a %u escape (%u002e)"),
        ("/v1/..%00/x", "holds a NUL character once percent-decoded"),
    ],
)
def test_api_refuses_a_path_a_server_would_decode_into_another_and_sends_nothing(
    invoke: Invoke, remote: list[bytes], path: str, named: str
) -> None:
    result = invoke("api", path)
    assert result.code == 2, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("Error: PATH ") and named in line, line
    assert line.endswith("is refused."), line
    assert result.stdout == ""
    assert remote == []
