"""The installed `convrisk serve` as a test double: its request journal, reset, snapshot and
restore under /__sandbox/, and `serve --load FILE`. Each behaviour runs once here; the variants
of one (every file --load refuses) run in-process in tests/cli/test_sandbox_serve.py."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx

from convrisk.api_client.resources import RESOURCES

from .both_backends import TOKEN, isolated_env, serving, start_serve
from .console import CONVRISK

CONV = "/v1/conversations"
RISK = "/v1/risk-profiles"


def client(url: str, token: str = TOKEN) -> httpx.Client:
    """Raw HTTP to a serve, with its token."""
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=10)


def fill(http: httpx.Client) -> None:
    """A few records of both kinds."""
    conv = http.post(CONV, json={"contact_id": "ct_1"}).json()
    http.put(f"{CONV}/{conv['id']}", json={"is_pinned": True, "pinned_message_id": "m_1"})
    http.post(CONV, json={"group_id": "g_\u00e9"})
    risk = {"customer_id": "c_1", "profile_type": "aggressive", "score": 72.5, "details": {}}
    assert http.post(RISK, json=risk).status_code == 200


def test_serve_journals_requests_never_the_token_and_resets(tmp_path: Path) -> None:
    with serving(tmp_path) as served, client(served.url) as http:
        http.post(CONV, json={"contact_id": TOKEN}, headers={"Idempotency-Key": "key-1"})
        http.get(CONV, params={"muted": "false"})
        with httpx.Client(base_url=served.url, timeout=10) as anon:
            assert anon.get("/__sandbox/requests").status_code == 401
            assert anon.post("/__sandbox/reset").status_code == 401
        listed = http.get("/__sandbox/requests")
        assert listed.status_code == 200
        assert TOKEN not in listed.text
        entries = listed.json()["data"]
        assert [(e["method"], e["path"], e["status"]) for e in entries] == [
            ("POST", CONV, 200),
            ("GET", CONV, 200),
        ]
        assert entries[0]["idempotency_key"] == "key-1"
        assert entries[1]["query"] == "muted=false"
        posts = http.get("/__sandbox/requests", params={"method": "POST", "path": "/v1/conv*"})
        assert posts.json()["total"] == 1
        assert http.post("/__sandbox/reset").json() == {"reset": True}
        assert http.get(CONV).json()["data"] == []
        # The listing after the reset is the only request left.
        assert http.get("/__sandbox/requests").json()["total"] == 1


def test_snapshot_reset_restore_through_serve_gives_back_the_same_records(tmp_path: Path) -> None:
    with serving(tmp_path) as served, client(served.url) as http:
        fill(http)
        taken = http.get("/__sandbox/snapshot").content
        assert http.post("/__sandbox/reset").status_code == 200
        restored = http.post(
            "/__sandbox/restore", content=taken, headers={"content-type": "application/x-ndjson"}
        )
        assert restored.json() == {"restored": {"conversations": 2, "risk_profiles": 1}}
        assert http.get("/__sandbox/snapshot").content == taken
        # A restore that fails part way (line 4 repeats line 1) leaves the store as it was.
        bad = taken + taken.split(b"\n")[0] + b"\n"
        refused = http.post("/__sandbox/restore", content=bad)
        assert refused.status_code == 400
        assert "line 4" in refused.json()["error"]["message"]
        assert http.get("/__sandbox/snapshot").content == taken


def take_snapshot(home: Path) -> bytes:
    """A snapshot of a few records, from a serve of its own under `home`."""
    home.mkdir()
    with serving(home) as served, client(served.url) as http:
        fill(http)
        return http.get("/__sandbox/snapshot").content


def test_serve_load_starts_from_a_snapshot(tmp_path: Path) -> None:
    taken = take_snapshot(tmp_path / "a")
    (tmp_path / "b").mkdir()
    snapshot = tmp_path / "fixture.jsonl"
    snapshot.write_bytes(taken)
    with serving(tmp_path / "b", "--load", str(snapshot)) as served, client(served.url) as http:
        assert http.get("/__sandbox/snapshot").content == taken
        assert len(http.get(CONV).json()["data"]) == 2


def without_optional_fields(taken: bytes) -> tuple[bytes, list[dict[str, object]]]:
    """The snapshot as a convrisk from before every settable field with a default (a boolean or
    a nullable field) would have written it, and the records it restores to: those fields at
    their defaults."""
    older, expected = [], []
    for line in taken.decode().splitlines():
        record = json.loads(line)
        optional = [
            f for f in RESOURCES[record["resource"]].updatable() if f.has_default and not f.create
        ]
        older.append(
            json.dumps({k: v for k, v in record.items() if k not in {f.name for f in optional}})
        )
        expected.append(record | {f.name: f.default for f in optional})
    return "\n".join(older).encode() + b"\n", expected


def records_of(snapshot: bytes) -> list[dict[str, object]]:
    """The records of a snapshot, one per line."""
    return [json.loads(line) for line in snapshot.decode().splitlines()]


def test_a_snapshot_taken_before_a_field_existed_restores_and_loads_with_its_default(
    tmp_path: Path,
) -> None:
    taken = take_snapshot(tmp_path / "a")
    older, expected = without_optional_fields(taken)
    # fill() set some of them: at their defaults the records differ from those taken.
    assert expected != records_of(taken)
    snapshot = tmp_path / "before.jsonl"
    snapshot.write_bytes(older)
    (tmp_path / "b").mkdir()
    with serving(tmp_path / "b", "--load", str(snapshot)) as served, client(served.url) as http:
        assert records_of(http.get("/__sandbox/snapshot").content) == expected
        assert http.post("/__sandbox/reset").status_code == 200
        restored = http.post(
            "/__sandbox/restore", content=older, headers={"content-type": "application/x-ndjson"}
        )
        assert restored.json() == {"restored": {"conversations": 2, "risk_profiles": 1}}
        assert records_of(http.get("/__sandbox/snapshot").content) == expected


def test_serve_load_without_db_serves_a_temporary_database(tmp_path: Path) -> None:
    taken = take_snapshot(tmp_path / "a")
    home = tmp_path / "home"
    home.mkdir()
    snapshot = tmp_path / "fixture.jsonl"
    snapshot.write_bytes(taken)
    proc = subprocess.Popen(
        [CONVRISK, "serve", "--port", "0", "--token", TOKEN, "--load", str(snapshot)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=isolated_env(home),
    )
    try:
        assert proc.stderr is not None
        lines = []
        for _ in range(20):
            lines.append(proc.stderr.readline())
            if lines[-1].startswith("export ") or not lines[-1]:
                break
        url = next(line.split()[-1] for line in lines if "listening on" in line)
        database = next(line.split()[-1] for line in lines if "database" in line)
        assert not database.startswith(str(home))
        with client(url) as http:
            assert http.get("/__sandbox/snapshot").content == taken
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert not Path(database).exists()
    assert not [path for path in home.rglob("*") if path.is_file()]


def test_a_bad_load_file_is_exit_2_with_one_line_and_nothing_served(tmp_path: Path) -> None:
    # A file that is not UTF-8; a record that is none and a missing file as well, in-process.
    snapshot = tmp_path / "bad.jsonl"
    snapshot.write_bytes(b"\n\xff\n")
    result = subprocess.run(
        [CONVRISK, "serve", "--port", "0", "--db", str(tmp_path / "s.db"), "--load", str(snapshot)],
        capture_output=True,
        text=True,
        timeout=30,
        env=isolated_env(tmp_path),
    )
    assert result.returncode == 2
    assert "line 2: not UTF-8" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "listening" not in result.stderr
    assert not (tmp_path / "s.db").exists()


def test_serve_load_replaces_the_records_the_database_had(tmp_path: Path) -> None:
    taken = take_snapshot(tmp_path / "a")
    home = tmp_path / "b"
    home.mkdir()
    served = start_serve(home)
    with client(served.url) as http:
        http.post(CONV, json={"contact_id": "ct_old"})
    served.stop()
    snapshot = tmp_path / "fixture.jsonl"
    snapshot.write_bytes(taken)
    with serving(home, "--load", str(snapshot)) as again, client(again.url) as http:
        contacts = {c["contact_id"] for c in http.get(CONV).json()["data"]}
        assert "ct_old" not in contacts
        assert http.get("/__sandbox/snapshot").content == taken


def test_a_load_that_cannot_listen_leaves_the_database_as_it_was(tmp_path: Path) -> None:
    """--load replaces the records only once the port is bound: a port in use changes nothing."""
    import socket

    taken_snapshot = take_snapshot(tmp_path / "a")
    home = tmp_path / "b"
    home.mkdir()
    with serving(home) as served, client(served.url) as http:
        http.post(CONV, json={"contact_id": "ct_old"})
        before = http.get("/__sandbox/snapshot").content
    snapshot = tmp_path / "fixture.jsonl"
    snapshot.write_bytes(taken_snapshot)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        options = ["--db", str(home / "serve.db"), "--token", TOKEN, "--load", str(snapshot)]
        result = subprocess.run(
            [CONVRISK, "serve", "--port", str(port), *options],
            capture_output=True,
            text=True,
            timeout=30,
            env=isolated_env(home),
        )
    assert result.returncode == 1, result.stderr
    assert f"Cannot listen on 127.0.0.1 port {port}" in result.stderr
    with serving(home) as again, client(again.url) as http:
        assert http.get("/__sandbox/snapshot").content == before
