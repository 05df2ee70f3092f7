"""schemathesis hooks for the CI run against `convrisk serve` (SCHEMATHESIS_HOOKS=...).

A snapshot (`POST /__sandbox/restore`, application/x-ndjson) is sent as it was generated.

An Idempotency-Key names one logical request (DESIGN 1): the same key with another body is a
400, and a repeat replays the first answer, even for an object deleted since. Generated values
repeat ("0", "a"...), so each request that carries a valid key gets a fresh one, as a real
client's uuid4 would be. Keys that are invalid on purpose (negative tests) are left alone.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import schemathesis

_VALID_KEY = re.compile(r"[!-~]([ -~]{0,253}[!-~])?")


@schemathesis.hook
def before_call(context: Any, case: Any, **kwargs: Any) -> None:
    """Give every request with a valid Idempotency-Key a key of its own."""
    headers = case.headers or {}
    for name in list(headers):
        # Spaces around a value are not part of it (HTTP strips them).
        key = str(headers[name]).strip(" ")
        if name.lower() == "idempotency-key" and _VALID_KEY.fullmatch(key):
            headers[name] = str(uuid.uuid4())


@schemathesis.serializer("application/x-ndjson")
def ndjson(ctx: Any, value: Any) -> bytes:
    """A snapshot body (`POST /__sandbox/restore`): text as UTF-8, another value (a negative
    case) as its JSON text, which is no snapshot."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8", errors="surrogatepass")
    return json.dumps(value).encode("utf-8")
