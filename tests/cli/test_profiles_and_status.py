"""`status` in-process, on the local database and against a serve over HTTP: the backend it
talks to, one round trip, and a refused token never shown. The installed script runs each once
against `convrisk serve` (tests/e2e/test_profiles_and_status.py)."""

from __future__ import annotations

import json

from .conftest import REMOTE_TOKEN
from .e2e_twin import Twin
from .e2e_twin import twin as twin  # a fixture: each test on the local db and on serve


def test_status_shows_the_backend_and_one_good_round_trip(twin: Twin) -> None:
    result = twin.run("status", "-o", "json")
    assert result.code == 0, result.stderr
    shown = json.loads(result.stdout)
    assert shown["ok"] is True and shown["exit_code"] == 0 and shown["ms"] >= 0
    assert REMOTE_TOKEN not in result.stdout + result.stderr
    if twin.remote:
        assert (shown["backend"], shown["base_url"]) == ("remote", twin.url)
        assert shown["token_source"] == "CONVRISK_TOKEN"
    else:
        assert (shown["backend"], shown["db"], shown["token_source"]) == (
            "local",
            str(twin.db_path),
            None,
        )
    table = twin.run("status")
    assert table.code == 0
    lines = table.stdout.splitlines()
    assert [line.split()[0] for line in lines] == [
        "profile",
        "backend",
        "token",
        "writes",
        "service",
    ]
    assert lines[3] == "writes   allowed"
    assert lines[4].startswith("service  ok (")


def test_status_with_a_refused_token_exits_4_and_never_shows_it(twin: Twin) -> None:
    if not twin.remote:
        broken = twin.run("status", "-o", "json", CONVRISK_DB=str(twin.home / "no" / "x.db"))
        assert broken.code == 2  # a database folder that does not exist
        return
    result = twin.run("status", "-o", "json", CONVRISK_TOKEN="wrong-token-1234567890")
    assert result.code == 4
    shown = json.loads(result.stdout)
    assert (shown["ok"], shown["exit_code"]) == (False, 4)
    assert shown["error"]["status"] == 401
    assert "wrong-token" not in result.stdout + result.stderr
    table = twin.run("status", CONVRISK_TOKEN="wrong-token-1234567890")
    assert table.code == 4 and "failed, exit code 4" in table.stdout
