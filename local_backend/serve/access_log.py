"""The log of `convrisk serve`: one line per request (text or JSON), the reasons of 5xx answers,
and uvicorn's own warnings and errors; never a token or a body."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

from convrisk.api_client.endpoint import Scrubber
from convrisk.api_client.text import printable, safe_line

Log = Callable[[str], None]
# The formats of the log (`serve --log-format`).
LOG_FORMATS = ("text", "json")


class AccessLog:
    """One line per request (text or JSON), never a token or a body; data is escaped."""

    def __init__(self, sink: Log | None, fmt: str, token: str) -> None:
        if fmt not in LOG_FORMATS:
            raise ValueError(f"unknown log format {fmt!r}")
        self._sink = sink
        self._json = fmt == "json"
        self._scrubber = Scrubber(token)

    def request(
        self,
        client: str,
        method: str,
        path: str,
        query: str,
        status: int | None,
        seconds: float,
        fault: str | None = None,
    ) -> None:
        """The line of one request; status None when no answer was sent."""
        if self._sink is None:
            return
        if self._json:
            record: dict[str, Any] = {
                "time": _now(),
                "client": client,
                "method": method,
                "path": path,
                "query": query,
                "status": status,
                "duration_ms": round(seconds * 1000, 2),
            }
            if fault is not None:
                record["fault"] = fault
            line = json.dumps(record)
        else:
            target = path + ("?" + query if query else "")
            shown = "-" if status is None else str(status)
            line = (
                f"{_now()} {client} {_shown(method)} {_shown(target)} {shown} "
                f"{seconds * 1000:.1f}ms" + (f" fault={fault}" if fault else "")
            )
        self._emit(line)

    def violation(self, method: str, path: str, found: dict[str, str]) -> None:
        """One way a proxied request or answer broke the OpenAPI document (`serve --proxy-to`):
        `found` is a violation's rule, where and message."""
        if self._sink is None:
            return
        if self._json:
            line = json.dumps(
                {"time": _now(), "level": "warning", "method": method, "path": path}
                | {"violation": found["rule"], "where": found["where"], "message": found["message"]}
            )
        else:
            where = f" {found['where']}" if found["where"] else ""
            line = (
                f"{_now()} convrisk serve: violation: {_shown(method)} {_shown(path)}: "
                f"{found['rule']}{_shown(where)}: {safe_line(found['message'])}"
            )
        self._emit(line)

    def error(self, method: str, path: str, detail: str) -> None:
        """What went wrong inside a request that was answered 5xx."""
        if self._sink is None:
            return
        if self._json:
            line = json.dumps(
                {"time": _now(), "level": "error", "method": method, "path": path, "error": detail}
            )
        else:
            body = "\n".join("    " + printable(part) for part in detail.rstrip().splitlines())
            line = f"{_now()} convrisk serve: error in {_shown(method)} {_shown(path)}:\n"
            line += body
        self._emit(line)

    def notice(self, level: str, message: str) -> None:
        """A message of the server itself (uvicorn's warnings and errors)."""
        if self._sink is None:
            return
        if self._json:
            line = json.dumps({"time": _now(), "level": level, "message": message})
        else:
            line = f"{_now()} convrisk serve: {level}: {safe_line(message)}"
        self._emit(line)

    def _emit(self, line: str) -> None:
        line = self._scrubber.text(line)
        assert self._sink is not None
        self._sink(line)


def _shown(text: str) -> str:
    """Request data for a text log line: control characters escaped, and a backslash doubled
    so that a literal `\\x1b` sent by a client never reads like an escaped ESC."""
    return printable(text, escape_backslash=True)


# The last second formatted (`_now`), as (second, text): a log line is written per request.
_second: tuple[int, str] = (-1, "")


def _now() -> str:
    """UTC time with milliseconds, ISO 8601."""
    global _second
    now = time.time()
    second = int(now)
    cached = _second  # read once: another thread may set it meanwhile
    if second != cached[0]:
        cached = _second = (second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second)))
    return f"{cached[1]}.{int(now * 1000) % 1000:03d}Z"


class UvicornNotices(logging.Handler):
    """uvicorn's own warnings and errors (its `uvicorn.error` logger), into our log."""

    def __init__(self, log: AccessLog) -> None:
        super().__init__(logging.WARNING)
        self._log = log

    def emit(self, record: logging.LogRecord) -> None:
        """One record as one notice (a traceback, if any, follows the message)."""
        message = record.getMessage()
        if record.exc_info:
            message += "\n" + logging.Formatter().formatException(record.exc_info)
        self._log.notice(record.levelname.lower(), message)
