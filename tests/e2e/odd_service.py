"""A service on loopback whose records are odd (fields missing, extra, oddly typed), and
convrisk run against it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import parse_qsl, urlsplit

from tests.loopback import JSONService

from .both_backends import isolated_env
from .console import CONVRISK, SAFETY_TIMEOUT

CONVERSATIONS: list[dict[str, Any]] = [
    {"id": "conv_1", "created_at": 1714564800123, "extra": "x"},
    {
        "id": "conv_2",
        "is_pinned": "yes",
        "is_muted": 1,
        "contact_id": 42,
        "group_id": {"nested": [1, None, "é"]},
        "archived_at": "last tuesday",
        "created_at": 1714564800.5,
        "labels": ["vip", None],
    },
    {"id": "conv_3"},
]


PROFILES: list[dict[str, Any]] = [
    {"id": "rp_1", "score": "high", "details": [1, 2], "owner": None},
    {"id": "rp_2", "customer_id": "c", "score": 1e300, "details": {"f": 0.1, "big": 2**70}},
]


OBJECTS = {f"/v1/conversations/{o['id']}": o for o in CONVERSATIONS} | {
    f"/v1/risk-profiles/{o['id']}": o for o in PROFILES
}


PAGES = {
    "/v1/conversations": {"object": "list", "has_more": False, "data": CONVERSATIONS, "ids": [1]},
    "/v1/risk-profiles": {"has_more": False, "data": PROFILES, "url": "/v1/risk-profiles"},
}


class OddRecords(JSONService):
    """Answers each known path with its object, as JSON; anything else is a 404."""

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        answer = OBJECTS.get(path) or PAGES.get(path)
        if answer is None:
            self.send_json(404, {"error": {"message": "no"}})
        else:
            self.send_json(200, answer)


def stdout_against(base_url: str, home: Path, *args: str) -> str:
    """stdout of `convrisk --base-url BASE_URL ARGS` (no retries), which must succeed."""
    result = subprocess.run(
        [CONVRISK, "--base-url", base_url, *args],
        env=isolated_env(home, CONVRISK_TOKEN="tok", CONVRISK_MAX_RETRIES="0"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=SAFETY_TIMEOUT,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


# A line a hostile service would like `status` to print as its own, after a line break of each
# kind that a terminal or a reader splits lines on.
FORGED = "service  ok (1.0 ms for a list of one conversation)"
BREAKS = ("\n", "\r", "\r\n", "\u2028", "\u2029", "\x85", "\x0b", "\x0c")


def token_echoes(token: str) -> list[str]:
    """The token as a service may echo it: as it is, JSON-escaped (lower and upper case hex,
    and only partly), percent-encoded."""
    return [
        token,
        "".join(f"\\u{ord(c):04x}" for c in token),
        "".join(f"\\u{ord(c):04X}" for c in token),
        "".join(f"\\u{ord(c):04x}" if i % 2 else c for i, c in enumerate(token)),
        "".join(f"%{ord(c):02X}" for c in token),
    ]


class LyingErrors(JSONService):
    """Refuses every request (HTTP 400) with an error message that holds forged lines after
    every kind of line break, and echoes the request's token in each form of token_echoes()."""

    def do_GET(self) -> None:
        token = self.headers.get("Authorization", "").removeprefix("Bearer ")
        lines = "".join(f"{brk}{FORGED}" for brk in BREAKS)
        # Written by hand: json.dumps would escape the backslashes of the echoes.
        echoes = " ".join(token_echoes(token))
        message = json.dumps(f"refused{lines} token:")[1:-1] + " " + echoes
        body = '{"error": {"type": "invalid_request_error", "message": "' + message + '"}}'
        self.send_json(400, body.encode())


# Numbers JSON cannot hold (RFC 8259), as a service may write them (Python's json.dumps writes
# NaN and Infinity; 1e400 is a number too large for a float), and the string convrisk prints.
NON_FINITE = [
    ("1e400", "Infinity"),
    ("-1e400", "-Infinity"),
    ("NaN", "NaN"),
    ("Infinity", "Infinity"),
]


def non_finite_profile(index: int, written: str) -> str:
    """A risk profile holding `written` in its score and deep in its details, as compact JSON."""
    return (
        f'{{"id":"rp_nf{index}","customer_id":"c","profile_type":"t","score":{written},'
        f'"details":{{"a":[{written},{{"b":{written}}}],"f":0.5}},"created_at":1714564800}}'
    )


def printed_profile(index: int, printed: str) -> dict[str, Any]:
    """`non_finite_profile` as convrisk prints it: each such number the string `printed`."""
    return {
        "id": f"rp_nf{index}",
        "customer_id": "c",
        "profile_type": "t",
        "score": printed,
        "details": {"a": [printed, {"b": printed}], "f": 0.5},
        "created_at": 1714564800,
    }


# A record with only finite numbers, between them on the list.
FINITE_PROFILE = (
    '{"id":"rp_ok","customer_id":"c","profile_type":"t","score":1.5,"details":{},'
    '"created_at":1714564800}'
)


class NonFiniteRecords(JSONService):
    """Risk profiles holding NaN, Infinity, -1e400...: each by id (GET, and PUT answered with
    the record as it is), and a list (`limit` and `starting_after` followed, so `--all` pages).
    Every request's method and path is kept in `seen`."""

    seen: ClassVar[list[str]] = []
    records: ClassVar[dict[str, str]] = {
        f"rp_nf{n}": non_finite_profile(n, written) for n, (written, _) in enumerate(NON_FINITE)
    } | {"rp_ok": FINITE_PROFILE}

    def do_GET(self) -> None:
        self.seen.append(f"GET {self.path}")
        parts = urlsplit(self.path)
        if parts.path == "/v1/risk-profiles":
            query = dict(parse_qsl(parts.query))
            ids = sorted(self.records)
            start = ids.index(query["starting_after"]) + 1 if "starting_after" in query else 0
            chosen = ids[start : start + int(query.get("limit", "10"))]
            more = "true" if start + len(chosen) < len(ids) else "false"
            items = ",".join(self.records[id] for id in chosen)
            self.send_json(200, f'{{"has_more":{more},"data":[{items}]}}'.encode())
        else:
            self._one(parts.path)

    def do_PUT(self) -> None:
        self.seen.append(f"PUT {self.path}")
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self._one(urlsplit(self.path).path)

    def _one(self, path: str) -> None:
        record = self.records.get(path.removeprefix("/v1/risk-profiles/"))
        if record is None:
            self.send_json(404, {"error": {"type": "invalid_request_error", "message": "no"}})
        else:
            self.send_json(200, record.encode())
