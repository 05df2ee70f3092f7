"""A stand-in for a `convrisk serve` sandbox on 127.0.0.1: its admin routes (`/__sandbox/...`,
as the brief's interface states them) over a journal and a store the test sets."""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Sequence
from typing import Any, ClassVar
from urllib.parse import parse_qs, urlsplit

from tests.loopback import JSONService

TOKEN = "sk_test_sandbox_0123456789"


def entry(
    seq: int, method: str, path: str, status: int | None = 200, **extra: Any
) -> dict[str, Any]:
    """A journal entry as the sandbox records one."""
    return {
        "seq": seq,
        "time": "2026-11-25T07:00:00.000Z",
        "method": method,
        "path": path,
        "query": "",
        "status": status,
        "idempotency_key": None,
        "body": None,
        "body_truncated": False,
        "fault": None,
        "duration_ms": 1.5,
        **extra,
    }


class FakeSandbox(JSONService):
    """The admin routes over `journal` and `records` (class state: one server per test)."""

    journal: ClassVar[list[dict[str, Any]]] = []
    records: ClassVar[list[dict[str, Any]]] = []
    dropped: ClassVar[int] = 0
    seen: ClassVar[list[tuple[str, str, bytes]]] = []

    def _answer(self, method: str) -> None:
        url = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        type(self).seen.append((method, self.path, body))
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
            error = {"type": "authentication_error", "message": "Invalid token."}
            self.send_json(401, {"error": error})
            return
        route = (method, url.path)
        if route == ("GET", "/__sandbox/requests"):
            query = {name: values[0] for name, values in parse_qs(url.query).items()}
            data = [
                item
                for item in self.journal
                if item["method"] == query.get("method", item["method"])
                and fnmatch.fnmatchcase(item["path"], query.get("path", "*"))
                and str(item["status"]) == query.get("status", str(item["status"]))
            ]
            total = len(self.journal)
            self.send_json(200, {"data": data, "dropped": self.dropped, "total": total})
        elif route == ("POST", "/__sandbox/reset"):
            self.journal.clear()
            self.records.clear()
            self.send_json(200, {"reset": True})
        elif route == ("GET", "/__sandbox/snapshot"):
            lines = b"".join(json.dumps(r).encode() + b"\n" for r in self.records)
            self.send_response(200)
            self.send_header("Content-Type", "application/x-ndjson")
            self.send_header("Content-Length", str(len(lines)))
            self.end_headers()
            self.wfile.write(lines)
        elif route == ("POST", "/__sandbox/restore"):
            new = [json.loads(line) for line in body.splitlines() if line.strip()]
            self.records[:] = new
            counts = {
                name: sum(1 for r in new if r["resource"] == name)
                for name in ("conversations", "risk_profiles")
            }
            self.send_json(200, {"restored": counts})
        else:
            error = {"type": "invalid_request_error", "message": "Unknown route."}
            self.send_json(404, {"error": error})

    def do_GET(self) -> None:
        """An admin read."""
        self._answer("GET")

    def do_POST(self) -> None:
        """An admin write."""
        self._answer("POST")

    @classmethod
    def fresh(
        cls, journal: Sequence[dict[str, Any]], records: Sequence[dict[str, Any]] = ()
    ) -> type[FakeSandbox]:
        """A handler class of its own, with this journal and these records."""
        return type(
            "Sandbox",
            (cls,),
            {"journal": list(journal), "records": list(records), "dropped": 0, "seen": []},
        )
