"""`serve` of a read-only profile (issue 29, finding 5): the installed convrisk refuses to start
without --read-only, whether the profile comes from --profile or from CONVRISK_PROFILE, and with
--read-only answers every write with a 403 permission_error and writes nothing."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from convrisk.api_client import Client
from convrisk.local_backend.backend import LocalBackend

from .both_backends import TOKEN, Remote, isolated_env, serving
from .console import run

# How the read-only profile is chosen: global options before `serve`, and the environment.
CHOSEN = {
    "--profile": (("--profile", "audit"), {}),
    "CONVRISK_PROFILE": ((), {"CONVRISK_PROFILE": "audit"}),
}


def audit_profile(home: Path) -> tuple[Path, dict[str, str], list[str]]:
    """A read-only profile `audit` over a database holding a conversation and a risk profile:
    the database, the environment, and the two ids."""
    db_path = home / "audit.db"
    with Client(LocalBackend(db_path)) as client:
        conv = client.conversations.create({"contact_id": "ct_audit"})["id"]
        risk = client.risk_profiles.create(
            {"customer_id": "cus_a", "profile_type": "low", "score": 10, "details": {}}
        )
    env = isolated_env(home)
    for key, value in (("db", str(db_path)), ("read_only", "true")):
        set_key = run(env, "config", "set", "--profile", "audit", key, value)
        assert set_key.returncode == 0, set_key.stderr
    return db_path, env, [conv, risk["id"]]


def records(db_path: Path) -> list[str]:
    """Every record of the database, as JSON lines: equal before and after means unchanged."""
    with LocalBackend(db_path) as backend:
        return backend.snapshot()


@pytest.mark.parametrize("chosen", CHOSEN)
def test_serve_of_a_read_only_profile_without_read_only_refuses_to_start(
    tmp_path: Path, chosen: str
) -> None:
    db_path, env, _ = audit_profile(tmp_path)
    before = records(db_path)
    options, extra = CHOSEN[chosen]
    snapshot = tmp_path / "fixtures.jsonl"
    snapshot.write_text("".join(line + "\n" for line in before[:1]))
    for args, param in (
        ((), "--read-only"),
        (("--load", str(snapshot)), "--read-only"),
        (("--read-only", "--load", str(snapshot)), "--load"),
    ):
        result = run({**env, **extra}, *options, "serve", "--port", "0", "--token", TOKEN, *args)
        assert result.returncode == 2, (args, result.stderr)
        lines = result.stderr.splitlines()
        assert len(lines) == 1, (args, lines)
        assert lines[0].startswith("Error: The profile 'audit' is read-only"), lines
        assert param in lines[0] and lines[0].endswith("nothing was started."), lines
        assert "listening" not in result.stderr
    assert records(db_path) == before
    assert not db_path.with_name("audit.db.token").exists()


@pytest.mark.parametrize("chosen", CHOSEN)
def test_read_only_serve_answers_every_write_403_and_writes_nothing(
    tmp_path: Path, chosen: str
) -> None:
    db_path, _, (conv, risk) = audit_profile(tmp_path)
    before = records(db_path)
    options, extra = CHOSEN[chosen]
    with serving(tmp_path, "--read-only", before=options, db_path=db_path, env=extra) as served:
        assert any("read-only (--read-only)" in line for line in served.banner), served.banner
        assert any(str(db_path) in line for line in served.banner), served.banner
        writes = [
            ("POST", "/v1/conversations", {"contact_id": "ct_new"}),
            ("PUT", f"/v1/conversations/{conv}", {"is_muted": True}),
            ("PATCH", f"/v1/conversations/{conv}", {"is_muted": True}),
            ("DELETE", f"/v1/conversations/{conv}", None),
            (
                "POST",
                "/v1/risk-profiles",
                {"customer_id": "c", "profile_type": "t", "score": 1, "details": {}},
            ),
            ("PUT", f"/v1/risk-profiles/{risk}", {"score": 99}),
            ("DELETE", f"/v1/risk-profiles/{risk}", None),
            ("POST", "/__sandbox/reset", None),
            ("POST", "/__sandbox/restore", None),
            ("DELETE", "/__sandbox/requests", None),
        ]
        auth = {"Authorization": f"Bearer {TOKEN}"}
        with httpx.Client(base_url=served.url, headers=auth) as http:
            for method, path, body in writes:
                answer = http.request(method, path, json=body)
                assert answer.status_code == 403, (method, path, answer.text)
                error = answer.json()["error"]
                assert error["type"] == "permission_error", (method, path, error)
                assert "read-only" in error["message"] and path in error["message"]
            # A write without the token is still told about the token first.
            anonymous = httpx.post(f"{served.url}/v1/conversations", json={"contact_id": "x"})
            assert anonymous.status_code == 401
            listed = http.get("/v1/conversations")
            assert listed.status_code == 200
            assert [row["id"] for row in listed.json()["data"]] == [conv]
        created = Remote(tmp_path, served.url, TOKEN).run("conv", "create", "--contact-id", "c")
        assert created.returncode == 4, created.stderr
        assert created.stderr.startswith("Error: This server is read-only"), created.stderr
        assert "refused the token" not in created.stderr and created.stdout == ""
    assert records(db_path) == before
