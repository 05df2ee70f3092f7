"""`convrisk api` keeps every request under /v1/ however PATH is encoded, and reports an answer
that breaks HTTP (an illegal Location header) as a bad answer: exit 1, not retried. Each
behaviour runs once here; the variants (every PATH) run in-process in tests/cli/test_api_paths.py,
under the same test names."""

from __future__ import annotations

from pathlib import Path

from tests.cli.raw_service import OK, raw_service

from .both_backends import TOKEN, Remote

BAD_REDIRECT = (
    b"HTTP/1.1 302 Found\r\nLocation: //\x00x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
)


def test_api_refuses_a_path_that_leads_outside_v1_once_decoded(tmp_path: Path) -> None:
    with raw_service(OK) as (url, seen):
        result = Remote(tmp_path, url, TOKEN).run("api", "/v1/..;/admin")  # others: in-process
    assert result.returncode == 2, result.stderr
    assert "leads outside /v1/" in result.stderr
    assert seen == []


def test_api_refuses_a_path_a_server_would_decode_into_another_and_sends_nothing(
    tmp_path: Path,
) -> None:
    # Issue 29, finding 8: each of these reached the service unchanged. One here, the others
    # in-process.
    with raw_service(OK) as (url, seen):
        result = Remote(tmp_path, url, TOKEN).run("api", "/v1/%c0%ae%c0%ae/x")
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("Error: PATH ") and "is not UTF-8 once percent-decoded" in line, line
    assert line.endswith("is refused."), line
    assert result.stdout == ""
    assert seen == []


def test_a_redirect_with_an_illegal_location_is_a_bad_answer_not_unreachable(
    tmp_path: Path,
) -> None:
    with raw_service(BAD_REDIRECT) as (url, seen):
        result = Remote(tmp_path, url, TOKEN).run("api", "/v1/conversations")
    assert result.returncode == 1, result.stderr
    assert "is not valid HTTP" in result.stderr and "Location" in result.stderr
    assert "Could not reach" not in result.stderr
    assert len(seen) == 1  # not retried
