"""`convrisk api` in-process: every variant of the behaviours tests/e2e/test_api.py runs once
through the installed script, on the local database and against an in-process serve (`either`),
or against a scripted service on loopback."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from convrisk.local_backend.backend import LocalBackend

from .conftest import REMOTE_TOKEN, Backends, Invoke, Result
from .scripted_service import ScriptedServer, scripted_service

WELL_FORMED = "conv_" + "0" * 26
SECRET = "s3cret-token-for-api-tests"


def count(either: Backends, resource: str) -> int:
    """How many objects of a resource the database behind the backend holds."""
    with LocalBackend(either.db_path) as store:
        backend: Any = getattr(store, resource)
        total, cursor = 0, None
        while True:
            page = backend.list(limit=100, starting_after=cursor)
            total += len(page["data"])
            if not page["has_more"]:
                return total
            cursor = page["data"][-1]["id"]


def made_conversations(either: Backends, n: int) -> list[str]:
    """`n` conversations made through `api`; their ids, newest first (the list order)."""
    ids = []
    for i in range(n):
        body = json.dumps({"contact_id": f"c_{i}"})
        ids.append(either.invoke("api", "/v1/conversations", "-d", body).ok().json()["id"])
    return ids[::-1]


def logged(either: Backends, wanted: str, times: int = 1) -> None:
    """Wait, at most 10 s, until the in-process serve has logged `times` lines with `wanted`."""
    deadline = time.monotonic() + 10
    while sum(wanted in line for line in either.log) < times:
        assert time.monotonic() < deadline, either.log
        time.sleep(0.01)


def test_api_runs_every_verb_of_the_interface(either: Backends) -> None:
    created = either.invoke("api", "/v1/conversations", "-d", '{"contact_id": "c_1"}').ok().json()
    assert created["contact_id"] == "c_1" and created["id"].startswith("conv_")
    path = f"/v1/conversations/{created['id']}"
    assert either.invoke("api", path).ok().json() == created
    updated = either.invoke("api", "-X", "PUT", path, "-d", '{"is_muted": true}').ok().json()
    assert updated["is_muted"] is True and updated["id"] == created["id"]
    page = either.invoke("api", "/v1/conversations?muted=true&limit=5").ok().json()
    assert page == {"has_more": False, "data": [updated]}
    risk = (
        either.invoke(
            "api",
            "/v1/risk-profiles",
            "-d",
            "-",
            input='{"customer_id": "cus_1", "profile_type": "moderate", "score": 70, '
            '"details": {}}',
        )
        .ok()
        .json()
    )
    assert risk["score"] == 70 and count(either, "risk_profiles") == 1
    deleted = either.invoke("api", "-X", "delete", path).ok().json()
    assert deleted == {"id": created["id"], "deleted": True}
    assert count(either, "conversations") == 0


def test_an_error_answer_is_printed_with_the_error_line_and_its_exit_code(
    either: Backends,
) -> None:
    missing = either.invoke("api", f"/v1/conversations/{WELL_FORMED}")
    assert missing.code == 3
    assert missing.json()["error"]["type"] == "not_found_error"
    assert missing.stderr == f"Error: No such conversation: {WELL_FORMED} (HTTP 404)\n"
    # An id the sandbox never mints is the request's fault: a 400 naming it.
    malformed = either.invoke("api", "/v1/conversations/conv_nope")
    assert malformed.code == 1
    assert malformed.json()["error"]["param"] == "id"
    invalid = either.invoke("api", "/v1/risk-profiles", "-d", '{"customer_id": "cus_1"}')
    assert invalid.code == 1
    assert invalid.json()["error"]["param"] == "profile_type"
    assert invalid.stderr.startswith("Error: ") and "(HTTP 400)" in invalid.stderr
    assert count(either, "risk_profiles") == 0


def test_a_method_the_route_lacks_is_a_405_naming_the_methods_it_has(either: Backends) -> None:
    [conv_id] = made_conversations(either, 1)
    for method, path in (("PATCH", "/v1/conversations"), ("POST", f"/v1/conversations/{conv_id}")):
        result = either.invoke("api", "-X", method, path, "-d", "{}")
        assert result.code == 1, result.stderr
        assert result.json()["error"]["code"] == "method_not_allowed"
        assert f"Method {method} is not allowed here" in result.stderr
        assert "(HTTP 405)" in result.stderr
    assert count(either, "conversations") == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["/conversations"], "PATH must start with /v1/"),
        (["http://127.0.0.1:1/v1/conversations"], "PATH must start with /v1/"),
        (["/v1/../admin"], "leads outside /v1/ once decoded"),
        (["/v1/%2E%2E/admin"], "leads outside /v1/ once decoded"),
        (["/v1/conversations/..%2F..%2Fadmin"], "leads outside /v1/ once decoded"),
        (["/v1/conversations/x%5C..%5Cadmin"], "cannot contain . or .. segments"),
        (["/v1/conversations?group_id=" + "é" * 20_000], "PATH is too long"),
        (["/v1/conversations#x"], "fragment"),
        (["/v1/conversations?x=a b"], "spaces or control characters"),
        (["-X", "GE T", "/v1/conversations"], "-X takes an HTTP method"),
        (["-X", "", "/v1/conversations", "-d", "{}"], "-X takes an HTTP method"),
        (["-d", "{nope", "/v1/conversations"], "-d: the argument is not valid JSON"),
        (["-d", "@/nonexistent/body.json", "/v1/conversations"], "-d: cannot read"),
        (["-X", "GET", "-d", "{}", "/v1/conversations"], "-d sends a body, which GET"),
        (["-X", "POST", "--paginate", "/v1/conversations"], "--paginate follows the pages"),
        (["--paginate", "/v1/conversations?ending_before=conv_1"], "drop ending_before"),
        (["--jq", ".[", "/v1/conversations"], "--jq does not compile"),
    ],
)
def test_bad_input_is_refused_before_any_request(
    either: Backends, args: list[str], message: str
) -> None:
    result = either.invoke("api", *args)
    assert result.code == 2, result.stderr
    assert result.stdout == ""
    assert message in result.stderr and len(result.stderr.splitlines()) == 1
    assert count(either, "conversations") == 0
    if either.remote:
        # A request that is sent shows in serve's log: send one, wait for its line, and it
        # must be the only request there.
        either.invoke("api", "/v1/conversations?limit=1").ok()
        logged(either, "limit=1 200")
        assert sum(" /v1/" in line for line in either.log) == 1, either.log


def test_paginate_prints_every_item_of_every_page_as_one_json_line(either: Backends) -> None:
    ids = made_conversations(either, 7)
    lines = either.invoke("api", "/v1/conversations?limit=3", "--paginate").ok().lines()
    assert [json.loads(line)["id"] for line in lines] == ids
    assert all(line == json.dumps(json.loads(line), separators=(",", ":")) for line in lines)
    after = either.invoke(
        "api", f"/v1/conversations?limit=2&starting_after={ids[1]}", "--paginate"
    ).ok()
    assert [item["id"] for item in after.jsonl()] == ids[2:]
    assert either.invoke("conv", "list", "--all", "-o", "id").ok().stdout.split() == ids


def test_paginate_without_a_limit_takes_pages_of_the_profile_s_page_size(
    either: Backends, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = made_conversations(either, 12)
    monkeypatch.setenv("CONVRISK_PAGE_SIZE", "5")
    result = either.invoke("api", "/v1/conversations?muted=false", "--paginate").ok()
    assert [item["id"] for item in result.jsonl()] == ids
    if either.remote:
        logged(either, "muted=false&limit=5", times=3)


def test_paginate_with_jq_runs_the_program_on_each_item(either: Backends) -> None:
    ids = made_conversations(either, 5)
    each = either.invoke("api", "/v1/conversations?limit=2", "--paginate", "--jq", ".id").ok()
    assert each.stdout.split() == ids
    whole = either.invoke(
        "api", "/v1/conversations?limit=2", "--jq", "[.has_more, (.data|length)]"
    ).ok()
    assert whole.stdout == "[true,2]\n"


def test_paginate_on_a_path_that_is_not_a_list_says_so(either: Backends) -> None:
    [conv_id] = made_conversations(either, 1)
    result = either.invoke("api", f"/v1/conversations/{conv_id}", "--paginate")
    assert result.code == 1
    assert result.stdout == ""
    assert "did not answer with a list page" in result.stderr
    assert "--paginate needs a list path" in result.stderr


def test_a_body_from_a_file_is_sent_as_written(either: Backends, tmp_path: Path) -> None:
    body = tmp_path / "profile.json"
    body.write_text(
        '\ufeff{"customer_id": "cus_é", "profile_type": "aggressive", "score": 1.5, "details": {}}'
    )
    made = either.invoke("api", "/v1/risk-profiles", "-d", f"@{body}").ok().json()
    assert made["customer_id"] == "cus_é" and made["score"] == 1.5


def _normalised(text: str) -> str:
    """An answer with the parts that differ between two databases (ids, times) made equal."""
    text = re.sub(r"(conv|rp)_[0-9A-Z]{26}", r"\1_ID", text)
    return re.sub(r'"(created_at|updated_at)":[0-9.]+', r'"\1":T', text)


REQUESTS: list[list[str]] = [
    ["/v1/conversations", "-d", '{"contact_id": "c_1"}'],
    ["/v1/conversations", "-d", '{"group_id": "g_1", "contact_id": "c_1"}'],
    ["/v1/conversations", "-d", "[1]"],
    ["/v1/conversations", "-d", '{"contact_id": "c_é\\u0000"}'],
    ["/v1/conversations?limit=1"],
    ["/v1/conversations?limit=0"],
    ["/v1/conversations?muted=maybe"],
    ["/v1/conversations?group_id=%C3%A9&group_id=x"],
    ["/v1/conversations?group_id=é"],
    ["/v1/conversations/conv_missing"],
    ["/v1/conversations/conv_missing", "-X", "PUT", "-d", "{}"],
    ["/v1/nothing-here"],
    ["/v1/risk-profiles", "-d", '{"customer_id": "c", "profile_type": "x", "score": 101}'],
    ["/v1/risk-profiles", "-X", "DELETE"],
    ["/v1/risk-profiles?customer_id=c&limit=100"],
    ["/v1/conversations", "-X", "HEAD"],
    ["/v1/conversations/conv_missing", "-X", "HEAD"],
]


def test_both_backends_answer_every_request_alike(
    invoke: Invoke, cli_server: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Each request on a local database, then against an in-process serve of another one."""
    local_db = tmp_path / "local.db"

    def on_local(request: list[str]) -> Result:
        monkeypatch.delenv("CONVRISK_BASE_URL", raising=False)
        monkeypatch.delenv("CONVRISK_TOKEN", raising=False)
        monkeypatch.setenv("CONVRISK_DB", str(local_db))
        return invoke("api", *request)

    log: list[str] = []
    with LocalBackend(tmp_path / "remote.db") as backend, cli_server.serving(backend, log) as srv:

        def on_remote(request: list[str]) -> Result:
            monkeypatch.delenv("CONVRISK_DB", raising=False)
            monkeypatch.setenv("CONVRISK_BASE_URL", srv.url)
            monkeypatch.setenv("CONVRISK_TOKEN", REMOTE_TOKEN)
            return invoke("api", *request)

        for request in REQUESTS:
            here, there = on_local(request), on_remote(request)
            assert here.code == there.code, request
            assert _normalised(here.stdout) == _normalised(there.stdout), request
            assert _normalised(here.stderr) == _normalised(there.stderr), request


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch, home: Path) -> Iterator[ScriptedServer]:
    """A scripted service on loopback (fill `server.script`), convrisk pointed at it with no
    retries."""
    with scripted_service() as (server, url):
        monkeypatch.setenv("CONVRISK_BASE_URL", url)
        monkeypatch.setenv("CONVRISK_TOKEN", SECRET)
        monkeypatch.setenv("CONVRISK_MAX_RETRIES", "0")
        yield server


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_redirect_is_not_followed_and_fails_with_exit_1(
    scripted: ScriptedServer, invoke: Invoke, status: int
) -> None:
    scripted.script["/v1/conversations"] = (
        status,
        [("Location", "http://127.0.0.1:1/v1/conversations")],
        b"",
    )
    result = invoke("api", "/v1/conversations")
    assert result.code == 1, result
    assert result.stdout == ""
    assert result.stderr.startswith(f"Error: The service answered HTTP {status}"), result.stderr
    assert "redirects are not followed" in result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert scripted.seen == ["/v1/conversations"]


def test_a_token_the_service_echoes_back_is_never_printed(
    scripted: ScriptedServer, invoke: Invoke
) -> None:
    scripted.script["/v1/conversations"] = (400, [], None)
    for args in (["api"], ["--debug", "api"]):
        result = invoke(*args, "/v1/conversations")
        assert result.code == 1, result
        assert SECRET not in result.stdout + result.stderr
        assert result.json()["you"] == "Bearer ***"
        assert "Error: bad header Bearer *** (HTTP 400)" in result.stderr


@pytest.mark.parametrize("how", ["stdin", "argument", "file"])
def test_a_body_that_is_not_utf8_is_refused_before_any_request(
    either: Backends, tmp_path: Path, how: str
) -> None:
    latin1 = b'{"contact_id": "caf\xe9"}'
    if how == "stdin":
        result = either.invoke("api", "/v1/conversations", "-d", "-", input=latin1)
    elif how == "file":
        (tmp_path / "body.json").write_bytes(latin1)
        result = either.invoke("api", "/v1/conversations", "-d", f"@{tmp_path / 'body.json'}")
    else:
        # Python hands a program the argv bytes that are not UTF-8 as lone surrogates.
        argument = latin1.decode("utf-8", "surrogateescape")
        result = either.invoke("api", "/v1/conversations", "-d", argument)
    assert result.code == 2, result.stderr
    assert result.stdout == ""
    assert "-d:" in result.stderr and "not UTF-8" in result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert count(either, "conversations") == 0


def test_every_error_line_is_plain_even_with_convrisk_output_json(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONVRISK_OUTPUT", "json")
    for args, code in (
        (["/v1/nothing-here"], 3),
        (["/nope"], 2),
        (["-X", "G T", "/v1/conversations"], 2),
        (["/v1/conversations", "-d", "{"], 2),
    ):
        result = invoke("api", *args)
        assert result.code == code, result.stderr
        assert result.stderr.startswith("Error: "), result.stderr
