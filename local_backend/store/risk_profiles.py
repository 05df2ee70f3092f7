"""The risk_profiles table (derived from the description) and sample rows for benchmarks."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING

from convrisk.api_client.records import RiskProfile
from convrisk.api_client.resources import RISK_PROFILES, Field
from convrisk.local_backend.store.resource import Columns, ResourceSpec
from convrisk.local_backend.store.table_spec import spec_of

if TYPE_CHECKING:
    from random import Random

SPEC: ResourceSpec[RiskProfile] = spec_of(RISK_PROFILES)


def sample_rows(n: int, *, start: int, end: int, seed: int = 0) -> Iterator[Columns]:
    """`n` realistic risk profiles, oldest first, created evenly between `start` and `end`.

    Each field a create takes is made from the description: a string of known values one of
    them, another one of about n/4 values (`cus_00000001`), a number a score from 0 to 100
    (half of them whole), an object a small questionnaire; updated within a day of creation.
    """
    import random  # here: only the benchmark's and tests' fills use it

    rng = random.Random(seed)
    step = (end - start) / max(n, 1)
    creatable = RISK_PROFILES.creatable()
    for index in range(n):
        created_at = start + int(index * step)
        row: Columns = {field.name: _sample(field, rng, n) for field in creatable}
        row["created_at"] = created_at
        row["updated_at"] = created_at + rng.randrange(0, 86400)
        yield row


def _sample(field: Field, rng: Random, n: int) -> object:
    """A sample value of a field a create takes, as its column holds it."""
    if field.type == "string":
        if field.known:
            return rng.choice(field.known)
        return f"{field.name[:3]}_{rng.randrange(max(n // 4, 1)):08d}"
    if field.type == "number":
        return rng.randrange(0, 101) if rng.random() < 0.5 else rng.random() * 100
    details = {"horizon_years": rng.randrange(1, 40), "source": "questionnaire"}
    return json.dumps(details, separators=(",", ":"))
