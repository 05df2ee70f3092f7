"""The one schemathesis hook of the CI run against `convrisk serve` (SCHEMATHESIS_HOOKS=...).

An Idempotency-Key names one logical request (DESIGN 1): the same key with another body is a
400, and a repeat replays the first answer. schemathesis draws each request's values on their
own, so short keys ("0", "a") repeat with other bodies and it reports those 400s as schema-valid
requests refused (ST202); no schema can ask a generator for a value unique across requests. Each
request that carries a valid key gets a fresh one here, as a real client's uuid4 would be. Keys
that are invalid on purpose (negative tests) are left alone. Nothing else is changed: the
restore route's body, once a hook and a config file, is described so that schemathesis needs
neither (docs/design/sandbox.md).
"""

from __future__ import annotations

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
