"""Injected trouble for `convrisk serve --latency/--faults/--seed`: the seeded draws, the answers
of injected errors, and the open connections a dropped-connection fault closes."""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass
from typing import Any

from convrisk.api_client.errors import ServiceError
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
        # Separate streams: the faults of a seed stay the same with or without --latency.
        self._faults = random.Random(f"faults:{chaos.seed}")
        self._latency = random.Random(f"latency:{chaos.seed}")

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
