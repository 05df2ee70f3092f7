"""The conversations table (derived from the description) and sample rows for benchmarks."""

from __future__ import annotations

from collections.abc import Iterator

from convrisk.api_client.records import Conversation
from convrisk.api_client.resources import CONVERSATIONS, Field
from convrisk.local_backend.store.resource import Columns, ResourceSpec
from convrisk.local_backend.store.table_spec import spec_of

SPEC: ResourceSpec[Conversation] = spec_of(CONVERSATIONS)


def sample_rows(n: int, *, start: int, end: int, seed: int = 0) -> Iterator[Columns]:
    """`n` realistic conversations, oldest first, created evenly between `start` and `end`.

    About 70% are with a contact and 30% with a group (a third of those in one busy group,
    `grp_busy`). Each settable field of the description is set in some rows: a boolean true in
    about 15%, a string in 5%, a time (a day after the last activity) in 10%. So each filter
    keeps about a tenth to a fifth of the rows, at every size.
    """
    import random  # here: only the benchmark's and tests' fills use it

    rng = random.Random(seed)
    step = (end - start) / max(n, 1)
    settable = CONVERSATIONS.updatable()
    for index in range(n):
        created_at = start + int(index * step)
        roll = rng.random()
        if roll < 0.1:
            contact_id, group_id = None, "grp_busy"
        elif roll < 0.3:
            contact_id, group_id = None, f"grp_{rng.randrange(max(n // 50, 1)):06d}"
        else:
            contact_id, group_id = f"ct_{rng.randrange(max(n // 3, 1)):08d}", None
        active = created_at + rng.randrange(0, 30 * 86400)
        row: Columns = {
            "contact_id": contact_id,
            "group_id": group_id,
            "last_active_at": active,
            "last_opened_at": active - rng.randrange(0, 3600),
            "created_at": created_at,
        }
        for field in settable:
            row[field.name] = _sample(field, rng.random(), index, active)
        yield row


def _sample(field: Field, roll: float, index: int, active: int) -> object:
    """A sample value of a settable field, as its column holds it, by its type and a roll."""
    if field.type == "boolean":
        return int(roll < 0.15)
    if field.type == "timestamp":
        return active + 86400 if roll < 0.1 else None
    if field.type == "string":
        return f"s_{index:011d}" if roll < 0.05 else None
    return field.default
