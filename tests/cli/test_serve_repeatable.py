"""Repeatable runs of `convrisk serve` in-process (issue 20): every --clock that is no time, and a
reset rewinding a seed alone or a clock alone, the variants of behaviours
tests/e2e/test_serve_repeatable.py runs once through the installed script, under the same test
names. The serve that listens is this process's (serve_then), its clients on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from .conftest import Invoke
from .serving_in_process import never_serve, serve_then

START = "2025-01-01T00:00:00Z"
START_SECONDS = 1_735_689_600
TOKEN = "cli-repeatable-token-3f2a"
HEADERS = {"Authorization": f"Bearer {TOKEN}"}


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ("yesterday", "ISO 8601"),
        ("2025-01-01T00:00:00", "ISO 8601"),  # no zone: which day would it be?
        ("frozen@2025-13-01T00:00:00Z", "ISO 8601"),
        ("1969-12-31T23:59:59Z", "1970-01-01"),
        ("9999-06-01T00:00:00+00:00", "9999-01-01"),
        ("", "ISO 8601"),
    ],
)
def test_a_clock_that_is_not_a_time_is_exit_2_naming_the_option(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, value: str, named: str
) -> None:
    never_serve(monkeypatch)
    result = invoke("serve", "--port", "0", "--db", str(tmp_path / "s.db"), "--clock", value)
    assert result.code == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert "--clock" in line and named in line, line
    assert not (tmp_path / "s.db").exists()


def _create_both(http: httpx.Client) -> list[tuple[str, int]]:
    """A conversation and a risk profile created: their ids and creation times."""
    made = [
        http.post("/v1/conversations", json={"contact_id": "ct_1"}),
        http.post(
            "/v1/risk-profiles",
            json={"customer_id": "cus_1", "profile_type": "moderate", "score": 0.5, "details": {}},
        ),
    ]
    assert all(answer.status_code == 200 for answer in made), [a.text for a in made]
    return [(answer.json()["id"], answer.json()["created_at"]) for answer in made]


@pytest.mark.parametrize(
    ("options", "repeats"),
    [(("--seed", "7"), "ids"), (("--clock", START), "times")],
)
def test_a_reset_rewinds_a_seed_alone_or_a_clock_alone(
    invoke: Invoke,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    options: tuple[str, ...],
    repeats: str,
) -> None:
    def scenario(url: str) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
        with httpx.Client(base_url=url, headers=HEADERS, timeout=10) as http:
            first = _create_both(http)
            _create_both(http)
            assert http.post("/__sandbox/reset").status_code == 200
            return first, _create_both(http)

    first, again = serve_then(
        monkeypatch,
        invoke,
        "--port", "0", "--db", str(tmp_path / "s.db"), "--token", TOKEN, *options,
        scenario=scenario,
    )  # fmt: skip
    first_ids, again_ids = [i for i, _ in first], [i for i, _ in again]
    first_times, again_times = [t for _, t in first], [t for _, t in again]
    if repeats == "ids":
        assert again_ids == first_ids
    else:
        assert again_times == first_times == [START_SECONDS, START_SECONDS + 1]
        assert set(again_ids).isdisjoint(first_ids)  # no seed: random ids, never the same
