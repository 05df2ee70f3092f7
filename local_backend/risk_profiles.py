"""The risk_profiles table: its columns, its input rules and how a row becomes a record."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import cast

from convrisk.api_client.params import (
    check_risk_profile_create,
    check_risk_profile_update,
    check_text,
)
from convrisk.api_client.records import RiskProfile

from .json_export import json_object_sql
from .resource import (
    Columns,
    ResourceSpec,
    Row,
    check_readable,
    check_storable_number,
    json_text,
    load_json_object,
)

COLUMNS = ("id", "customer_id", "profile_type", "score", "details", "created_at", "updated_at")
KNOWN_TYPES = ("conservative", "moderate", "aggressive")


def create_values(body: object) -> Columns:
    """The column values of a new risk profile (`details` as JSON text)."""
    params = check_risk_profile_create(body)
    check_text(params["customer_id"], "customer_id")
    check_text(params["profile_type"], "profile_type")
    check_storable_number(params["score"], "score")
    return {
        "customer_id": params["customer_id"],
        "profile_type": params["profile_type"],
        "score": params["score"],
        "details": json_text(params["details"], "details"),
    }


def update_values(body: object) -> Columns:
    """The column values an update sets; `details` is replaced whole."""
    params = check_risk_profile_update(body)
    values: Columns = {}
    if "profile_type" in params:
        check_text(params["profile_type"], "profile_type")
        values["profile_type"] = params["profile_type"]
    if "score" in params:
        check_storable_number(params["score"], "score")
        values["score"] = params["score"]
    if "details" in params:
        values["details"] = json_text(params["details"], "details")
    return values


def to_record(row: Row) -> RiskProfile:
    """The risk profile of a row of COLUMNS: `details` parsed, the rest as stored."""
    check_readable(row)
    record = dict(zip(COLUMNS, row, strict=True))
    record["details"] = load_json_object(record["details"], "details")
    return cast(RiskProfile, record)


_KINDS = {"score": "number", "details": "object", "created_at": "number", "updated_at": "number"}


SPEC: ResourceSpec[RiskProfile] = ResourceSpec(
    name="risk_profiles",
    noun="risk profile",
    table="risk_profiles",
    prefix="rp_",
    columns=COLUMNS,
    filter_columns={"customer_id": "customer_id", "profile_type": "profile_type"},
    create_values=create_values,
    update_values=update_values,
    to_record=to_record,
    json_sql=json_object_sql((name, _KINDS.get(name, "text")) for name in COLUMNS),
    has_updated_at=True,
    json_columns=("details",),
)


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
