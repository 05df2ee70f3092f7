"""The sandbox's clock (`serve --clock`) under the store: a stamp per record, never per request."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from convrisk.api_client.errors import NotFoundError
from convrisk.local_backend.backend import LocalBackend
from convrisk.local_backend.store import ids
from convrisk.local_backend.store.clock import SandboxClock

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


def test_a_reset_starts_the_clock_and_the_seeded_ids_over(db_path: Path) -> None:
    clock = SandboxClock(START)
    sources = {name: ids.seeded(7, name) for name in ("conversations", "risk_profiles")}
    with LocalBackend(db_path, clock=clock.now, stamps=clock, id_sources=sources) as store:
        first = store.conversations.create({"contact_id": "ct_1"})
        store.conversations.create({"contact_id": "ct_2"})
        store.risk_profiles.create(risk_body())
        store.reset()
        again = store.conversations.create({"contact_id": "ct_1"})
    assert again == first
    assert again["created_at"] == START


def test_a_reset_without_a_seed_never_issues_an_id_twice(db_path: Path) -> None:
    """Ids whose random bits are not a seeded stream keep their watermark across a reset: the
    ids after it stand above every id before it, even on a clock that went back to its start
    and bits that repeat (a constant here, for a test that fails whenever an id comes again)."""
    clock = SandboxClock(START, 0)
    same_bits = {"conversations": ids.IdSource(lambda: 5)}
    with LocalBackend(db_path, clock=clock.now, stamps=clock, id_sources=same_bits) as store:
        before = [store.conversations.create({"contact_id": f"ct_{n}"})["id"] for n in range(3)]
        store.reset()
        after = store.conversations.create({"contact_id": "ct_new"})
    assert after["id"] > max(before)
    assert after["created_at"] == START


def test_an_update_of_a_record_that_is_not_there_stamps_nothing(db_path: Path) -> None:
    with _store(db_path, SandboxClock(START)) as store:
        first = store.risk_profiles.create(risk_body())
        with pytest.raises(NotFoundError):
            store.risk_profiles.update("rp_" + "0" * 26, {"score": 0.5})
        second = store.risk_profiles.create(risk_body())
    assert (first["created_at"], second["created_at"]) == (START, START + 1)
