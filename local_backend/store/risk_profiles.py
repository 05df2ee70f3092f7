"""The risk_profiles table (derived from the description) and sample rows for benchmarks."""

from __future__ import annotations

import json
from collections.abc import Iterator

from convrisk.api_client.record_types import RiskProfile
from convrisk.api_client.resources import RISK_PROFILES
from convrisk.local_backend.store.resource import Columns, ResourceSpec
from convrisk.local_backend.store.table_spec import table_spec

KNOWN_TYPES = ("conservative", "moderate", "aggressive")
SPEC: ResourceSpec[RiskProfile] = table_spec(RISK_PROFILES)


def sample_rows(n: int, *, start: int, end: int, seed: int = 0) -> Iterator[Columns]:
    """`n` realistic risk profiles, oldest first, created evenly between `start` and `end`."""
    import random  # here: only the benchmark's and tests' fills use it

    rng = random.Random(seed)
    step = (end - start) / max(n, 1)
    for index in range(n):
        created_at = start + int(index * step)
        score: int | float = rng.randrange(0, 101) if rng.random() < 0.5 else rng.random() * 100
        details = {"horizon_years": rng.randrange(1, 40), "source": "questionnaire"}
        yield {
            "customer_id": f"cus_{rng.randrange(max(n // 4, 1)):08d}",
            "profile_type": rng.choice(KNOWN_TYPES),
            "score": score,
            "details": json.dumps(details, separators=(",", ":")),
            "created_at": created_at,
            "updated_at": created_at + rng.randrange(0, 86400),
        }
