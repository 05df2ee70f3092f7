"""Injected trouble for `convrisk serve --latency/--faults/--seed` and the aimed fault rules of
`/__sandbox/faults`: the seeded draws, the answers of injected errors, what a rule that fires
makes of an answer, and the open connections a dropped-connection fault closes."""

from __future__ import annotations

import asyncio
import json
import random
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from convrisk.api_client.errors import ServiceError, error_class_for_status
from convrisk.api_client.params import MAX_BODY_BYTES
from convrisk.local_backend.sandbox.fault_rules import Rule
from convrisk.local_backend.sandbox.wire import Answer, json_answer

RETRY_AFTER_SECONDS = 1
FAULTS = ("500", "503", "429", "drop", "drop-after")
MAX_LATENCY_MS = 60_000


@dataclass(frozen=True)
class Chaos:
    """Injected trouble: a delay in [low, high] ms before each API answer, and a fault rate."""

    latency_ms: tuple[int, int] = (0, 0)
    fault_rate: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        low, high = self.latency_ms
        if not 0 <= low <= high <= MAX_LATENCY_MS:
            raise ValueError(f"latency must lie within 0..{MAX_LATENCY_MS} ms, low <= high")
        if not 0.0 <= self.fault_rate <= 1.0:
            raise ValueError("the fault rate must lie within 0..1")

    @property
    def active(self) -> bool:
        """Whether anything is injected at all."""
        return self.latency_ms[1] > 0 or self.fault_rate > 0


class Dice:
    """The seeded draws of one server, in request order: a delay, and a fault or None."""

    def __init__(self, chaos: Chaos) -> None:
        self._chaos = chaos
        self.rewind()

    def rewind(self) -> None:
        """Start the draws over, as at start (`POST /__sandbox/reset`)."""
        # Separate streams: the faults of a seed stay the same with or without --latency.
        self._faults = random.Random(f"faults:{self._chaos.seed}")
        self._latency = random.Random(f"latency:{self._chaos.seed}")

    def roll(self) -> tuple[float, str | None]:
        """Seconds to wait, and the fault to inject (None: answer normally)."""
        low, high = self._chaos.latency_ms
        delay = self._latency.uniform(low, high) / 1000 if high else 0.0
        fault = None
        if self._chaos.fault_rate and self._faults.random() < self._chaos.fault_rate:
            fault = self._faults.choice(FAULTS)
        return delay, fault


def injected(status: int) -> Answer:
    """The answer of an injected fault (marked as injected, so nobody hunts a real bug)."""
    phrase = {500: "server error", 503: "service unavailable", 429: "rate limit"}[status]
    error = ServiceError(f"Injected fault (convrisk serve --faults): {phrase}.", status=status)
    headers: tuple[tuple[str, str], ...] = ()
    if status in (503, 429):
        headers = (("retry-after", str(RETRY_AFTER_SECONDS)),)
    return json_answer(status, error.to_body(), headers)


# Statuses whose answer has no body.
_NO_BODY = (204, 205, 304)


def rule_error(rule: Rule) -> Answer:
    """The answer of a rule whose status is an error: the error shape, naming the rule, with
    Retry-After when the rule gives one; nothing was done."""
    assert rule.status is not None
    try:
        phrase = HTTPStatus(rule.status).phrase
    except ValueError:
        phrase = "error"
    error = error_class_for_status(rule.status)(
        f"Injected fault (sandbox fault rule {rule.id}): {rule.status} {phrase}.",
        status=rule.status,
    )
    return json_answer(rule.status, error.to_body(), _retry_after(rule))


def shaped(rule: Rule, answer: Answer) -> Answer:
    """The answer as a rule that fired makes it: the rule's status (a status under 400 on the
    operation's own answer, with Retry-After when given), then its jq program on the body.

    The program runs right here, on the event loop: jq holds the GIL while it runs, so a thread
    would not keep the server answering either (a test's own program; DESIGN 6.4)."""
    if rule.status is not None and rule.status < 400:
        body = b"" if rule.status in _NO_BODY else answer.body
        headers = answer.headers + _retry_after(rule)
        answer = Answer(rule.status, body, headers, answer.internal)
    if rule.program is None or answer.status in _NO_BODY:
        return answer
    try:
        value = json.loads(answer.body)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return _jq_failed(rule, "the answer's body is not JSON")
    try:
        out = rule.program.input_value(value).first()
    except StopIteration:
        return _jq_failed(rule, "it gave no output")
    except ValueError as exc:
        return _jq_failed(rule, (str(exc).strip().splitlines() or ["it failed"])[0])
    # libjq gives no NaN or infinity (null and the largest double stand for them).
    body = json.dumps(out, separators=(",", ":")).encode("utf-8")
    if len(body) > MAX_BODY_BYTES:
        return _jq_failed(rule, f"its output is over {MAX_BODY_BYTES} bytes")
    kept = tuple(
        (name, value)
        for name, value in answer.headers
        if name.lower() not in ("content-type", "content-length", "content-encoding")
    )
    return Answer(answer.status, body, (*kept, ("content-type", "application/json")))


def _jq_failed(rule: Rule, why: str) -> Answer:
    from convrisk.api_client.text import printable

    message = f"Injected fault (sandbox fault rule {rule.id}): its body_jq failed: {why}."
    return json_answer(500, ServiceError(printable(message), status=500).to_body())


def _retry_after(rule: Rule) -> tuple[tuple[str, str], ...]:
    return () if rule.retry_after is None else (("retry-after", str(rule.retry_after)),)


class Connections:
    """The server's open connections by client address, so a fault can drop one.

    The protocols of local_backend.serve.uvicorn_protocols fill it: ASGI has no way to close a
    connection without an answer.
    """

    def __init__(self) -> None:
        self.open: dict[tuple[str, int], asyncio.Transport] = {}

    async def drop(self, client: Any) -> None:
        """Close the connection of this client at once, sending nothing more."""
        transport = self.open.get(tuple(client)) if client else None
        if transport is not None:
            transport.abort()
        # Let the transport report the loss, so that uvicorn knows no answer is coming.
        for _ in range(3):
            await asyncio.sleep(0)
