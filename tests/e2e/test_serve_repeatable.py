"""Repeatable runs of the installed `convrisk serve` (issue 20): `--seed` makes ids repeat,
`--clock` fixes the time records are stamped with. Clients on 127.0.0.1, every wait bounded.
Each behaviour runs once here; the variants of two (every clock that is no time, a reset with a
seed alone or a clock alone) run in-process in tests/cli/test_serve_repeatable.py, under the same
test names."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import httpx

from convrisk.local_backend.store import ids

from .both_backends import TOKEN, isolated_env, serving
from .console import run
from .test_serve_cli import run_serve

START = "2025-01-01T00:00:00Z"
START_SECONDS = 1_735_689_600
HEADERS = {"Authorization": f"Bearer {TOKEN}"}


def _scenario(url: str) -> list[Any]:
    """The same calls in the same order, as a client application would make them: every answer."""
    answers: list[Any] = []
    with httpx.Client(base_url=url, headers=HEADERS, timeout=10) as http:

        def call(method: str, path: str, body: Any = None, **headers: str) -> Any:
            answer = http.request(method, path, json=body, headers=headers)
            assert answer.status_code == 200, answer.text
            answers.append(answer.json())
            return answers[-1]

        first = call("POST", "/v1/conversations", {"contact_id": "ct_1"})
        call("POST", "/v1/conversations", {"group_id": "grp_1"}, **{"Idempotency-Key": "k-1"})
        call("POST", "/v1/conversations", {"group_id": "grp_1"}, **{"Idempotency-Key": "k-1"})
        profile = call(
            "POST",
            "/v1/risk-profiles",
            {"customer_id": "cus_1", "profile_type": "moderate", "score": 0.5, "details": {}},
        )
        call("PUT", f"/v1/risk-profiles/{profile['id']}", {"score": 0.7})
        call("PUT", f"/v1/conversations/{first['id']}", {"is_muted": True})
        call("POST", "/v1/conversations", {"contact_id": "ct_2"})
        call("GET", "/v1/conversations")
        call("GET", "/v1/risk-profiles")
    return answers


def _run(home: Path, *options: str) -> list[Any]:
    """A fresh `convrisk serve OPTIONS` under `home`, the scenario against it, then a stop."""
    home.mkdir()
    with serving(home, *options) as served:
        answers = _scenario(served.url)
        code, log = served.stop()
    assert code == 0, log
    return answers


def _ids(answers: list[Any]) -> list[str]:
    return [answer["id"] for answer in answers if "id" in answer]


def _listed(answers: list[Any]) -> list[dict[str, Any]]:
    """The records of both lists at the end of the scenario."""
    return [record for answer in answers[-2:] for record in answer["data"]]


def test_the_same_seed_and_clock_give_the_same_ids_and_times(tmp_path: Path) -> None:
    first = _run(tmp_path / "a", "--seed", "7", "--clock", START)
    again = _run(tmp_path / "b", "--seed", "7", "--clock", START)
    assert again == first
    # Each stamp one second after the one before: a new record, a change to a risk profile. A
    # replay (the third call) stamps nothing, nor does a change to a conversation (no updated_at).
    conversations = sorted(_listed(first)[:3], key=lambda record: record["created_at"])
    assert [c["created_at"] for c in conversations] == [START_SECONDS + n for n in (0, 1, 4)]
    (profile,) = _listed(first)[3:]
    assert (profile["created_at"], profile["updated_at"]) == (START_SECONDS + 2, START_SECONDS + 3)
    # An id carries its creation time, as always.
    for record in _listed(first):
        number = ids.parse(record["id"].split("_")[0] + "_", record["id"])
        assert number is not None and ids.time_of(number) == record["created_at"] * 1000


def test_different_seeds_give_different_ids_at_the_same_times(tmp_path: Path) -> None:
    seven = _listed(_run(tmp_path / "a", "--seed", "7", "--clock", START))
    eight = _listed(_run(tmp_path / "b", "--seed", "8", "--clock", START))
    assert {r["id"] for r in seven}.isdisjoint(r["id"] for r in eight)
    assert [r["created_at"] for r in seven] == [r["created_at"] for r in eight]


def test_a_seed_alone_repeats_the_ids_while_records_keep_the_real_time(tmp_path: Path) -> None:
    before = int(time.time())
    first = _run(tmp_path / "a", "--seed", "7")
    again = _run(tmp_path / "b", "--seed", "7")
    assert _ids(again) == _ids(first)
    assert all(i.split("_")[1].startswith("0000000000") for i in _ids(first))
    # Newest first, as ever: the order of creation.
    assert [r["contact_id"] or r["group_id"] for r in _listed(first)[:3]] == [
        "ct_2",
        "grp_1",
        "ct_1",
    ]
    assert all(before <= r["created_at"] <= time.time() + 1 for r in _listed(first))


def test_a_clock_alone_repeats_the_times_not_the_ids(tmp_path: Path) -> None:
    first = _listed(_run(tmp_path / "a", "--clock", START))
    again = _listed(_run(tmp_path / "b", "--clock", START))
    assert [r["created_at"] for r in again] == [r["created_at"] for r in first]
    assert min(r["created_at"] for r in first) == START_SECONDS
    assert {r["id"] for r in first}.isdisjoint(r["id"] for r in again)


def test_a_frozen_clock_stamps_the_given_time_on_every_write_with_ids_in_order(
    tmp_path: Path,
) -> None:
    answers = _run(tmp_path / "a", "--clock", f"frozen@{START}")
    stamps = {r[k] for r in _listed(answers) for k in ("created_at", "updated_at") if k in r}
    assert stamps == {START_SECONDS}
    conversations = [r["id"] for r in _listed(answers)[:3]]
    assert conversations == sorted(conversations, reverse=True)  # newest first: creation order
    assert len(set(_ids(answers))) == 4  # three conversations, one profile (the replay repeats)


def test_frozen_without_a_time_stays_at_the_start_and_the_banner_says_when(
    tmp_path: Path,
) -> None:
    before = int(time.time())
    with serving(tmp_path, "--clock", "frozen") as served:
        after = int(time.time())
        time.sleep(1.1)  # the wall clock moves on; the sandbox's does not
        answers = _scenario(served.url)
        code, log = served.stop()
    assert code == 0, log
    stamps = {r["created_at"] for r in _listed(answers)}
    assert len(stamps) == 1 and before <= stamps.pop() <= after
    (line,) = [line for line in served.banner if "clock" in line]
    assert line.startswith("convrisk serve: clock frozen at 20"), line


def test_the_banner_says_what_repeats(tmp_path: Path) -> None:
    with serving(tmp_path, "--seed", "7", "--clock", START) as served:
        code, log = served.stop()
    assert code == 0, log
    text = "\n".join(served.banner)
    assert "ids repeat with --seed 7" in text
    assert f"clock starts at {START}, 1 s more for each record stamped" in text


def test_concurrent_clients_get_the_same_ids_and_times_in_the_order_they_arrive(
    tmp_path: Path,
) -> None:
    """Four clients at once: which client gets which id depends on arrival, but the n-th write
    to reach the store gets the same id and time on every run."""

    def concurrent(home: Path) -> list[tuple[str, int]]:
        home.mkdir()
        with serving(home, "--seed", "3", "--clock", START) as served:
            errors: list[BaseException] = []

            def client(n: int) -> None:
                try:
                    with httpx.Client(base_url=served.url, headers=HEADERS, timeout=10) as http:
                        for k in range(10):
                            body = {"contact_id": f"ct_{n}_{k}"}
                            answer = http.post("/v1/conversations", json=body)
                            assert answer.status_code == 200, answer.text
                except BaseException as exc:  # handed to the test thread
                    errors.append(exc)

            threads = [threading.Thread(target=client, args=(n,)) for n in range(4)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(60)
            assert not errors, errors
            assert not any(thread.is_alive() for thread in threads)
            with httpx.Client(base_url=served.url, headers=HEADERS, timeout=10) as http:
                listed = http.get("/v1/conversations", params={"limit": 100}).json()["data"]
            code, log = served.stop()
        assert code == 0, log
        return [(r["id"], r["created_at"]) for r in listed]

    first = concurrent(tmp_path / "a")
    assert len(first) == 40
    assert [t for _, t in first] == [START_SECONDS + 39 - n for n in range(40)]
    assert concurrent(tmp_path / "b") == first


def test_a_clock_that_is_not_a_time_is_exit_2_naming_the_option(tmp_path: Path) -> None:
    result = run_serve(tmp_path, "--clock", "2025-01-01T00:00:00")  # no zone; others in-process
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert "--clock" in line and "ISO 8601" in line, line
    assert not (tmp_path / "s.db").exists()


def _create_both(http: httpx.Client) -> list[tuple[str, int]]:
    """A conversation and a risk profile created: their ids and creation times."""
    made = [
        http.post("/v1/conversations", json={"contact_id": "ct_1"}),
        http.post(
            "/v1/risk-profiles",
            json={"customer_id": "cus_1", "profile_type": "moderate", "score": 0.5, "details": {}},
        ),
    ]
    assert all(answer.status_code == 200 for answer in made), [a.text for a in made]
    return [(answer.json()["id"], answer.json()["created_at"]) for answer in made]


def test_a_reset_rewinds_the_seeded_ids_and_the_clock_to_where_they_started(
    tmp_path: Path,
) -> None:
    """A suite that resets between tests gets the same ids and times in each test, however
    much the tests before it created."""
    with (
        serving(tmp_path, "--seed", "7", "--clock", START) as served,
        httpx.Client(base_url=served.url, headers=HEADERS, timeout=10) as http,
    ):
        first = _create_both(http)
        for n in range(3):  # a test that creates more than the next one does
            http.post("/v1/conversations", json={"contact_id": f"ct_more_{n}"})
        assert http.post("/__sandbox/reset").status_code == 200
        after_reset = _create_both(http)
        env = isolated_env(tmp_path, CONVRISK_BASE_URL=served.url, CONVRISK_TOKEN=TOKEN)
        reset = run(env, "sandbox", "reset", "--yes")
        assert reset.returncode == 0, reset.stderr
        again = _create_both(http)
        code, log = served.stop()
    assert code == 0, log
    assert first[0][1] == START_SECONDS
    assert after_reset == first
    assert again == first


def test_a_restore_does_not_rewind_and_a_create_never_takes_a_restored_id(
    tmp_path: Path,
) -> None:
    """Restored records keep their ids; the rewound stream would mint one of them next, so a
    create gets a fresh id above it, and a restored id that is deleted is not minted again."""
    with (
        serving(tmp_path, "--seed", "7", "--clock", START) as served,
        httpx.Client(base_url=served.url, headers=HEADERS, timeout=10) as http,
    ):
        (restored, _), _ = _create_both(http)
        snapshot = http.get("/__sandbox/snapshot").content

        def reset_and_restore() -> None:
            assert http.post("/__sandbox/reset").status_code == 200
            assert http.post("/__sandbox/restore", content=snapshot).status_code == 200

        reset_and_restore()
        created = http.post("/v1/conversations", json={"contact_id": "ct_new"})
        kept = http.get(f"/v1/conversations/{restored}").json()
        listed = http.get("/v1/conversations").json()["data"]
        reset_and_restore()
        assert http.delete(f"/v1/conversations/{restored}").status_code == 200
        after_delete = http.post("/v1/conversations", json={"contact_id": "ct_later"})
        code, log = served.stop()
    assert code == 0, log
    assert created.status_code == 200, created.text
    assert created.json()["id"] > restored
    assert kept["contact_id"] == "ct_1"
    assert [r["contact_id"] for r in listed] == ["ct_new", "ct_1"]
    assert after_delete.status_code == 200, after_delete.text
    assert after_delete.json()["id"] != restored


def test_a_reset_rewinds_a_seed_alone_or_a_clock_alone(tmp_path: Path) -> None:
    # A seed alone; a clock alone as well, in-process.
    with (
        serving(tmp_path, "--seed", "7") as served,
        httpx.Client(base_url=served.url, headers=HEADERS, timeout=10) as http,
    ):
        first = _create_both(http)
        _create_both(http)
        assert http.post("/__sandbox/reset").status_code == 200
        again = _create_both(http)
        code, log = served.stop()
    assert code == 0, log
    assert [i for i, _ in again] == [i for i, _ in first]
