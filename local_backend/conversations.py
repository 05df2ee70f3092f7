"""The conversations table: its columns, its input rules and how a row becomes a record."""

from __future__ import annotations

from collections.abc import Iterator
from typing import cast

from convrisk.api_client.params import (
    check_conversation_create,
    check_conversation_update,
    check_text,
)
from convrisk.api_client.records import Conversation

from .json_export import json_object_sql
from .resource import (
    Columns,
    ResourceSpec,
    Row,
    check_readable,
    check_storable_number,
)

COLUMNS = (
    "id",
    "contact_id",
    "group_id",
    "pinned_message_id",
    "is_pinned",
    "is_muted",
    "last_active_at",
    "last_opened_at",
    "created_at",
    "archived_at",
)


def create_values(body: object) -> Columns:
    """The column values of a new conversation (flags and timestamps take their defaults)."""
    params = check_conversation_create(body)
    values: Columns = {}
    for name in ("contact_id", "group_id"):
        value = params.get(name)
        check_text(value, name)
        values[name] = value
    return values


def update_values(body: object) -> Columns:
    """The column values an update sets; empty when the body changes nothing."""
    params = check_conversation_update(body)
    values: Columns = {}
    if "pinned_message_id" in params:
        check_text(params["pinned_message_id"], "pinned_message_id")
        values["pinned_message_id"] = params["pinned_message_id"]
    if "is_pinned" in params:
        values["is_pinned"] = int(params["is_pinned"])
    if "is_muted" in params:
        values["is_muted"] = int(params["is_muted"])
    if "archived_at" in params:
        check_storable_number(params["archived_at"], "archived_at")
        values["archived_at"] = params["archived_at"]
    return values


def to_record(row: Row) -> Conversation:
    """The conversation of a row of COLUMNS: the flags as booleans, the rest as stored."""
    check_readable(row)
    record = dict(zip(COLUMNS, row, strict=True))
    record["is_pinned"] = bool(record["is_pinned"])
    record["is_muted"] = bool(record["is_muted"])
    return cast(Conversation, record)


# Kinds of the columns for json_object_sql, in COLUMNS order.
_KINDS = {"is_pinned": "flag", "is_muted": "flag"} | {
    name: "number" for name in ("last_active_at", "last_opened_at", "created_at", "archived_at")
}


SPEC: ResourceSpec[Conversation] = ResourceSpec(
    name="conversations",
    noun="conversation",
    table="conversations",
    prefix="conv_",
    columns=COLUMNS,
    filter_columns={
        "muted": "is_muted",
        "pinned": "is_pinned",
        "archived": "is_archived",
        "group_id": "group_id",
    },
    create_values=create_values,
    update_values=update_values,
    to_record=to_record,
    json_sql=json_object_sql((name, _KINDS.get(name, "text")) for name in COLUMNS),
)


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
