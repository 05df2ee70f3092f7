"""The bare reference for `serve`'s creates: Starlette + uvicorn + stdlib sqlite3, nothing more.

    python bench/ref_app.py --db FILE --token TOKEN [--port 0]

It answers `POST /v1/conversations` on a convrisk database file (WAL, the conversations table of
convrisk's own schema; it must exist already), as a competent minimal app would: the bearer
token checked (constant time), the JSON body parsed, one of contact_id or group_id required,
one row inserted with a new time-sortable id and created_at and committed, 201 with the
conversation's JSON. No idempotency keys, no request journal, no log of its own. uvicorn runs
with its defaults, which pick what serve runs on (uvloop, httptools), and its own access log.
It listens on 127.0.0.1 and says `listening on URL` on stderr once it does.
"""

from __future__ import annotations

import argparse
import base64
import hmac
import json
import os
import socket
import sqlite3
import sys
import time
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from convrisk.api_client.resources import CONVERSATIONS

INSERT = "INSERT INTO conversations (id, contact_id, group_id, created_at) VALUES (?, ?, ?, ?)"
# base32hex's digits to Crockford's (the alphabet of convrisk's ids): both sort as numbers do.
_CROCKFORD = str.maketrans("IJKLMNOPQRSTUV", "JKMNPQRSTVWXYZ")
# A new conversation before its values: every field of the description at its default (a
# boolean false, the others null), in the record's order.
BLANK = {field.name: field.default for field in CONVERSATIONS.fields}


def new_id() -> str:
    """A time-sortable id of convrisk's form: 48 bits of milliseconds and 80 random bits, in
    26 Crockford base32 digits."""
    raw = (time.time_ns() // 1_000_000).to_bytes(6, "big") + os.urandom(10)
    return "conv_" + base64.b32hexencode(raw).decode("ascii").rstrip("=").translate(_CROCKFORD)


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message}}, status_code=status)


def make_app(db: str, token: str) -> Starlette:
    """The app: one route, one sqlite3 connection (WAL, synchronous=NORMAL as serve's)."""
    conn = sqlite3.connect(db, check_same_thread=False)
    conn.execute("PRAGMA synchronous = NORMAL")
    expected = f"Bearer {token}".encode()

    async def create(request: Request) -> Response:
        given = request.headers.get("authorization", "").encode("latin-1", "replace")
        if not hmac.compare_digest(given, expected):
            return _error(401, "Invalid bearer token.")
        try:
            body: Any = json.loads(await request.body())
        except ValueError:
            return _error(400, "The request body is not valid JSON.")
        if not isinstance(body, dict):
            return _error(400, "The request body must be a JSON object.")
        contact_id, group_id = body.get("contact_id"), body.get("group_id")
        if not (isinstance(contact_id, str) ^ isinstance(group_id, str)):
            return _error(400, "Exactly one of contact_id and group_id is required.")
        record = {
            **BLANK,
            "id": new_id(),
            "contact_id": contact_id,
            "group_id": group_id,
            "created_at": int(time.time()),
        }
        with conn:  # one transaction, committed
            conn.execute(INSERT, (record["id"], contact_id, group_id, record["created_at"]))
        return JSONResponse(record, status_code=201)

    return Starlette(routes=[Route("/v1/conversations", create, methods=["POST"])])


def main(argv: list[str] | None = None) -> None:
    """Listen on loopback and serve until SIGINT or SIGTERM."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="an existing convrisk database file")
    parser.add_argument("--token", required=True)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    if not os.path.isfile(args.db):
        raise SystemExit(f"ref_app: no database file at {args.db}")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    sock.listen(2048)
    server = uvicorn.Server(uvicorn.Config(make_app(args.db, args.token)))
    host, port = sock.getsockname()[:2]
    print(f"ref_app: listening on http://{host}:{port}", file=sys.stderr, flush=True)
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
