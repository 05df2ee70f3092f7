"""`serve --faults/--latency/--seed`: each fault kind does what it says, and nothing more."""

from __future__ import annotations

import re
import sqlite3
from collections import Counter

import httpx
import pytest

from convrisk.local_backend.serve.faults import FAULTS, Chaos

from .conftest import TLS, TOKEN, Served, ServeWith

CONV = "/v1/conversations"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
_FAULT = re.compile(r" fault=(\S+)$")


def faults_logged(served: Served) -> list[str | None]:
    """The fault of each logged request, in order (None: answered normally)."""
    out: list[str | None] = []
    for line in served.logs:
        match = _FAULT.search(line)
        out.append(match.group(1) if match else None)
    return out


def send(served: Served, method: str, path: str, **kwargs: object) -> httpx.Response | None:
    """One request on a new connection, no retries; None when the connection was dropped."""
    with httpx.Client(base_url=served.url, verify=TLS, timeout=10, headers=AUTH) as client:
        try:
            return client.request(method, path, **kwargs)  # type: ignore[arg-type]
        except (httpx.RemoteProtocolError, httpx.ReadError):
            return None


def stored_contacts(served: Served) -> Counter[str]:
    """How often each contact_id is in the database file."""
    with sqlite3.connect(served.db_path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        rows = db.execute("SELECT contact_id FROM conversations").fetchall()
    return Counter(row[0] for row in rows)


def test_every_fault_kind_does_what_it_says_and_leaves_no_partial_write(
    serve_with: ServeWith,
) -> None:
    served = serve_with(chaos=Chaos(fault_rate=1.0, seed=5))
    outcomes = [send(served, "POST", CONV, json={"contact_id": f"ct_{n}"}) for n in range(40)]
    kinds = faults_logged(served)
    assert len(kinds) == 40
    assert set(kinds) == set(FAULTS)  # every kind showed up (deterministic for this seed)
    stored = stored_contacts(served)
    for n, (kind, response) in enumerate(zip(kinds, outcomes, strict=True)):
        contact = f"ct_{n}"
        if kind in ("drop", "drop-after"):
            assert response is None, (kind, response)
            # A drop before the operation writes nothing; one after it keeps the write, once.
            assert stored[contact] == (1 if kind == "drop-after" else 0), kind
            continue
        assert response is not None
        assert response.status_code == int(str(kind)), kind
        error = response.json()["error"]
        assert error["type"] == "api_error" and "Injected fault" in error["message"]
        if kind in ("503", "429"):
            assert response.headers["retry-after"] == "1"
        else:
            assert "retry-after" not in response.headers
        assert stored[contact] == 0, kind


@pytest.mark.e2e  # slow: about a second, or more (the quick loop leaves it out)
def test_the_same_seed_gives_the_same_faults_and_another_seed_others(
    serve_with: ServeWith,
) -> None:
    runs = []
    for seed in (42, 42, 43):
        served = serve_with(chaos=Chaos(fault_rate=0.5, seed=seed))
        for _ in range(30):
            send(served, "GET", CONV)
        runs.append(faults_logged(served))
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]
    assert any(runs[0]) and None in runs[0]


def test_the_fault_rate_is_roughly_the_fraction_asked(serve_with: ServeWith) -> None:
    served = serve_with(chaos=Chaos(fault_rate=0.3, seed=1))
    for _ in range(100):
        send(served, "GET", CONV)
    faulted = sum(1 for kind in faults_logged(served) if kind)
    assert 15 <= faulted <= 45  # binomial(100, 0.3): far outside 3 sigma either way


def test_latency_delays_every_api_answer(serve_with: ServeWith) -> None:
    served = serve_with(chaos=Chaos(latency_ms=(40, 60), seed=3))
    for _ in range(5):
        response = send(served, "GET", CONV)
        assert response is not None and response.status_code == 200
    durations = [float(line.split(" ")[-1].removesuffix("ms")) for line in served.logs]
    assert len(durations) == 5 and min(durations) >= 40


def test_the_openapi_document_is_never_faulted_or_delayed(serve_with: ServeWith) -> None:
    served = serve_with(chaos=Chaos(fault_rate=1.0, latency_ms=(1000, 1000), seed=9))
    for _ in range(10):
        response = send(served, "GET", "/openapi.json")
        assert response is not None and response.status_code == 200
        assert response.json()["openapi"].startswith("3.1")
    assert faults_logged(served) == [None] * 10
    durations = [float(line.split(" ")[-1].removesuffix("ms")) for line in served.logs]
    assert max(durations) < 1000


@pytest.mark.parametrize(
    ("latency", "rate"), [((5, 1), 0.0), ((0, 60_001), 0.0), ((0, 0), 1.5), ((0, 0), -0.1)]
)
def test_chaos_out_of_range_is_refused(latency: tuple[int, int], rate: float) -> None:
    with pytest.raises(ValueError):
        Chaos(latency_ms=latency, fault_rate=rate)
