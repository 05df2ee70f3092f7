"""The sandbox's clock (`serve --clock`) under the store: a stamp per record, never per request."""

from __future__ import annotations

import threading
from pathlib import Path

from convrisk.local_backend.clock import SandboxClock
from convrisk.local_backend.store import LocalBackend

from .conftest import risk_body

START = 1_735_689_600


def _store(db_path: Path, clock: SandboxClock) -> LocalBackend:
    return LocalBackend(db_path, clock=clock.now, stamps=clock)


def test_each_record_created_or_changed_is_stamped_one_second_later(db_path: Path) -> None:
    clock = SandboxClock(START)
    with _store(db_path, clock) as store:
        first = store.conversations.create({"contact_id": "ct_1"}, idempotency_key="k")
        replayed = store.conversations.create({"contact_id": "ct_1"}, idempotency_key="k")
        profile = store.risk_profiles.create(risk_body())
        changed = store.risk_profiles.update(profile["id"], {"score": 0.9})
        store.conversations.update(first["id"], {"is_muted": True})  # no updated_at: no stamp
        batch = store.conversations.create_many([({"contact_id": f"ct_{n}"}, None) for n in (2, 3)])
    assert replayed == first and first["created_at"] == START
    assert (profile["created_at"], changed["updated_at"]) == (START + 1, START + 2)
    assert [item.record["created_at"] for item in batch if not isinstance(item, Exception)] == [
        START + 3,
        START + 4,
    ]


def test_a_frozen_clock_stamps_one_time_and_ids_still_increase(db_path: Path) -> None:
    with _store(db_path, SandboxClock(START, 0)) as store:
        made = [store.conversations.create({"contact_id": f"ct_{n}"}) for n in range(50)]
    assert {c["created_at"] for c in made} == {START}
    assert [c["id"] for c in made] == sorted({c["id"] for c in made})


def test_reading_the_clock_does_not_move_it() -> None:
    clock = SandboxClock(START)
    assert clock.now() == clock.now() == START
    assert clock() == START and clock() == START + 1
    assert clock.now() == START + 1


def test_stamps_from_many_threads_are_each_taken_once() -> None:
    clock = SandboxClock(0)
    taken: list[float] = []

    def take() -> None:
        for _ in range(1000):
            taken.append(clock())

    threads = [threading.Thread(target=take) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(taken) == [float(n) for n in range(4000)]
