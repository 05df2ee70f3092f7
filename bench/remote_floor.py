"""The floor under remote `--all`: every page of a `convrisk serve` list walked by an HTTP client
alone, with no check and no output, so that a whole process of it can be timed as convrisk's is.

    python bench/remote_floor.py httpcore|http.client BASE_URL TOKEN [PATH]

Pages of 100 (the interface's most), each next page asked for after the last id of this one,
one keep-alive connection, one request at a time. `httpcore` is the client convrisk's list GETs
go through (httpx's own transport layer); `http.client` the standard library's, for scale.
Exits 1 when a page is not 200. Prints nothing.
"""

from __future__ import annotations

import sys
import urllib.parse
from collections.abc import Callable


def _walk(get: Callable[[str], tuple[int, bytes]], path: str) -> None:
    """Ask for every page in turn, each after the last id of the one before."""
    after = ""
    for _ in range(10_000_000):  # bounded: at most ten million pages
        status, body = get(f"{path}?limit=100" + (f"&starting_after={after}" if after else ""))
        if status != 200:
            raise SystemExit(f"HTTP {status}")
        if b'"has_more":true' not in body:
            return
        at = body.rfind(b'{"id":"')
        after = body[at + 7 : body.find(b'"', at + 7)].decode()


def main(argv: list[str]) -> None:
    """Walk the pages with the client named."""
    client, base_url, token = argv[:3]
    path = argv[3] if len(argv) > 3 else "/v1/conversations"
    url = urllib.parse.urlsplit(base_url)
    host, port = url.hostname or "127.0.0.1", url.port or 80
    headers = {"Authorization": f"Bearer {token}"}
    if client == "httpcore":
        import httpcore

        pool = httpcore.ConnectionPool()

        def get(target: str) -> tuple[int, bytes]:
            answer = pool.request(
                "GET", f"{base_url.rstrip('/')}{target}", headers=list(headers.items())
            )
            return answer.status, answer.content

    elif client == "http.client":
        import http.client

        conn = http.client.HTTPConnection(host, port)

        def get(target: str) -> tuple[int, bytes]:
            conn.request("GET", target, headers=headers)
            answer = conn.getresponse()
            return answer.status, answer.read()

    else:
        raise SystemExit(f"unknown client {client!r}: httpcore or http.client")
    _walk(get, path)


if __name__ == "__main__":
    main(sys.argv[1:])
