"""bench/serve_create.py's reference app and measurement: the reference really creates what
convrisk reads back, refuses a wrong token, and the measurement drives both servers."""

from __future__ import annotations

import http.client
import json
import sqlite3
import sys
import urllib.parse
from pathlib import Path

from bench.serve_create import REF_APP, TOKEN, fresh_database, measure, started

from .console import CONVRISK, run


def _post(url: str, token: str) -> tuple[int, bytes]:
    parts = urllib.parse.urlsplit(url)
    assert parts.hostname == "127.0.0.1" and parts.port is not None
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        conn.request("POST", "/v1/conversations", b'{"contact_id":"ct_ref"}', headers)
        answer = conn.getresponse()
        return answer.status, answer.read()
    finally:
        conn.close()


def _rows(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        (count,) = conn.execute("SELECT count(*) FROM conversations").fetchone()
    return int(count)


def test_the_reference_app_creates_a_conversation_that_convrisk_reads_back_as_answered(
    tmp_path: Path, env: dict[str, str]
) -> None:
    db = fresh_database(tmp_path / "ref.db")
    argv = [sys.executable, str(REF_APP), "--token", TOKEN, "--db", str(db)]
    with started("reference", argv, tmp_path / "ref.log", env) as server:
        status, body = _post(server.url, TOKEN)
    assert status == 201
    answered = json.loads(body)
    got = run(env, "--db", str(db), "conv", "get", answered["id"], "-o", "json")
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout) == answered
    assert answered["contact_id"] == "ct_ref"


def test_the_reference_app_refuses_a_wrong_token_and_stores_nothing(
    tmp_path: Path, env: dict[str, str]
) -> None:
    db = fresh_database(tmp_path / "ref.db")
    argv = [sys.executable, str(REF_APP), "--token", TOKEN, "--db", str(db)]
    with started("reference", argv, tmp_path / "ref.log", env) as server:
        status, _ = _post(server.url, "not-the-token")
    assert status == 401
    assert _rows(db) == 0


def test_the_measurement_creates_rows_through_both_servers(tmp_path: Path) -> None:
    figures, _ = measure(str(CONVRISK), tmp_path, seconds=0.3, rounds=1, use_wrk=False)
    by_server = figures["http.client"]
    assert by_server["serve"].rps[0] > 0 and by_server["reference"].rps[0] > 0
    # Each server's own copy of the fresh database holds what it was sent (warm-up included).
    assert _rows(tmp_path / "serve.db") > 0 and _rows(tmp_path / "reference.db") > 0
    assert _rows(tmp_path / "fresh.db") == 0
