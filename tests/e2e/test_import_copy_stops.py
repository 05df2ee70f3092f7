"""`import --copy` against a service that takes the creates and then refuses the token on the
updates: every record it made is reported, none silently dropped (issue 18, items 7 and 10)."""

from __future__ import annotations

import itertools
import json
import subprocess
import threading
from pathlib import Path

from tests.loopback import JSONService, on_loopback, running, url_of

from .both_backends import isolated_env
from .console import CONVRISK, SAFETY_TIMEOUT

MADE: list[str] = []
LOCK = threading.Lock()
NUMBERS = itertools.count(1)


class CreatesThenRefuses(JSONService):
    """POST makes a conversation (201); PUT and POST to an id refuse the token (401)."""

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        if self.path.rstrip("/") != "/v1/conversations":
            self.send_json(401, {"error": {"type": "authentication_error", "message": "no"}})
            return
        with LOCK:
            ident = f"conv_{next(NUMBERS):026d}"
            MADE.append(ident)
        record = {"id": ident, "created_at": 1714564800, "is_muted": False, **body}
        self.send_json(201, record)

    def do_PUT(self) -> None:
        self.send_json(401, {"error": {"type": "authentication_error", "message": "no"}})

    do_PATCH = do_PUT


def test_a_copy_whose_updates_are_refused_reports_every_record_it_made(tmp_path: Path) -> None:
    lines = [{"id": f"conv_{n}", "contact_id": f"c_{n}", "is_muted": True} for n in range(5)]
    text = "".join(json.dumps(line) + "\n" for line in lines)
    env = isolated_env(tmp_path / "home")
    with running(on_loopback(CreatesThenRefuses)) as server:
        env |= {"CONVRISK_BASE_URL": url_of(server), "CONVRISK_TOKEN": "t" * 20}
        result = subprocess.run(
            [CONVRISK, "conv", "import", "-", "--copy", "-o", "jsonl"],
            input=text,
            env=env,
            capture_output=True,
            text=True,
            timeout=SAFETY_TIMEOUT,
        )
    assert result.returncode == 4, result.stderr
    rows = [json.loads(x) for x in result.stdout.splitlines()]
    assert sorted(r["id"] for r in rows) == sorted(MADE) and len(MADE) == 5
    assert all(r["status"] == "failed" for r in rows)
    assert all("other fields could not be set" in r["error"]["message"] for r in rows)
