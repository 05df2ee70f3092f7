"""convrisk.testing's Sandbox on a real `convrisk serve` subprocess: start and stop, seeded ids
and times, requests and verify, aimed faults, snapshots loaded, a start that fails or takes too
long, and Sandbox with no pytest installed."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from convrisk import InvalidRequestError
from convrisk.testing import Sandbox, SandboxError

from .both_backends import isolated_env
from .console import run

CLOCK = "2026-01-01T00:00:00Z"


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    """One sandbox for the module, seeded, its clock set; each test resets it."""
    with Sandbox(seed=7, clock=CLOCK) as sb:
        yield sb


@pytest.fixture
def sb(sandbox: Sandbox) -> Sandbox:
    sandbox.reset()
    return sandbox


def run_python(script: str, tmp_path: Path, *, cwd: Path | None = None) -> str:
    """Run `script` with this interpreter, as a user's program, from a HOME of its own: its
    stdout (it must exit 0; never waits past 120 s)."""
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=cwd,
        env=isolated_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_a_sandbox_serves_on_loopback_and_stops_removing_its_database() -> None:
    with Sandbox() as sandbox:
        assert sandbox.base_url.startswith("http://127.0.0.1:")
        folder = sandbox._folder
        assert folder is not None and (folder / "sandbox.db").exists()
        process = sandbox._process
        url = sandbox.base_url
    assert process is not None and process.returncode is not None
    assert not folder.exists()
    with pytest.raises(httpx.ConnectError):
        httpx.get(url, timeout=5)
    with pytest.raises(SandboxError, match="not running"):
        sandbox.base_url  # noqa: B018


def test_the_client_works_on_the_sandbox_and_the_token_is_needed(sb: Sandbox) -> None:
    with sb.client() as client:
        created = client.conversations.create(contact_id="c_1")
        assert client.conversations.retrieve(created["id"])["contact_id"] == "c_1"
    assert httpx.get(f"{sb.base_url}/v1/conversations", timeout=5).status_code == 401


def test_the_seed_and_clock_give_the_same_id_and_time_after_each_reset(sb: Sandbox) -> None:
    made = []
    for _ in range(2):
        sb.reset()
        with sb.client() as client:
            made.append(client.conversations.create(contact_id="c_1"))
    assert made[0]["id"] == made[1]["id"]
    assert made[0]["created_at"] == made[1]["created_at"] == 1767225600


def test_requests_lists_the_journal_filtered_by_method_and_glob(sb: Sandbox) -> None:
    with sb.client() as client:
        created = client.conversations.create(contact_id="c_1")
        client.conversations.retrieve(created["id"])
        client.risk_profiles.list()
    every = sb.requests()
    assert [(r["method"], r["path"]) for r in every] == [
        ("POST", "/v1/conversations"),
        ("GET", f"/v1/conversations/{created['id']}"),
        ("GET", "/v1/risk-profiles"),
    ]
    assert [r["seq"] for r in sb.requests("get", "/v1/conversations/*")] == [every[1]["seq"]]
    assert sb.requests(path="/v1/risk-*") == [every[2]]


def test_a_glob_the_sandbox_cannot_read_is_an_error_not_an_empty_list(sb: Sandbox) -> None:
    with pytest.raises(InvalidRequestError, match="not a valid glob") as refused:
        sb.requests(path="/v1/[")
    assert refused.value.param == "path"
    with pytest.raises(InvalidRequestError, match="not a valid glob"):
        sb.verify("GET", "/v1/[")
    with pytest.raises(TypeError, match="path glob"):
        sb.verify("GET", None)  # type: ignore[arg-type]


def test_verify_with_neither_count_nor_at_least_wants_at_least_one(sb: Sandbox) -> None:
    with pytest.raises(AssertionError) as none:
        sb.verify("POST", "/v1/conversations")
    assert str(none.value).splitlines() == [
        "Expected at least 1 POST /v1/conversations; the sandbox received 0.",
        "No near miss: the sandbox received no request like it.",
    ]
    with sb.client() as client:
        client.conversations.create(contact_id="c_1")
        client.conversations.create(contact_id="c_2")
    matched = sb.verify("POST", "/v1/conversations")
    assert [entry["body"] for entry in matched] == ['{"contact_id":"c_1"}', '{"contact_id":"c_2"}']
    assert sb.verify("post", "/v1/conv*", at_least=2) == matched
    assert sb.verify("DELETE", "/v1/*", count=0) == []


def test_a_failed_verify_lists_the_near_misses_as_the_command_does(sb: Sandbox) -> None:
    with sb.client() as client:
        created = client.conversations.create(contact_id="c_1")
        client.conversations.retrieve(created["id"])
    with pytest.raises(AssertionError) as wrong:
        sb.verify("GET", "/v1/conversations", count=1)
    first, second = (entry["seq"] for entry in sb.requests())  # numbered on from the last test
    assert str(wrong.value).splitlines() == [
        "Expected exactly 1 GET /v1/conversations; the sandbox received 0.",
        "Near misses, the closest first:",
        f"  #{first} POST /v1/conversations -> 200: another method",
        f"  #{second} GET /v1/conversations/{created['id']} -> 200: another path",
    ]
    with pytest.raises(AssertionError, match=rf"^Expected exactly 0 .*\nMatched: #{first}$"):
        sb.verify("POST", "/v1/conversations", count=0)


def test_text_from_the_journal_is_escaped_in_a_failed_verify(sb: Sandbox) -> None:
    httpx.get(f"{sb.base_url}/v1/%1b[31mred", headers={"Authorization": f"Bearer {sb.token}"})
    with pytest.raises(AssertionError) as wrong:
        sb.verify("GET", "/v1/nothing")
    assert "\x1b" not in str(wrong.value)
    assert "another path" in str(wrong.value)


def test_fault_aims_a_503_at_the_next_create_and_reset_clears_it(sb: Sandbox) -> None:
    rule = sb.fault("POST", "/v1/conversations", status=503, retry_after=1)
    assert rule["id"] == 1 and rule["times"] == 1 and rule["fired"] == 0
    auth = {"Authorization": f"Bearer {sb.token}"}
    url = f"{sb.base_url}/v1/conversations"
    refused = httpx.post(url, json={"contact_id": "c_1"}, headers=auth, timeout=10)
    assert refused.status_code == 503 and refused.headers["Retry-After"] == "1"
    assert [entry["fault_rule"] for entry in sb.requests()] == [rule["id"]]
    sb.fault("*", "/v1/conversations*", status=500, times=5)
    sb.reset()
    assert httpx.post(url, json={"contact_id": "c_1"}, headers=auth, timeout=10).is_success


def test_a_snapshot_file_is_written_whole_and_readable_by_its_owner_alone(
    sb: Sandbox, tmp_path: Path
) -> None:
    target = tmp_path / "seed.jsonl"
    target.write_text("kept\n", encoding="utf-8")
    with sb.client() as client:
        client.conversations.create(contact_id="c_1")
    assert sb.snapshot(target) == 1
    assert target.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["seed.jsonl"]  # no temporary file left
    with pytest.raises(OSError):
        sb.snapshot(tmp_path / "no-such-folder" / "seed.jsonl")


def test_load_restores_a_snapshot_file(sb: Sandbox, tmp_path: Path) -> None:
    with sb.client() as client:
        kept = client.conversations.create(contact_id="c_kept")
    env = isolated_env(tmp_path, CONVRISK_BASE_URL=sb.base_url, CONVRISK_TOKEN=sb.token)
    seed = tmp_path / "seed.jsonl"
    made = run(env, "sandbox", "snapshot", str(seed))
    assert made.returncode == 0, made.stderr
    sb.reset()
    assert sb.load(seed) == {"conversations": 1, "risk_profiles": 0}
    with sb.client() as client:
        assert client.conversations.retrieve(kept["id"]) == kept


def test_a_start_that_fails_raises_serves_own_error_at_once() -> None:
    with pytest.raises(SandboxError) as failed:
        Sandbox(clock="tomorrow").start()
    assert str(failed.value).startswith(
        "convrisk serve did not start (exit 2): Error: --clock must be an ISO 8601 time"
    )
    assert "'tomorrow'" in str(failed.value)


def test_a_start_past_its_deadline_is_an_error_and_the_serve_is_stopped() -> None:
    sandbox = Sandbox(start_timeout=0)
    with pytest.raises(SandboxError, match="did not say it was listening within 0 s"):
        sandbox.start()
    assert sandbox._process is None and sandbox._folder is None


def test_a_test_process_killed_outright_leaves_no_serve_behind(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import time
        from convrisk.testing import Sandbox
        sb = Sandbox()
        sb.start()
        print(sb.base_url, flush=True)
        time.sleep(120)
        """
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script],
        env=isolated_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert child.stdout is not None
        url = child.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        assert httpx.get(f"{url}/openapi.json", timeout=5).status_code == 200
    finally:
        child.kill()  # SIGKILL: no `with`, no atexit, nothing of the sandbox's own stop runs
        child.wait(timeout=30)
    for _ in range(100):  # serve polls its parent every 0.1 s and stops as on SIGTERM
        try:
            httpx.get(f"{url}/openapi.json", timeout=1)
        except httpx.ConnectError:
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"serve still answers on {url} 10 s after its test process died")


def test_a_file_of_the_working_folder_named_like_a_library_does_not_reach_serve(
    tmp_path: Path,
) -> None:
    (tmp_path / "jq.py").write_text("raise SystemExit('the wrong jq')\n", encoding="utf-8")
    script = textwrap.dedent(
        """
        import httpx
        from convrisk.testing import Sandbox
        with Sandbox() as sb:
            sb.fault("GET", "/v1/conversations", status=500, body_jq='{"jq": "real"}')
            got = httpx.get(sb.base_url + "/v1/conversations",
                            headers={"Authorization": "Bearer " + sb.token})
            print(got.status_code, got.text)
        """
    )
    assert run_python(script, tmp_path, cwd=tmp_path).strip() == '500 {"jq":"real"}'


def test_serve_looks_in_the_working_folder_only_where_convrisk_itself_was_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import convrisk
    from convrisk.testing import _safe_path

    monkeypatch.chdir(tmp_path)
    assert _safe_path() == ["-P"]
    monkeypatch.chdir(Path(convrisk.__file__).resolve().parent.parent)  # a checkout, not installed
    assert _safe_path() == []


def test_sandbox_works_where_pytest_cannot_be_imported(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import sys
        sys.modules["pytest"] = sys.modules["_pytest"] = None  # import pytest fails
        from convrisk.testing import Sandbox
        with Sandbox(seed=1) as sb:
            with sb.client() as client:
                client.conversations.create(contact_id="c_1")
            sb.verify("POST", "/v1/conversations", count=1)
            sb.reset()
            print(len(sb.requests()), sorted(m for m in sys.modules if "pytest" in m))
        """
    )
    first = run_python(script, tmp_path).split("\n")[0]
    assert first == "0 ['_pytest', 'pytest']"  # the blocked names alone


def test_importing_convrisk_testing_loads_neither_pytest_nor_httpx(tmp_path: Path) -> None:
    script = (
        "import sys, convrisk.testing; "
        "print(sorted({'pytest', 'httpx', 'httpcore', 'convrisk.api_client.client'} "
        "& set(sys.modules)))"
    )
    assert run_python(script, tmp_path).strip() == "[]"
