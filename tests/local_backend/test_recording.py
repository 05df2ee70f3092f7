"""local_backend.serve.recording: what `serve --record` keeps of the upstream's answers, what it
refuses and notes, and the snapshot it writes (read back by the sandbox's own parser)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from convrisk.local_backend.sandbox import snapshot
from convrisk.local_backend.serve import recording
from convrisk.local_backend.serve.recording import MAX_NOTED, Recorder
from tests import described

CONV = "/v1/conversations"
RISK = "/v1/risk-profiles"
IDS = [f"conv_01JD{n:022d}" for n in range(1, 6)]
RP = "rp_01JD0000000000000000000001"
JSON = (("content-type", "application/json"),)


def conv(object_id: str, **values: Any) -> dict[str, Any]:
    return described.conversation(object_id, 1_700_000_000, **({"contact_id": "ct_1"} | values))


def risk(object_id: str = RP, **values: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "id": object_id,
        "customer_id": "cus_1",
        "profile_type": "moderate",
        "score": 72,
        "details": {},
        "created_at": 1_700_000_000,
        "updated_at": 1_700_000_000,
    }
    return described.risk_profile(**(fields | values))


def body(value: object) -> bytes:
    return json.dumps(value).encode()


@pytest.fixture
def recorder(tmp_path: Path) -> Recorder:
    return Recorder(tmp_path / "rec.jsonl")


def records(rec: Recorder) -> list[dict[str, Any]]:
    """The snapshot's records, as the sandbox's parser reads them (it refuses a bad one)."""
    data = rec.data()
    snapshot.parse(data)
    return [json.loads(line) for line in data.decode().splitlines()]


def test_the_last_state_of_each_record_is_kept_and_a_deleted_one_dropped(
    recorder: Recorder,
) -> None:
    for object_id in IDS[:3]:
        assert recorder.observe("POST", CONV, 200, JSON, body(conv(object_id))) is None
    muted = body(conv(IDS[0], is_muted=True))
    assert recorder.observe("PUT", f"{CONV}/{IDS[0]}", 200, JSON, muted) is None
    assert recorder.observe("DELETE", f"{CONV}/{IDS[1]}", 200, JSON, body({"id": IDS[1]})) is None
    page = {"has_more": False, "data": [conv(IDS[2], is_pinned=True), conv(IDS[3])]}
    assert recorder.observe("GET", CONV, 200, JSON, body(page)) is None
    assert recorder.observe("GET", f"{RISK}/{RP}", 200, JSON, body(risk(score=9))) is None
    assert records(recorder) == [
        {"resource": "conversations", **conv(IDS[0], is_muted=True)},
        {"resource": "conversations", **conv(IDS[2], is_pinned=True)},
        {"resource": "conversations", **conv(IDS[3])},
        {"resource": "risk_profiles", **risk(score=9)},
    ]
    assert recorder.counts() == {"conversations": 3, "risk_profiles": 1}
    assert recorder.refused == 0


def test_records_are_written_conversations_first_each_by_id_whatever_the_order_seen(
    recorder: Recorder,
) -> None:
    recorder.observe("POST", RISK, 201, JSON, body(risk()))
    for object_id in reversed(IDS):
        recorder.observe("GET", f"{CONV}/{object_id}", 200, JSON, body(conv(object_id)))
    assert [r["id"] for r in records(recorder)] == [*IDS, RP]


@pytest.mark.parametrize("status", [400, 404, 409, 500, 503])
def test_an_error_answer_records_nothing_and_drops_nothing(recorder: Recorder, status: int) -> None:
    recorder.observe("POST", CONV, 200, JSON, body(conv(IDS[0])))
    error = body({"error": {"type": "not_found", "message": "gone"}})
    for method, path in [
        ("GET", f"{CONV}/{IDS[0]}"),
        ("DELETE", f"{CONV}/{IDS[0]}"),
        ("PUT", f"{CONV}/{IDS[0]}"),
    ]:
        assert recorder.observe(method, path, status, JSON, error) is None
    assert recorder.observe("POST", CONV, status, JSON, body(conv(IDS[1]))) is None
    assert [r["id"] for r in records(recorder)] == [IDS[0]]


def test_a_replayed_create_does_not_bring_back_an_older_state(recorder: Recorder) -> None:
    recorder.observe("POST", CONV, 200, JSON, body(conv(IDS[0])))
    recorder.observe("PUT", f"{CONV}/{IDS[0]}", 200, JSON, body(conv(IDS[0], is_muted=True)))
    replayed = (*JSON, ("idempotent-replayed", "true"))
    assert recorder.observe("POST", CONV, 200, replayed, body(conv(IDS[0]))) is None
    assert records(recorder)[0]["is_muted"] is True


def test_an_answer_that_is_not_json_is_not_recorded_and_noted_once_per_path(
    recorder: Recorder,
) -> None:
    path = f"{CONV}/{IDS[0]}"
    note = recorder.observe("GET", path, 200, JSON, b"<html>maintenance</html>")
    assert note == f"--record: GET {path}: the body is not JSON; not recorded"
    assert recorder.observe("GET", path, 200, JSON, b"<html>again</html>") is None
    other = recorder.observe("PUT", path, 200, JSON, b"\xff\xfe")
    assert other == f"--record: PUT {path}: the body is not UTF-8; not recorded"
    assert recorder.refused == 3
    assert records(recorder) == []


ITEM = f"{CONV}/{IDS[0]}"


@pytest.mark.parametrize(
    ("method", "path", "answer", "named"),
    [
        (
            "GET",
            ITEM,
            {k: v for k, v in conv(IDS[0]).items() if k != "id"},
            "not a conversation: /: ",
        ),
        ("PUT", ITEM, conv(IDS[0], is_muted="yes"), "not a conversation: /is_muted: "),
        ("GET", ITEM, ["not", "an", "object"], "not a conversation (not a JSON object)"),
        ("GET", ITEM, conv(IDS[1]), f"the conversation of another id ({IDS[1]})"),
        (
            "POST",
            CONV,
            conv("conv-42"),
            "a conversation the sandbox cannot load: 'conv-42' is not a conversation id",
        ),
        (
            "POST",
            CONV,
            conv(IDS[0], contact_id=""),
            "a conversation the sandbox cannot load: Exactly",
        ),
    ],
)
def test_a_body_that_is_not_the_record_asked_for_is_not_recorded_and_noted(
    recorder: Recorder, method: str, path: str, answer: object, named: str
) -> None:
    note = recorder.observe(method, path, 200, JSON, body(answer))
    assert note is not None
    assert note.startswith(f"--record: {method} {path}: {named}"), note
    assert ".;" not in note
    assert note.endswith("; not recorded")
    assert records(recorder) == []


def test_the_good_records_of_a_page_are_kept_and_the_bad_ones_noted(recorder: Recorder) -> None:
    bad = {k: v for k, v in conv(IDS[1]).items() if k != "contact_id"}
    page = {"has_more": False, "data": [conv(IDS[0]), bad, conv(IDS[2]), 7]}
    note = recorder.observe("GET", CONV, 200, JSON, body(page))
    assert note is not None
    assert note.startswith(f"--record: GET {CONV}: 2 of its 4 records are not recorded (/data/1: ")
    assert [r["id"] for r in records(recorder)] == [IDS[0], IDS[2]]
    assert recorder.refused == 2
    no_page = recorder.observe("GET", RISK, 200, JSON, body([risk()]))
    assert no_page == f'--record: GET {RISK}: not a page (no "data" array); not recorded'


def test_a_number_too_large_for_a_float_is_not_recorded(recorder: Recorder) -> None:
    text = body(risk()).replace(b'"details": {}', b'"details": {"limit": 1e400}')
    note = recorder.observe("GET", f"{RISK}/{RP}", 200, JSON, text)
    assert note is not None
    assert "the sandbox cannot load: details must be valid JSON" in note
    assert records(recorder) == []


def test_fields_the_sandbox_does_not_have_are_left_out_so_that_it_loads(
    recorder: Recorder,
) -> None:
    recorder.observe("POST", CONV, 200, JSON, body({**conv(IDS[0]), "topic": "billing"}))
    assert records(recorder) == [{"resource": "conversations", **conv(IDS[0])}]


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/contacts"),
        ("GET", f"{CONV}/{IDS[0]}/messages"),
        ("GET", f"{CONV}/"),
        ("POST", f"{CONV}/{IDS[0]}"),
        ("HEAD", f"{CONV}/{IDS[0]}"),
        ("GET", "/openapi.json"),
    ],
)
def test_answers_of_other_routes_record_nothing(recorder: Recorder, method: str, path: str) -> None:
    assert recorder.observe(method, path, 200, JSON, body(conv(IDS[0]))) is None
    assert records(recorder) == []
    assert recorder.refused == 0


def test_an_escaped_id_in_the_path_is_the_record_s_id(recorder: Recorder) -> None:
    recorder.observe("GET", f"{CONV}/{IDS[0]}", 200, JSON, body(conv(IDS[0])))
    quoted = IDS[0].replace("_", "%5F")
    assert recorder.observe("DELETE", f"{CONV}/{quoted}", 200, JSON, b"{}") is None
    assert records(recorder) == []


def test_a_control_character_in_a_noted_path_is_escaped(recorder: Recorder) -> None:
    note = recorder.observe("GET", f"{CONV}/\x1b[31m", 200, JSON, b"nope")
    assert note is not None
    assert "\x1b" not in note


def test_after_max_noted_paths_one_line_says_no_more_are_noted(recorder: Recorder) -> None:
    notes = [
        recorder.observe("GET", f"{CONV}/conv_{n}", 200, JSON, b"x") for n in range(MAX_NOTED + 5)
    ]
    assert all(notes[:MAX_NOTED])
    last = notes[MAX_NOTED]
    assert last is not None
    assert "no more are noted" in last
    assert notes[MAX_NOTED + 1 :] == [None] * 4
    assert recorder.refused == MAX_NOTED + 5


def test_a_record_past_the_snapshot_limit_is_not_recorded(tmp_path: Path) -> None:
    one = len(snapshot.line("conversations", conv(IDS[0]))) + 1
    rec = Recorder(tmp_path / "rec.jsonl", max_bytes=2 * one)
    assert rec.observe("POST", CONV, 200, JSON, body(conv(IDS[0]))) is None
    assert rec.observe("POST", CONV, 200, JSON, body(conv(IDS[1]))) is None
    note = rec.observe("POST", CONV, 200, JSON, body(conv(IDS[2])))
    assert note is not None
    assert f"would pass {2 * one} bytes" in note
    # Room is given back by a delete; the same state again takes none more.
    rec.observe("DELETE", f"{CONV}/{IDS[0]}", 200, JSON, b"{}")
    assert rec.observe("POST", CONV, 200, JSON, body(conv(IDS[2]))) is None
    assert rec.observe("GET", f"{CONV}/{IDS[2]}", 200, JSON, body(conv(IDS[2]))) is None
    assert [r["id"] for r in records(rec)] == [IDS[1], IDS[2]]
    assert len(rec.data()) == 2 * one


def test_the_snapshot_is_written_whole_mode_0600_and_nothing_else_is_left(
    tmp_path: Path,
) -> None:
    target = tmp_path / "rec.jsonl"
    target.write_text("the earlier recording\n")
    rec = Recorder(target)
    assert target.read_text() == "the earlier recording\n"  # the probe leaves it alone
    rec.observe("POST", CONV, 200, JSON, body(conv(IDS[0])))
    rec.write()
    assert target.read_bytes() == rec.data()
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rec.jsonl"]
    assert rec.summary() == f"--record: 1 conversation and 0 risk profiles written to {target}"


def test_a_folder_gone_at_stop_fails_the_write_and_the_rescue_keeps_the_records(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    rec = Recorder(folder / "rec.jsonl")
    rec.observe("POST", CONV, 200, JSON, body(conv(IDS[0])))
    folder.rmdir()
    with pytest.raises(OSError):
        rec.write()
    kept = rec.rescue()
    assert kept is not None
    try:
        assert kept.read_bytes() == rec.data()
        assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    finally:
        kept.unlink()


@pytest.mark.parametrize(
    ("where", "named"),
    [
        ("missing/rec.jsonl", "cannot write in "),
        ("file/rec.jsonl", "cannot write in "),
        (".", "is a directory"),
    ],
)
def test_a_file_that_cannot_be_written_is_refused_when_the_recorder_is_made(
    tmp_path: Path, where: str, named: str
) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(ValueError, match=named):
        Recorder(tmp_path / where)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


@pytest.mark.skipif(not Path("/sys").is_dir(), reason="no /sys here")
def test_a_folder_not_writable_even_by_root_is_refused() -> None:
    assert recording.unwritable(Path("/sys/rec.jsonl")) == "cannot write in /sys: Permission denied"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes in a folder of mode 0500")
def test_a_folder_without_write_permission_is_refused(tmp_path: Path) -> None:
    tmp_path.chmod(0o500)
    try:
        problem = recording.unwritable(tmp_path / "rec.jsonl")
    finally:
        tmp_path.chmod(0o700)
    assert problem is not None
    assert "Permission denied" in problem
