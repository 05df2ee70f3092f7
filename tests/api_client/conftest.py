"""Shared fixtures for the api_client tests: a scripted MockTransport and sample objects."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from convrisk.api_client.remote.http import HTTPBackend
from tests import described
from tests.through_httpx import ThroughHttpx

TOKEN = "sk_test_7Hq2xP9vLm4Rt8Wz"
BASE_URL = "http://svc.test:8080"

Step = httpx.Response | Exception | Callable[[httpx.Request], httpx.Response]


def conversation(id: str = "conv_01", **fields: Any) -> dict[str, Any]:
    """A conversation as the service sends it (with `fields` changed or added)."""
    body = described.conversation(id, 1_700_000_000, contact_id="ct_1")
    body.update(fields)
    return body


def risk_profile(id: str = "rp_01", **fields: Any) -> dict[str, Any]:
    """A risk profile as the service sends it (with `fields` changed or added)."""
    body = described.risk_profile(
        id=id,
        customer_id="cus_1",
        profile_type="moderate",
        score=55,
        details={"horizon": "10y"},
        created_at=1_700_000_000,
        updated_at=1_700_000_000,
    )
    body.update(fields)
    return body


class Script:
    """A fake remote answering with a fixed list of steps, recording every request it saw.

    A step is a response, an exception to raise (as the transport would), or a function of the
    request. Running out of steps fails the test: the client sent more requests than expected.
    """

    def __init__(self, *steps: Step) -> None:
        self.steps = list(steps)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if not self.steps:
            raise AssertionError(f"unexpected extra request: {request.method} {request.url}")
        step = self.steps.pop(0)
        if isinstance(step, Exception):
            raise step
        if isinstance(step, httpx.Response):
            return step
        return step(request)


class Remote:
    """An HTTPBackend over a Script, with the waits it asked for recorded instead of slept."""

    def __init__(self, *steps: Step, **options: Any) -> None:
        self.script = Script(*steps)
        self.waits: list[float] = []
        options.setdefault("random", lambda: 0.5)
        # BASE_URL is no loopback host, but nothing leaves the process (a MockTransport).
        options.setdefault("allow_insecure_http", True)
        self.backend = HTTPBackend(
            options.pop("base_url", BASE_URL),
            options.pop("token", TOKEN),
            transport=ThroughHttpx(httpx.MockTransport(self.script)),
            sleep=self.waits.append,
            **options,
        )

    @property
    def requests(self) -> list[httpx.Request]:
        """Every request the fake remote received."""
        return self.script.requests


@pytest.fixture
def remote() -> Iterator[Callable[..., Remote]]:
    """Build a scripted remote: `remote(step, step, ..., max_retries=2)`; closed after the test."""
    made: list[Remote] = []

    def make(*steps: Step, **options: Any) -> Remote:
        r = Remote(*steps, **options)
        made.append(r)
        return r

    yield make
    for r in made:
        r.backend.close()
