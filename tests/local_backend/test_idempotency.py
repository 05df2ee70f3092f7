"""Idempotency keys: a retried create replays the first answer and never makes a duplicate."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from convrisk.api_client.errors import InvalidRequestError
from convrisk.api_client.record_types import ConversationCreateParams
from convrisk.api_client.records import Created
from convrisk.local_backend.backend import LocalBackend

from .conftest import START, FakeClock, dump, risk_body


def count(path: Path, table: str) -> int:
    """How many rows the table holds, read by a separate connection."""
    conn = sqlite3.connect(path)
    try:
        (n,) = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
        return int(n)
    finally:
        conn.close()


def test_a_repeated_key_replays_the_first_answer(
    backend: LocalBackend, db_path: Path, clock: FakeClock
) -> None:
    first = backend.risk_profiles.create(risk_body(score=72), idempotency_key="key-1")
    clock.advance(30)
    again = backend.risk_profiles.create(risk_body(score=72), idempotency_key="key-1")
    assert again == first
    assert type(again["score"]) is int
    assert count(db_path, "risk_profiles") == 1


def test_the_replay_is_the_answer_as_it_was_then(backend: LocalBackend) -> None:
    first = backend.conversations.create({"contact_id": "ct_1"}, idempotency_key="k")
    backend.conversations.update(first["id"], {"is_muted": True})
    assert backend.conversations.create({"contact_id": "ct_1"}, idempotency_key="k") == first


def test_the_same_key_with_other_params_is_refused(backend: LocalBackend, db_path: Path) -> None:
    backend.risk_profiles.create(risk_body(score=72), idempotency_key="key-1")
    before = dump(db_path)
    with pytest.raises(InvalidRequestError) as caught:
        backend.risk_profiles.create(risk_body(score=72.5), idempotency_key="key-1")
    assert caught.value.param == "idempotency_key"
    assert "key-1" in caught.value.message
    assert dump(db_path) == before


def test_the_same_key_on_the_other_resource_is_refused(backend: LocalBackend) -> None:
    backend.conversations.create({"contact_id": "ct_1"}, idempotency_key="shared")
    with pytest.raises(InvalidRequestError) as caught:
        backend.risk_profiles.create(risk_body(), idempotency_key="shared")
    assert caught.value.param == "idempotency_key"


def test_different_keys_and_no_key_each_create(backend: LocalBackend, db_path: Path) -> None:
    body: ConversationCreateParams = {"contact_id": "ct_1"}
    a = backend.conversations.create(body, idempotency_key="a")
    b = backend.conversations.create(body, idempotency_key="b")
    c = backend.conversations.create(body)
    d = backend.conversations.create(body)
    assert len({a["id"], b["id"], c["id"], d["id"]}) == 4
    assert count(db_path, "conversations") == 4


def test_equivalent_bodies_share_a_key(backend: LocalBackend) -> None:
    # Empty strings count as absent, so these two bodies are one request.
    first = backend.conversations.create({"contact_id": "ct_1"}, idempotency_key="k")
    again = backend.conversations.create(
        {"contact_id": "ct_1", "group_id": ""}, idempotency_key="k"
    )
    assert again == first


def test_a_key_expires_after_24_hours(
    backend: LocalBackend, db_path: Path, clock: FakeClock
) -> None:
    first = backend.conversations.create({"contact_id": "ct_1"}, idempotency_key="day")
    clock.advance(24 * 3600 - 1)
    assert backend.conversations.create({"contact_id": "ct_1"}, idempotency_key="day") == first
    clock.advance(1)
    later = backend.conversations.create({"contact_id": "ct_2"}, idempotency_key="day")
    assert later["id"] != first["id"]
    assert later["contact_id"] == "ct_2"
    # The old key was purged; the new answer is the one kept now.
    assert count(db_path, "idempotency_keys") == 1
    assert backend.conversations.create({"contact_id": "ct_2"}, idempotency_key="day") == later


def test_old_keys_are_purged_by_later_creates(
    backend: LocalBackend, db_path: Path, clock: FakeClock
) -> None:
    for index in range(5):
        backend.conversations.create({"contact_id": f"ct_{index}"}, idempotency_key=f"k{index}")
    assert count(db_path, "idempotency_keys") == 5
    clock.advance(25 * 3600)
    backend.conversations.create({"contact_id": "fresh"}, idempotency_key="new")
    assert count(db_path, "idempotency_keys") == 1


def test_a_replay_survives_reopening_the_file(db_path: Path, clock: FakeClock) -> None:
    store = LocalBackend(db_path, clock=clock)
    first = store.risk_profiles.create(risk_body(), idempotency_key="persist")
    store.close()
    store = LocalBackend(db_path, clock=clock)
    assert store.risk_profiles.create(risk_body(), idempotency_key="persist") == first
    store.close()
    assert count(db_path, "risk_profiles") == 1


def test_the_same_details_in_another_key_order_replay_the_first_create(
    backend: LocalBackend,
) -> None:
    first = backend.risk_profiles.create(
        risk_body(details={"a": 1, "b": {"x": 1, "y": 2}}), idempotency_key="order"
    )
    again = backend.risk_profiles.create(
        risk_body(details={"b": {"y": 2, "x": 1}, "a": 1}), idempotency_key="order"
    )
    assert again == first
    assert len(backend.risk_profiles.list()["data"]) == 1
    # The details keep the order they were first given in.
    assert list(again["details"]) == ["a", "b"]


# Rows the version before the `v2:` fingerprint stored (made by that version's code, copied
# from its database): the key, the resource, the fingerprint and the stored answer.
_STORED_BEFORE_V2 = [
    (
        "upgrade-risk",
        "risk_profiles",
        "0bcbca6a0518de621c198b6f541d061b7990ffede30e0dd25e64bcb58339f7a8",
        '{"id":"rp_01HF7YAT00VDQWF0RE24VSRQ4P","customer_id":"cus_\\u00e91",'
        '"profile_type":"moderate","score":72.5,"details":{"z":[1,{"b":2,"a":"\\u00fc"}],'
        '"a":null},"created_at":1700000000,"updated_at":1700000000}',
    ),
    (
        "upgrade-conv",
        "conversations",
        "06251dbc25d97f9575a140e74884e51d3824d70c7a717fc92d2e2b3ecdefce34",
        '{"id":"conv_01HF7YAT00BSHDCDR4F3G8DMRM","contact_id":null,"group_id":"grp_7",'
        '"pinned_message_id":null,"is_pinned":false,"is_muted":false,"last_active_at":null,'
        '"last_opened_at":null,"created_at":1700000000,"archived_at":null}',
    ),
]


def _store_keys(
    backend: LocalBackend, db_path: Path, stored: list[tuple[str, str, str, str]]
) -> None:
    """Store these (key, resource, fingerprint, answer) rows as an older build left them: the
    records the answers describe, then the keys."""
    from convrisk.local_backend.sandbox import snapshot

    lines = [snapshot.line(resource, json.loads(answer)) for _, resource, _, answer in stored]
    backend.restore(snapshot.parse("\n".join(lines).encode()))  # also makes the file
    conn = sqlite3.connect(db_path)
    try:
        with conn:
            conn.executemany(
                "INSERT INTO idempotency_keys (key, resource, fingerprint, response, created_at)"
                " VALUES (?, ?, ?, ?, ?)",
                [(*row, int(START)) for row in stored],
            )
    finally:
        conn.close()


def _store_before_upgrade(backend: LocalBackend, db_path: Path) -> None:
    _store_keys(backend, db_path, _STORED_BEFORE_V2)


def test_a_key_stored_before_the_upgrade_still_replays_the_same_request(
    backend: LocalBackend, db_path: Path
) -> None:
    _store_before_upgrade(backend, db_path)
    risk = backend.risk_profiles.create_many(
        [
            (
                risk_body(
                    customer_id="cus_é1",
                    score=72.5,
                    # The same details, their keys in another order.
                    details={"a": None, "z": [1, {"a": "ü", "b": 2}]},
                ),
                "upgrade-risk",
            )
        ]
    )
    conv = backend.conversations.create_many([({"group_id": "grp_7"}, "upgrade-conv")])
    assert [result.replayed for result in (*risk, *conv)] == [True, True]  # type: ignore[union-attr]
    assert risk[0].record["id"] == "rp_01HF7YAT00VDQWF0RE24VSRQ4P"  # type: ignore[union-attr]
    assert conv[0].record["id"] == "conv_01HF7YAT00BSHDCDR4F3G8DMRM"  # type: ignore[union-attr]
    assert count(db_path, "risk_profiles") == count(db_path, "conversations") == 1


def test_a_key_stored_before_the_upgrade_still_refuses_other_params(
    backend: LocalBackend, db_path: Path
) -> None:
    _store_before_upgrade(backend, db_path)
    with pytest.raises(InvalidRequestError) as caught:
        backend.conversations.create({"group_id": "grp_8"}, idempotency_key="upgrade-conv")
    assert caught.value.param == "idempotency_key"
    assert count(db_path, "conversations") == 1


# Rows a `v2:` build stored (made by that version's code): the key, the resource, the
# fingerprint and the stored answer. This build stores `v3:` (the parameters' names) instead.
_STORED_V2 = [
    (
        "v2-risk",
        "risk_profiles",
        "v2:b3b7171de515f4f40c4cbc1761167f5748648daf6acd117c9a79ce616ad5b027",
        '{"id":"rp_01HF7YAT00DWW3Y4P2BRMEBP87","customer_id":"cus_é1","profile_type":"moderate",'
        '"score":72.5,"details":{"z":[1,{"b":2,"a":"ü"}],"a":null},"created_at":1700000000,'
        '"updated_at":1700000000}',
    ),
    (
        "v2-conv",
        "conversations",
        "v2:06251dbc25d97f9575a140e74884e51d3824d70c7a717fc92d2e2b3ecdefce34",
        '{"id":"conv_01HF7YAT00B8E1CM3NE4ARECVP","contact_id":null,"group_id":"grp_7",'
        '"pinned_message_id":null,"is_pinned":false,"is_muted":false,"last_active_at":null,'
        '"last_opened_at":null,"created_at":1700000000,"archived_at":null}',
    ),
]


def test_a_key_a_v2_build_stored_replays_the_same_request_and_refuses_another(
    backend: LocalBackend, db_path: Path
) -> None:
    _store_keys(backend, db_path, _STORED_V2)
    body = risk_body(
        customer_id="cus_é1", score=72.5, details={"a": None, "z": [1, {"a": "ü", "b": 2}]}
    )
    (risk,) = backend.risk_profiles.create_many([(body, "v2-risk")])
    assert isinstance(risk, Created) and risk.replayed
    assert risk.record["id"] == "rp_01HF7YAT00DWW3Y4P2BRMEBP87"
    conv = backend.conversations.create({"group_id": "grp_7"}, idempotency_key="v2-conv")
    assert conv["id"] == "conv_01HF7YAT00B8E1CM3NE4ARECVP"
    with pytest.raises(InvalidRequestError) as caught:
        backend.risk_profiles.create(
            risk_body(customer_id="cus_é1", score=72, details=body["details"]),
            idempotency_key="v2-risk",
        )
    assert caught.value.param == "idempotency_key"
    assert count(db_path, "risk_profiles") == count(db_path, "conversations") == 1


def test_a_key_is_refused_with_a_value_that_prints_alike_but_is_another(
    backend: LocalBackend, db_path: Path
) -> None:
    # 72 and 72.0 are other requests, as true and 1 are: the stored answer is compared exactly.
    backend.risk_profiles.create(risk_body(score=72.0, details={"n": 1}), idempotency_key="k")
    for changed in (
        risk_body(score=72, details={"n": 1}),
        risk_body(score=72.0, details={"n": 1.0}),
        risk_body(score=72.0, details={"n": True}),
    ):
        with pytest.raises(InvalidRequestError) as caught:
            backend.risk_profiles.create(changed, idempotency_key="k")
        assert caught.value.param == "idempotency_key"
    again = backend.risk_profiles.create(
        risk_body(score=72.0, details={"n": 1}), idempotency_key="k"
    )
    assert type(again["score"]) is float
    assert count(db_path, "risk_profiles") == 1


def test_a_key_whose_record_was_deleted_makes_it_anew(backend: LocalBackend, db_path: Path) -> None:
    first = backend.conversations.create({"contact_id": "ct_1"}, idempotency_key="k")
    backend.conversations.delete(first["id"])
    (again,) = backend.conversations.create_many([({"contact_id": "ct_1"}, "k")])
    assert isinstance(again, Created) and not again.replayed
    assert again.record["id"] != first["id"]
    assert backend.conversations.retrieve(again.record["id"]) == again.record
    # The key now holds the new record's answer: a third create replays that one.
    (third,) = backend.conversations.create_many([({"contact_id": "ct_1"}, "k")])
    assert isinstance(third, Created) and third.replayed
    assert third.record == again.record
    assert count(db_path, "conversations") == count(db_path, "idempotency_keys") == 1


def test_a_key_whose_record_was_deleted_takes_other_params(backend: LocalBackend) -> None:
    first = backend.risk_profiles.create(risk_body(score=10), idempotency_key="k")
    backend.risk_profiles.delete(first["id"])
    made = backend.risk_profiles.create(risk_body(score=20), idempotency_key="k")
    assert made["score"] == 20
    assert [r["id"] for r in backend.risk_profiles.list()["data"]] == [made["id"]]


def test_a_batch_replays_kept_records_and_makes_deleted_ones_anew(
    backend: LocalBackend, db_path: Path
) -> None:
    items: list[tuple[ConversationCreateParams, str | None]] = [
        ({"contact_id": f"ct_{n}"}, f"k{n}") for n in range(4)
    ]
    made = [r.record for r in backend.conversations.create_many(items)]  # type: ignore[union-attr]
    backend.conversations.delete(made[1]["id"])
    backend.conversations.delete(made[3]["id"])
    results = backend.conversations.create_many([*items, ({"contact_id": "ct_9"}, "k9")])
    assert all(isinstance(r, Created) for r in results)
    done = [(r.replayed, r.record["id"] in {m["id"] for m in made}) for r in results]  # type: ignore[union-attr]
    assert done == [(True, True), (False, False), (True, True), (False, False), (False, False)]
    assert count(db_path, "conversations") == count(db_path, "idempotency_keys") == 5


def test_a_dry_run_plans_a_deleted_record_as_new_and_writes_nothing(
    backend: LocalBackend, db_path: Path
) -> None:
    kept = backend.conversations.create({"contact_id": "ct_1"}, idempotency_key="kept")
    gone = backend.conversations.create({"contact_id": "ct_2"}, idempotency_key="gone")
    backend.conversations.delete(gone["id"])
    before = dump(db_path)
    found = backend.conversations.replays(
        [({"contact_id": "ct_1"}, "kept"), ({"contact_id": "ct_2"}, "gone")]
    )
    assert found == [kept, None]
    assert dump(db_path) == before


def test_a_key_of_a_deleted_record_still_refuses_the_other_resource(
    backend: LocalBackend,
) -> None:
    first = backend.conversations.create({"contact_id": "ct_1"}, idempotency_key="shared")
    backend.conversations.delete(first["id"])
    with pytest.raises(InvalidRequestError) as caught:
        backend.risk_profiles.create(risk_body(), idempotency_key="shared")
    assert caught.value.param == "idempotency_key"
