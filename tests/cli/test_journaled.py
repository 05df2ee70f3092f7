"""The journaled Backend over the local store: what each write leaves in the journal."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from convrisk.api_client.errors import ConvriskError
from convrisk.cli.context import AppContext
from convrisk.cli.journal.journaled import JournaledBackend, Recorder
from convrisk.local_backend.backend import LocalBackend
from tests.through_httpx import ThroughHttpx


@pytest.fixture
def journal(tmp_path: Path) -> Path:
    return tmp_path / "state" / "journal.jsonl"


@pytest.fixture
def backend(tmp_path: Path, journal: Path) -> Iterator[JournaledBackend]:
    recorder = Recorder(
        journal, profile="p", backend="local", target="db", argv=["convrisk"], warn=print
    )
    made = JournaledBackend(LocalBackend(tmp_path / "db.sqlite"), recorder)
    yield made
    made.close()


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_create_with_a_key_used_before_is_journaled_as_replayed(
    backend: JournaledBackend, journal: Path
) -> None:
    first = backend.conversations.create({"contact_id": "c"}, idempotency_key="k-1")
    again = backend.conversations.create({"contact_id": "c"}, idempotency_key="k-1")
    assert first == again
    assert [(e["outcome"]["status"], e["idempotency_key"]) for e in lines(journal)] == [
        ("ok", "k-1"),
        ("replayed", "k-1"),
    ]


def test_a_batch_journals_what_was_attempted_and_not_what_a_check_refused(
    backend: JournaledBackend, journal: Path
) -> None:
    results = backend.conversations.create_many(
        [({"contact_id": "a"}, "k-a"), ({}, "k-b"), ({"contact_id": "c"}, "k-a")]
    )
    assert isinstance(results[1], ConvriskError)  # neither contact nor group: refused
    assert isinstance(results[2], ConvriskError)  # the key of other parameters: refused
    (made,) = lines(journal)
    assert made["after"]["contact_id"] == "a" and made["idempotency_key"] == "k-a"


def test_an_interrupted_write_is_journaled_as_possibly_done(
    backend: JournaledBackend, journal: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conv = backend.conversations.create({"contact_id": "c"})

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    inner: Any = backend._conversations  # the journaled resource
    monkeypatch.setattr(inner._inner, "change", interrupted)
    with pytest.raises(KeyboardInterrupt):
        backend.conversations.update(conv["id"], {"is_muted": True})
    last = lines(journal)[-1]
    assert (last["operation"], last["id"], last["set"]) == ("update", conv["id"], ["is_muted"])
    assert last["outcome"]["status"] == "failed" and "may or may not" in last["outcome"]["error"]


def test_an_api_request_that_reads_is_not_journaled(
    backend: JournaledBackend, journal: Path
) -> None:
    assert backend.send("GET", "/v1/conversations", None).status == 200
    assert backend.send("HEAD", "/v1/conversations", None).status == 405  # answered, not journaled
    assert lines(journal) == []
    answer = backend.send("POST", "/v1/conversations", b'{"bad": 1}')
    (refused,) = lines(journal)
    assert refused["outcome"]["http_status"] == answer.status == 400
    assert (refused["method"], refused["path"], refused["after"]) == (
        "POST",
        "/v1/conversations",
        None,
    )


def test_journal_note_marks_what_is_written_inside_it(
    tmp_path: Path, journal: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `undo` uses: entries written inside a note carry its keys; the run id is shared."""
    env = {
        "HOME": str(tmp_path),
        "CONVRISK_DB": str(tmp_path / "db.sqlite"),
        "CONVRISK_JOURNAL": str(journal),
        "CONVRISK_CONFIG": str(tmp_path / "none.toml"),
    }
    run = AppContext(env)
    run.argv = ["undo", "j_1"]
    with run.journal_note(undoes="j_1", stands_for="conv_old"):
        run.client().conversations.create({"contact_id": "c"})
    run.client().conversations.create({"contact_id": "d"})
    run.close()
    noted, plain = lines(journal)
    assert (noted["undoes"], noted["stands_for"]) == ("j_1", "conv_old")
    assert "undoes" not in plain and noted["run"] == plain["run"]
    assert noted["argv"] == ["convrisk", "undo", "j_1"]


def test_a_create_line_is_the_entry_as_json_writes_it_and_its_after_the_stored_record(
    backend: JournaledBackend, journal: Path
) -> None:
    """The line of a create is made around the record's text (encoded once): it must read as
    the same entry, written byte for byte as json.dumps writes an entry, notes included."""
    risk: Any = [
        (
            {
                "customer_id": "cus_é",
                "profile_type": "moderate",
                "score": 0.1,
                "details": {"z": [1, {"b": 2**70, "a": 'ü\n\u2028"x"'}], "a": None},
            },
            "k-1",
        ),
        (
            {"customer_id": "c2", "profile_type": "moderate", "score": 7, "details": {}},
            None,
        ),
    ]
    made = backend.risk_profiles.create_many(risk)
    with backend.journal.note(undoes="j_earlier"):
        backend.conversations.create({"group_id": "grp_ß"}, idempotency_key="k-conv")
    raw = journal.read_text(encoding="utf-8").split("\n")[:-1]  # not splitlines: U+2028
    entries = [json.loads(line) for line in raw]
    assert [json.dumps(e, ensure_ascii=False, separators=(",", ":")) for e in entries] == raw
    assert not any(isinstance(result, ConvriskError) for result in made)
    assert [e["after"] for e in entries[:2]] == [
        backend.risk_profiles.retrieve(result.record["id"])  # type: ignore[union-attr]
        for result in made
    ]
    assert [e["idempotency_key"] for e in entries] == ["k-1", None, "k-conv"]
    assert entries[2]["undoes"] == "j_earlier"
    assert entries[2]["after"]["group_id"] == "grp_ß"


@pytest.mark.parametrize(
    ("status", "expect"),
    [(None, None), (401, None), (500, {"is_muted": False}), (404, {"is_muted": False})],
    ids=["unreachable", "token-refused", "read-500-with-expect", "read-404-with-expect"],
)
def test_a_remote_update_or_delete_whose_read_before_it_fails_journals_nothing(
    journal: Path, status: int | None, expect: dict[str, Any] | None
) -> None:
    # The read right before the write failed: the write was never sent, so there is no entry
    # (as before `change`/`remove`, when the journal read the record itself).
    import httpx

    from convrisk.api_client.remote.http import HTTPBackend

    sent: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request.method)
        if status is None:
            raise httpx.ConnectError("refused", request=request)
        return httpx.Response(status, json={"error": {"type": "api_error", "message": "no"}})

    recorder = Recorder(
        journal, profile="p", backend="remote", target="t", argv=["convrisk"], warn=print
    )
    inner = HTTPBackend(
        "http://127.0.0.1:9",
        "tok",
        transport=ThroughHttpx(httpx.MockTransport(answer)),
        max_retries=0,
    )
    made = JournaledBackend(inner, recorder)
    try:
        with pytest.raises(ConvriskError):
            made.conversations.change("conv_0", {"is_muted": True}, expect=expect)
        with pytest.raises(ConvriskError):
            made.conversations.remove("conv_0", expect=expect)
    finally:
        made.close()
    assert set(sent) == {"GET"}  # no PUT, no DELETE
    assert lines(journal) == []
