"""A database of varied rows for the export path's byte-identity tests (backend and e2e).

Rows written through the backend (what convrisk writes), then rows changed by hand with
sqlite3 into forms convrisk never writes but a file edited by hand may hold.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from convrisk.api_client.params import MAX_NUMBER, MAX_TIMESTAMP, MIN_NUMBER
from convrisk.local_backend.backend import LocalBackend

TEXTS = [
    "plain",
    "é ünï ключ 漢字",
    "😀 𝄞 emoji outside the BMP",
    "\x1b[31mred\x1b[0m \x07bell",
    "\x7f del \x85 nel \u2028 ls \u2029 ps \u202e rlo \u200f rlm",
    'quote " backslash \\ slash / done',
    "tab\t newline\n return\r backspace\b formfeed\f",
    "nul \x00 inside",
    "\x01\x02\x1f",
    "2024-05-01",
]

SCORES: list[int | float] = [
    0,
    -3,
    72,
    2**63 - 1,
    -(2**63),
    0.1,
    1e300,
    -0.0,
    5e-324,
    1 / 3,
    1e16,
    123.0,
    1.7976931348623157e308,
    1e-7,
    -2.5e-10,
]

DETAILS: list[dict[str, Any]] = [
    {},
    {"a": None},
    {"a": [1, {"b": [True, False, None, "x"]}], "c": {}, "d": []},
    {"ключ": "значение", "😀": "𝄞", "é": {"ü": ["漢字"]}},
    {"big": 2**70, "neg": -(2**70), "max": 2**63 - 1},
    {"f": 0.1, "g": 1e300, "h": -0.0, "i": 1 / 3},
    {"date": "2024-05-01", "range": "1-0", "n": -1, "z": 0},
    {"s": 'quote " backslash \\ slash / newline \n tab \t'},
    {"ctrl": "\x1b[31m\x07\x00"},
    {"del": "\x7f\x85\u2028\u202e"},
    {"horizon_years": 12, "source": "questionnaire"},
]

# details stored by hand: forms json.loads reads and json.dumps writes back otherwise.
RAW_DETAILS = [
    '{"a": 1, "b" : [ 1 , 2 ]}',
    '{"a":1E5}',
    '{"a":1.50,"b":100000000000000000000.0}',
    '{"a":-0}',
    '{"a":[-0,1]}',
    '{"a":1,"a":2}',
    '{"a":{"b":1,"b":[2]}}',
    '{"a":"\\u00e9"}',
    '{"a":"\\ud800 lone"}',
    '{"a":"\\uD83D\\uDE00 pair"}',
    '{"a":"x\\/y"}',
    '{"a":"\\u001B upper"}',
    '{"a":"\\u001b lower"}',
    '{"n":12345678901234567890123456789}',
    '{"t":true,"f":false,"z":null}',
    '{"deep":' * 63 + "{}" + "}" * 63,
]


def nested(levels: int) -> dict[str, Any]:
    """An object nested `levels` deep (the top object is level 1)."""
    value: dict[str, Any] = {}
    for _ in range(levels - 1):
        value = {"k": value}
    return value


def fill_varied(path: Path) -> None:
    """Write the varied rows into a new database at `path`."""
    with LocalBackend(path) as store:
        conversations = store.conversations
        for index, text in enumerate(TEXTS):
            made = conversations.create({"contact_id": f"ct_{text}"})
            conversations.update(
                made["id"],
                {
                    "is_pinned": index % 2 == 0,
                    "is_muted": index % 3 == 0,
                    "pinned_message_id": text if index % 2 else None,
                    "archived_at": [None, 1714564800, 1714564800.5, 0, MAX_TIMESTAMP][index % 5],
                },
            )
            conversations.create({"group_id": f"grp_{text}"})
        profiles = store.risk_profiles
        # Scores past today's rule (rows from before it, or written by hand) go in by SQL below.
        beyond: list[tuple[str, int | float]] = []
        for index, score in enumerate(SCORES):
            profile = profiles.create(
                {
                    "customer_id": f"cus_{TEXTS[index % len(TEXTS)]}",
                    "profile_type": TEXTS[(index + 1) % len(TEXTS)],
                    "score": score if MIN_NUMBER <= score <= MAX_NUMBER else 0,
                    "details": DETAILS[index % len(DETAILS)],
                }
            )
            if not MIN_NUMBER <= score <= MAX_NUMBER:
                beyond.append((profile["id"], score))
        for details in [*DETAILS, nested(64), nested(20)]:
            profiles.create(
                {
                    "customer_id": "cus_d",
                    "profile_type": "moderate",
                    "score": 1.5,
                    "details": details,
                }
            )
        hand_made = [
            profiles.create(
                {"customer_id": "cus_raw", "profile_type": "moderate", "score": 1, "details": {}}
            )["id"]
            for _ in RAW_DETAILS
        ]
        odd = [conversations.create({"contact_id": "ct_odd"})["id"] for _ in range(6)]
    conn = sqlite3.connect(path)
    with conn:
        for object_id, text in zip(hand_made, RAW_DETAILS, strict=True):
            conn.execute("UPDATE risk_profiles SET details = ? WHERE id = ?", (text, object_id))
        conn.execute("UPDATE risk_profiles SET score = '72' WHERE id = ?", (hand_made[0],))
        for object_id, score in beyond:
            conn.execute("UPDATE risk_profiles SET score = ? WHERE id = ?", (score, object_id))
        conn.execute(
            "UPDATE conversations SET archived_at = ? WHERE archived_at = ?", (2**62, MAX_TIMESTAMP)
        )
        changes: list[tuple[str, object]] = [
            ("is_pinned", 2),
            ("is_muted", "yes"),
            ("archived_at", "soon"),
            ("last_active_at", -0.0),
            ("created_at", 1700000000.25),
            ("last_opened_at", 2**63 - 1),
        ]
        for object_id, (column, value) in zip(odd, changes, strict=True):
            conn.execute(f"UPDATE conversations SET {column} = ? WHERE id = ?", (value, object_id))
    conn.close()
