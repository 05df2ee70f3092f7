"""`convrisk api` refuses, in-process on the local database, every PATH a server could decode into
another path (issue 29, finding 8): exit 2, one line naming the problem, nothing written."""

from __future__ import annotations

import pytest

from tests.cli.conftest import Invoke

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
