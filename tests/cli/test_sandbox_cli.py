"""`convrisk sandbox` in-process, against the stand-in sandbox on 127.0.0.1
(tests/e2e/fake_sandbox.py): every variant of the refusals tests/e2e/test_sandbox_cli.py runs
once through the installed script (each bad filter or input, each command, each file that is no
snapshot, each guard), under the same test names."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.fake_sandbox import TOKEN, FakeSandbox, entry
from tests.loopback import JSONService, on_loopback, running, url_of

from .conftest import Invoke

JOURNAL = [
    entry(1, "POST", "/v1/conversations", 201, body='{"contact_id":"c_1"}'),
    entry(2, "GET", "/v1/conversations", 200, query="limit=10"),
    entry(3, "PUT", "/v1/conversations/conv_1", 200, body='{"is_muted":true}'),
    entry(4, "POST", "/v1/risk-profiles", 400, body='{"score":"high"}'),
    entry(5, "GET", "/v1/conversations/conv_404", 404),
]
RECORDS: list[dict[str, Any]] = [
    {"resource": "conversations", "id": "conv_1", "contact_id": "c_1"},
    {"resource": "risk_profiles", "id": "rp_1", "customer_id": "cus_1", "score": 5},
]


@pytest.fixture
def sandbox(monkeypatch: pytest.MonkeyPatch, home: Path) -> Iterator[type[FakeSandbox]]:
    """A fresh stand-in sandbox with JOURNAL recorded, convrisk pointed at it (no journal)."""
    handler = FakeSandbox.fresh(JOURNAL)
    with running(on_loopback(handler)) as server:
        monkeypatch.setenv("CONVRISK_BASE_URL", url_of(server))
        monkeypatch.setenv("CONVRISK_TOKEN", TOKEN)
        monkeypatch.setenv("CONVRISK_JOURNAL", "off")
        yield handler


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--path", "/v1/[conv"], "never closed"),
        (["--method", "PO ST"], "--method"),
        (["--status", "abc"], "--status"),
        (["--status", "99"], "--status"),
    ],
)
def test_requests_refuses_bad_filters_before_sending(
    invoke: Invoke, sandbox: type[FakeSandbox], args: list[str], named: str
) -> None:
    result = invoke("sandbox", "requests", *args)
    assert result.code == 2
    assert named in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert sandbox.seen == []


@pytest.mark.parametrize(
    "args",
    [
        ["--method", "POST", "--path", "/v1/*", "--body-jq", ".score >"],
        ["--method", "POST", "--path", "/v1/[x"],
        ["--method", "POST", "--path", "/v1/*", "--count", "1", "--at-least", "1"],
        ["--path", "/v1/*"],
    ],
)
def test_verify_refuses_bad_input_with_exit_2_before_sending(
    invoke: Invoke, sandbox: type[FakeSandbox], args: list[str]
) -> None:
    result = invoke("sandbox", "verify", *args)
    assert result.code == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert sandbox.seen == []


class NotASandbox(JSONService):
    """A service without admin routes: 404 for everything."""

    def do_GET(self) -> None:
        """No such route."""
        self.send_json(404, {"error": {"type": "invalid_request_error", "message": "Nope."}})

    do_POST = do_GET


@pytest.mark.parametrize("args", [["requests"], ["reset"], ["snapshot", "-"]])
def test_a_target_that_is_no_sandbox_is_exit_2_in_one_line(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    with running(on_loopback(NotASandbox)) as server:
        monkeypatch.setenv("CONVRISK_BASE_URL", url_of(server))
        monkeypatch.setenv("CONVRISK_TOKEN", TOKEN)
        result = invoke("sandbox", *args)
    assert result.code == 2
    assert result.stderr.strip().splitlines() == [
        f"Error: The service is not a convrisk sandbox: /__sandbox/{args[0]} has no admin route "
        "(it answered 404 Not Found). `convrisk sandbox` talks to `convrisk serve`."
    ]


def test_the_local_backend_has_no_sandbox(invoke: Invoke) -> None:
    for args in (["requests"], ["reset"], ["verify", "--method", "GET", "--path", "/"]):
        result = invoke("sandbox", *args)
        assert result.code == 2
        assert "talks to a running `convrisk serve`" in result.stderr


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b'{"resource": "conversations", "id": "c"}\nnot json\n', "line 2 is not JSON"),
        (b'{"id": "c"}\n', 'line 1 has no "resource"'),
        (b'{"resource": "conversations", "id": "\xff"}\n', "line 1 is not UTF-8 text"),
        (b"[1]\n", "line 1 is not a JSON object"),
    ],
)
def test_restore_refuses_what_is_no_snapshot_and_sends_nothing(
    invoke: Invoke,
    sandbox: type[FakeSandbox],
    tmp_path: Path,
    content: bytes,
    problem: str,
) -> None:
    sandbox.records[:] = RECORDS
    file = tmp_path / "bad.jsonl"
    file.write_bytes(content)
    result = invoke("sandbox", "restore", str(file))
    assert result.code == 2
    assert result.stderr.strip().splitlines() == [
        f"Error: {file}: {problem}: it is not a snapshot; nothing was sent."
        if "resource" not in problem
        else f"Error: {file}: {problem} of conversations or risk_profiles: it is not a snapshot; "
        "nothing was sent."
    ]
    assert sandbox.seen == [] and sandbox.records == RECORDS


@pytest.mark.parametrize(
    ("mark", "refusal"),
    [
        ("CONVRISK_READ_ONLY", "is read-only (CONVRISK_READ_ONLY is set): refusing to"),
        ("CONVRISK_PROTECTED", "is protected: refusing to"),
    ],
)
def test_reset_and_restore_keep_the_profiles_guards(
    invoke: Invoke,
    sandbox: type[FakeSandbox],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    mark: str,
    refusal: str,
) -> None:
    file = tmp_path / "seed.jsonl"
    file.write_text(json.dumps(RECORDS[0]) + "\n")
    with monkeypatch.context() as guarded:
        guarded.setenv(mark, "1")
        for args in (["reset"], ["restore", str(file)]):
            result = invoke("sandbox", *args)
            assert result.code == 2, result.stderr
            assert refusal in result.stderr
    assert sandbox.seen == []
    monkeypatch.setenv("CONVRISK_PROTECTED", "1")
    invoke("sandbox", "reset", "--yes").ok()
