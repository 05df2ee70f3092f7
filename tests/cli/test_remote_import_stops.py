"""A remote import that meets a stopping error part way reports exactly what the service made:
each created record once, nothing it did not make, and the error once (exit 4)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from tests import described
from tests.cli.conftest import Invoke
from tests.loopback import JSONService, on_loopback, running, url_of

TOKEN = "tok_import_stop_0123456789"
ACCEPTED = 40  # creates the service makes before it starts refusing the token
RECORDS = 200
IN_FLIGHT = 8  # api_client.remote.session.CREATE_MANY_CONCURRENCY


class RevokingService(JSONService):
    """Creates conversations until ACCEPTED are made, then answers 401 (a revoked token)."""

    lock = threading.Lock()
    made: ClassVar[list[str]] = []
    posts: ClassVar[int] = 0

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with self.lock:
            RevokingService.posts += 1
            if len(self.made) >= ACCEPTED:
                conversation = None
            else:
                conversation = f"conv_{len(self.made):04d}"
                self.made.append(conversation)
        if conversation is None:
            self.send_json(401, {"error": {"type": "authentication_error", "message": "revoked"}})
            return
        self.send_json(200, described.conversation(conversation, 1_700_000_000, contact_id="c"))


@pytest.fixture
def remote(monkeypatch: pytest.MonkeyPatch, home: object) -> Iterator[str]:
    """The revoking service on loopback, with CONVRISK_BASE_URL/TOKEN pointing at it."""
    RevokingService.made = []
    RevokingService.posts = 0
    with running(on_loopback(RevokingService)) as server:
        monkeypatch.setenv("CONVRISK_BASE_URL", url_of(server))
        monkeypatch.setenv("CONVRISK_TOKEN", TOKEN)
        yield url_of(server)


@pytest.mark.e2e  # slow: about a second, or more (the quick loop leaves it out)
def test_an_import_stopped_by_a_revoked_token_reports_exactly_what_was_created(
    remote: str, invoke: Invoke, tmp_path: Path
) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps({"contact_id": f"c_{n}"}) + "\n" for n in range(RECORDS)))
    result = invoke("conv", "import", str(path), "-o", "jsonl")
    assert result.code == 4, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert sorted(row["id"] for row in rows) == sorted(RevokingService.made)
    assert all(row["status"] == "created" for row in rows)
    assert RevokingService.posts <= ACCEPTED + IN_FLIGHT
    assert result.stderr.count("revoked") == 1
