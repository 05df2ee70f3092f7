"""The conversations table (derived from the description) and sample rows for benchmarks."""

from __future__ import annotations

from collections.abc import Iterator

from convrisk.api_client.record_types import Conversation
from convrisk.api_client.resources import CONVERSATIONS
from convrisk.local_backend.store.resource import Columns, ResourceSpec
from convrisk.local_backend.store.table_spec import table_spec

SPEC: ResourceSpec[Conversation] = table_spec(CONVERSATIONS)


def sample_rows(n: int, *, start: int, end: int, seed: int = 0) -> Iterator[Columns]:
    """`n` realistic conversations, oldest first, created evenly between `start` and `end`.

    About 70% are with a contact and 30% with a group (a third of those in one busy group,
    `grp_busy`); 20% are muted, 10% pinned (half of them with a pinned message), 10% archived.
    So each filter keeps about a tenth to a fifth of the rows, at every size.
    """
    import random  # here: only the benchmark's and tests' fills use it

    rng = random.Random(seed)
    step = (end - start) / max(n, 1)
    for index in range(n):
        created_at = start + int(index * step)
        roll = rng.random()
        if roll < 0.1:
            contact_id, group_id = None, "grp_busy"
        elif roll < 0.3:
            contact_id, group_id = None, f"grp_{rng.randrange(max(n // 50, 1)):06d}"
        else:
            contact_id, group_id = f"ct_{rng.randrange(max(n // 3, 1)):08d}", None
        pinned = rng.random() < 0.1
        archived = rng.random() < 0.1
        active = created_at + rng.randrange(0, 30 * 86400)
        yield {
            "contact_id": contact_id,
            "group_id": group_id,
            "pinned_message_id": f"msg_{index:09d}" if pinned and rng.random() < 0.5 else None,
            "is_pinned": int(pinned),
            "is_muted": int(rng.random() < 0.2),
            "last_active_at": active,
            "last_opened_at": active - rng.randrange(0, 3600),
            "created_at": created_at,
            "archived_at": active + 86400 if archived else None,
        }
