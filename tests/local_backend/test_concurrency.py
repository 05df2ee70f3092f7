"""Many processes and many threads writing one file at once: no lock errors, no lost writes."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from convrisk.api_client.client import Client
from convrisk.api_client.errors import ServiceError
from convrisk.local_backend.backend import LocalBackend

from .conftest import dump, risk_body

# Each worker: open the file, say it is ready, wait for "go", then create its records as fast as
# it can and print their ids as JSON. Half the creates carry an idempotency key.
WORKER = """
import json, sys
from convrisk.api_client.client import Client
from convrisk.local_backend.backend import LocalBackend

path, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
store = LocalBackend(path)
store.conversations.list(limit=1)
print("ready", flush=True)
sys.stdin.readline()
made = []
for index in range(count):
    if index % 2:
        conv = store.conversations.create({"contact_id": f"{name}-{index}"})
    else:
        conv = store.conversations.create(
            {"group_id": f"{name}-{index}"}, idempotency_key=f"{name}-{index}"
        )
    made.append(conv["id"])
store.close()
print(json.dumps(made), flush=True)
"""


def test_four_processes_writing_200_records_each_give_800_rows(db_path: Path) -> None:
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(db_path), f"p{number}", "200"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for number in range(4)
    ]
    try:
        for process in processes:
            assert process.stdout is not None
            assert process.stdout.readline().strip() == "ready"
        for process in processes:
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.flush()
        results = [process.communicate(timeout=120) for process in processes]
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
    for process, (_, err) in zip(processes, results, strict=True):
        assert process.returncode == 0, err
        assert err == ""
    per_process = [json.loads(out) for out, _ in results]

    # Each process saw its ids strictly increase, and no id was issued twice.
    for made in per_process:
        assert len(made) == 200
        assert made == sorted(made)
        assert len(set(made)) == 200
    every = {conv_id for made in per_process for conv_id in made}
    assert len(every) == 800

    with Client(LocalBackend(db_path)) as client:
        listed = list(client.conversations.iterate())
    assert len(listed) == 800
    assert {conv["id"] for conv in listed} == every
    parties = {conv["contact_id"] or conv["group_id"] for conv in listed}
    assert parties == {f"p{p}-{i}" for p in range(4) for i in range(200)}


def test_threads_sharing_one_backend(db_path: Path) -> None:
    store = LocalBackend(db_path)
    errors: list[BaseException] = []
    made: list[list[str]] = [[] for _ in range(8)]
    start = threading.Barrier(8)

    def work(number: int) -> None:
        try:
            start.wait()
            for index in range(40):
                if number % 2:
                    made[number].append(
                        store.conversations.create({"contact_id": f"t{number}-{index}"})["id"]
                    )
                else:
                    profile = store.risk_profiles.create(
                        risk_body(customer_id=f"t{number}"), idempotency_key=f"t{number}-{index}"
                    )
                    made[number].append(profile["id"])
                    store.risk_profiles.update(profile["id"], {"score": index})
                store.conversations.list({"muted": False}, limit=5)
        except BaseException as exc:  # collected and asserted on below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(number,)) for number in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert errors == []
        for ids in made:
            assert len(ids) == 40
            assert ids == sorted(ids)
        listed = [str(conv["contact_id"]) for conv in Client(store).conversations.iterate()]
        assert sorted(listed) == sorted(f"t{n}-{i}" for n in range(1, 8, 2) for i in range(40))
        profiles = store.risk_profiles.list({"customer_id": "t0"}, limit=100)["data"]
        assert sorted(profile["score"] for profile in profiles) == list(range(40))
    finally:
        store.close()
    assert not Path(f"{db_path}-wal").exists()


def hold_write_lock(path: Path) -> sqlite3.Connection:
    """Another writer: a connection holding the file's write lock until it commits."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("BEGIN IMMEDIATE")
    return conn


def test_a_write_waits_for_another_writer_to_finish(db_path: Path) -> None:
    store = LocalBackend(db_path)
    store.conversations.list()
    other = hold_write_lock(db_path)
    other.execute(
        "INSERT INTO conversations (id, contact_id, created_at) VALUES ('conv_0', 'other', 1)"
    )
    releaser = threading.Timer(0.3, lambda: other.execute("COMMIT"))
    releaser.start()
    try:
        mine = store.conversations.create({"contact_id": "mine"})
    finally:
        releaser.join()
        other.close()
    listed = store.conversations.list()["data"]
    store.close()
    assert [conv["contact_id"] for conv in listed] == ["mine", "other"]
    assert listed[0]["id"] == mine["id"]


def test_a_lock_held_too_long_is_a_clear_error_and_changes_nothing(db_path: Path) -> None:
    store = LocalBackend(db_path, busy_timeout=0.2)
    store.conversations.create({"contact_id": "first"})
    before = dump(db_path)
    other = hold_write_lock(db_path)
    try:
        with pytest.raises(ServiceError) as caught:
            store.conversations.create({"contact_id": "second"})
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert "locked by another process" in caught.value.message
    assert str(db_path) in caught.value.message
    assert dump(db_path) == before
    # Once the other writer is gone, writing works again.
    store.conversations.create({"contact_id": "third"})
    assert len(store.conversations.list()["data"]) == 2
    store.close()
