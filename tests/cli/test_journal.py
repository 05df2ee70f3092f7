"""The journal file: appends, reading back in either order, bad lines named, secrets redacted;
and what each write through the command line journals, in-process on both backends."""

from __future__ import annotations

import errno
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convrisk.cli.journal import entries as journal
from convrisk.cli.journal.entries import Entry, JournalError, Problem
from convrisk.cli.journal.journaled import Recorder, redact_argv

from .e2e_twin import Twin
from .e2e_twin import twin as twin  # a fixture: each test on the local db and on serve


def _entry(n: int, **extra: Any) -> Entry:
    made: dict[str, Any] = {
        "entry": f"j_{n:018d}",
        "run": "r_1",
        "time": "2026-11-25T06:00:00.000Z",
        "operation": "create",
        "outcome": {"status": "ok"},
        **extra,
    }
    return made  # type: ignore[return-value]


def _shown(item: Entry | Problem) -> object:
    return (item.line, item.reason) if isinstance(item, Problem) else item["entry"]


_LINES = st.lists(
    st.one_of(
        st.integers(0, 10**6).map(lambda n: json.dumps(_entry(n)).encode()),
        st.sampled_from([b"", b"{", b"\xff\xfe", b'{"entry": 1}', b"[]", b"x" * 300]),
    ),
    max_size=30,
)


@settings(max_examples=200, deadline=None)
@given(lines=_LINES, ends_with_break=st.booleans(), block=st.integers(1, 64))
def test_newest_first_reads_every_line_the_oldest_first_reading_does_reversed(
    tmp_path_factory: pytest.TempPathFactory, lines: list[bytes], ends_with_break: bool, block: int
) -> None:
    """Whatever the lines (bad ones, a line too long, a last line cut short), reading from the
    end gives the same entries and the same problems at the same line numbers."""
    path = tmp_path_factory.mktemp("j") / "journal.jsonl"
    data = b"\n".join(lines) + (b"\n" if ends_with_break and lines else b"")
    path.write_bytes(data)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(journal, "_BLOCK", block)
        patch.setattr(journal, "MAX_LINE_BYTES", 200)
        forward = [_shown(item) for item in journal.read(path)]
        backward = [_shown(item) for item in journal.read_newest(path)]
    assert backward == forward[::-1]


def test_the_rotated_file_comes_after_the_current_one_newest_first(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    journal.append(path.with_name(journal.ROTATED_NAME), [_entry(1), _entry(2)])
    journal.append(path, [_entry(3)])
    assert [e["entry"] for e in journal.read_newest(path) if not isinstance(e, Problem)] == [
        _entry(n)["entry"] for n in (3, 2, 1)
    ]


def test_an_append_past_the_size_cap_starts_a_new_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal, "ROTATE_BYTES", 400)
    path = tmp_path / "journal.jsonl"
    for n in range(10):
        journal.append(path, [_entry(n)])
    assert path.stat().st_size <= 400
    assert path.with_name(journal.ROTATED_NAME).stat().st_size <= 400
    read = [e["entry"] for e in journal.read_newest(path) if not isinstance(e, Problem)]
    assert read[0] == _entry(9)["entry"]
    assert read == sorted(read, reverse=True)


def test_a_journal_named_otherwise_rotates_to_its_own_file_and_reads_no_other_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # CONVRISK_JOURNAL=.../prod.jsonl beside the default journal: prod's history must not list
    # the default journal's rotated entries, and prod's rotation must not drop them.
    monkeypatch.setattr(journal, "ROTATE_BYTES", 400)
    default, prod = tmp_path / "journal.jsonl", tmp_path / "prod.jsonl"
    journal.append(default.with_name(journal.ROTATED_NAME), [_entry(1)])
    for n in range(2, 8):
        journal.append(prod, [_entry(n)])
    assert journal.rotated_path(default) == tmp_path / "journal.1.jsonl"
    assert journal.rotated_path(prod).exists()
    read = [e["entry"] for e in journal.read_newest(prod) if not isinstance(e, Problem)]
    assert _entry(1)["entry"] not in read and read[0] == _entry(7)["entry"]
    kept = [e["entry"] for e in journal.read_newest(default) if not isinstance(e, Problem)]
    assert kept == [_entry(1)["entry"]]


def test_the_journal_and_its_folder_are_private(tmp_path: Path) -> None:
    path = tmp_path / "state" / "convrisk" / "journal.jsonl"
    journal.append(path, [_entry(1)])
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700


def test_a_journal_that_is_a_directory_or_a_symlink_is_refused_by_name(tmp_path: Path) -> None:
    folder = tmp_path / "journal.jsonl"
    folder.mkdir()
    with pytest.raises(JournalError, match="is a directory"):
        list(journal.read_newest(folder))
    link = tmp_path / "link.jsonl"
    (tmp_path / "elsewhere.jsonl").write_text("")
    link.symlink_to(tmp_path / "elsewhere.jsonl")
    with pytest.raises(JournalError, match="symbolic link"):
        list(journal.read_newest(link))
    with pytest.raises(JournalError, match="symbolic link"):
        journal.append(link, [_entry(1)])
    assert (tmp_path / "elsewhere.jsonl").read_text() == ""


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user")
def test_another_users_journal_is_neither_read_nor_written(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    journal.append(path, [_entry(1)])
    os.chown(path, 65534, 65534)
    with pytest.raises(JournalError, match="not a file of yours"):
        list(journal.read_newest(path))
    with pytest.raises(JournalError, match="not a file of yours"):
        journal.append(path, [_entry(2)])


def test_no_journal_reads_as_empty(tmp_path: Path) -> None:
    assert list(journal.read_newest(tmp_path / "none" / "journal.jsonl")) == []


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        (["serve", "--token", "s3cr3t-value"], ["serve", "--token", "***"]),
        (["serve", "--token=s3cr3t-value"], ["serve", "--token=***"]),
        (
            ["api", "/v1/x", "-H", "Authorization: Bearer s3cr3t-value"],
            ["api", "/v1/x", "-H", "Authorization: ***"],
        ),
        (["api", "-Hauthorization:Bearer abc"], ["api", "-Hauthorization: ***"]),
        (["api", "--header=Cookie: a=b"], ["api", "--header=Cookie: ***"]),
        (["api", "-H", "Accept: x"], ["api", "-H", "Accept: x"]),
        (["conv", "get", "Xs3cr3t-valueX"], ["conv", "get", "X***X"]),
        (["conv", "get", "s3cr3t%2Dvalue"], ["conv", "get", "***"]),
    ],
)
def test_the_command_line_is_recorded_without_secrets(argv: list[str], shown: list[str]) -> None:
    assert redact_argv(argv, ["s3cr3t-value"]) == shown


def test_a_recorded_entry_holds_the_token_in_no_form(tmp_path: Path) -> None:
    """A service that echoes the token in a record, its field names or an error: hidden."""
    token = "tok/en-9f8e7d"
    path = tmp_path / "journal.jsonl"
    warnings: list[str] = []
    recorder = Recorder(
        path,
        profile="p",
        backend="remote",
        target="https://svc",
        argv=["convrisk", "conv", "create", f"--token={token}"],
        secrets=[token],
        warn=warnings.append,
    )
    echoed = {"id": "conv_1", "note": f"hi {token}", token: 1, "list": [token.upper(), token]}
    recorder.write(
        [
            recorder.entry("create", {"status": "ok"}, resource="conversations", after=echoed),
            recorder.entry("update", {"status": "failed", "error": f"bad token {token}"}),
        ]
    )
    text = path.read_text()
    assert token not in text and token.replace("/", "\\/") not in text
    assert "tok%2Fen" not in text
    assert warnings == []
    assert len(text.splitlines()) == 2


def test_a_journal_that_cannot_be_written_is_one_warning_and_no_exception(
    tmp_path: Path,
) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("")
    warnings: list[str] = []
    recorder = Recorder(
        blocked / "journal.jsonl",
        profile="p",
        backend="local",
        target="db",
        argv=["convrisk"],
        warn=warnings.append,
    )
    for _ in range(3):
        recorder.write([recorder.entry("delete", {"status": "ok"})])
    assert len(warnings) == 1
    assert str(blocked / "journal.jsonl") in warnings[0] and "not written" in warnings[0]


def test_notes_mark_the_entries_written_inside_them_only(tmp_path: Path) -> None:
    recorder = Recorder(
        tmp_path / "j.jsonl", profile="p", backend="local", target="db", argv=[], warn=print
    )
    with recorder.note(undoes="j_1", stands_for="conv_old"):
        inside = recorder.entry("create", {"status": "ok"})
    outside = recorder.entry("create", {"status": "ok"})
    assert (inside.get("undoes"), inside.get("stands_for")) == ("j_1", "conv_old")
    assert "undoes" not in outside
    assert inside["run"] == outside["run"]


def test_half_a_line_left_by_a_killed_writer_stays_one_bad_line(tmp_path: Path) -> None:
    """A writer killed in the middle of its write leaves the file without its last line
    break: the next append starts a line of its own, so only the half line is lost."""
    path = tmp_path / "journal.jsonl"
    journal.append(path, [_entry(1)])
    with path.open("ab") as out:
        out.write(json.dumps(_entry(2)).encode()[:20])
    journal.append(path, [_entry(3), _entry(4)])
    assert [_shown(item) for item in journal.read_newest(path)] == [
        _entry(4)["entry"],
        _entry(3)["entry"],
        (2, "not JSON, skipped"),
        _entry(1)["entry"],
    ]


# -- what each write through the command line journals, on both backends (the variants of
# tests/e2e/test_journal.py, whose tests run the installed script once each) ------------------

# A token that a record may carry too (a careless user pasted it into a field).
LEAKED = "tok-Leak3d-8c1f2a"


def _journal_of(twin: Twin) -> Path:
    """Where convrisk run by this twin keeps its journal."""
    return Path(twin.env["XDG_STATE_HOME"]) / "convrisk" / "journal.jsonl"


def _entries(path: Path) -> list[dict[str, Any]]:
    """Every line of a journal, each of which must be one JSON object."""
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def _ok(twin: Twin, *args: str, input: str | None = None, **env: str | None) -> str:
    """Run convrisk, which must succeed; its stdout."""
    result = twin.run(*args, input=input, **env)
    assert result.code == 0, result.stderr
    return result.stdout


def test_each_kind_of_write_records_before_after_and_outcome(twin: Twin) -> None:
    path = _journal_of(twin)
    conv = _ok(twin, "conv", "create", "--contact-id", "c_1", "-o", "id").strip()
    _ok(twin, "conv", "update", conv, "--mute", "-o", "id")
    _ok(twin, "conv", "delete", conv, "--yes", "-o", "id")
    risk = _ok(
        twin, "risk", "create", "--customer-id", "cus_1", "--profile-type", "moderate",
        "--score", "40", "-o", "id",
    ).strip()  # fmt: skip
    lines = "".join(json.dumps({"contact_id": f"c_{n}"}) + "\n" for n in range(3))
    imported = [json.loads(line) for line in _ok(twin, "conv", "import", "-", input=lines).split()]
    posted = json.loads(
        _ok(twin, "api", "/v1/risk-profiles/" + risk, "-X", "PUT", "-d", '{"score": 7}')
    )
    _ok(twin, "api", "-X", "DELETE", f"/v1/risk-profiles/{risk}")
    _ok(twin, "conv", "list")  # a read: nothing journaled

    made, updated, deleted, risk_made, *batch, put, api_delete = _entries(path)
    assert (made["operation"], made["id"], made["before"]) == ("create", conv, None)
    assert made["after"]["contact_id"] == "c_1" and made["outcome"]["status"] == "ok"
    assert made["argv"][:3] == ["convrisk", "conv", "create"]
    assert made["backend"] == twin.name and made["profile"] == "default"
    assert made["target"] == (twin.url if twin.url else str(twin.db_path))
    assert updated["before"]["is_muted"] is False and updated["after"]["is_muted"] is True
    assert (deleted["operation"], deleted["after"]) == ("delete", None)
    assert deleted["before"]["is_muted"] is True
    assert (risk_made["resource"], risk_made["id"]) == ("risk_profiles", risk)
    # An import: one entry per record, one run, each with the key that makes a re-run replay.
    assert [e["id"] for e in batch] == [r["id"] for r in imported]
    assert len({e["run"] for e in batch}) == 1 and all(e["idempotency_key"] for e in batch)
    assert (put["operation"], put["method"], put["id"], put["after"]) == (
        "api",
        "PUT",
        risk,
        posted,
    )
    assert put["outcome"] == {"status": "ok", "http_status": 200}
    assert (api_delete["method"], api_delete["resource"], api_delete["id"]) == (
        "DELETE", "risk_profiles", risk,
    )  # fmt: skip
    assert len({e["run"] for e in (made, updated, deleted)}) == 3
    assert len({e["entry"] for e in _entries(path)}) == len(_entries(path))


def test_an_import_run_again_is_journaled_as_replayed(twin: Twin) -> None:
    lines = json.dumps({"contact_id": "c_9"}) + "\n"
    _ok(twin, "conv", "import", "-", input=lines)
    _ok(twin, "conv", "import", "-", input=lines)
    first, again = _entries(_journal_of(twin))
    assert first["outcome"]["status"] == "ok" and again["outcome"]["status"] == "replayed"
    assert first["id"] == again["id"] and first["run"] != again["run"]


def test_no_form_of_the_token_is_ever_journaled(twin: Twin) -> None:
    """After every kind of write, with the token in the environment and in the data written
    (a field, a path, a body): the journal holds none of it, as it is or encoded."""
    env: dict[str, str | None] = {"CONVRISK_TOKEN": twin.token or LEAKED}
    token = str(env["CONVRISK_TOKEN"])
    conv = _ok(twin, "conv", "create", "--contact-id", token, "-o", "id", **env).strip()
    _ok(twin, "conv", "update", conv, "--pinned-message-id", token, **env)
    _ok(twin, "conv", "import", "-", input=json.dumps({"group_id": token}) + "\n", **env)
    _ok(twin, "api", "/v1/conversations", "-d", json.dumps({"contact_id": token}), **env)
    twin.run("conv", "update", f"conv_{token}", "--mute", **env)  # refused, with the id echoed
    _ok(twin, "conv", "delete", conv, "--yes", **env)
    text = _journal_of(twin).read_text("utf-8")
    assert len(text.splitlines()) >= 5
    for form in (token, token.replace("-", "\\u002d"), token.replace("-", "%2D")):
        assert form not in text
    assert "***" in text


def test_a_failed_write_is_journaled_and_a_refused_one_is_not(twin: Twin) -> None:
    missing = "conv_01HVZ8Q2K4M6P8R0T2V4X6Z8B0"
    result = twin.run("conv", "update", missing, "--mute")
    assert result.code == 3, result.stderr
    (failed,) = _entries(_journal_of(twin))
    assert (failed["operation"], failed["id"], failed["before"]) == ("update", missing, None)
    assert failed["outcome"]["status"] == "failed" and missing in failed["outcome"]["error"]
    # An id of another shape: refused before anything is done locally (no entry); sent to a
    # remote service, which refuses it (an entry, with its HTTP status).
    refused = twin.run("conv", "update", "not-an-id", "--mute")
    assert refused.code == (1 if twin.remote else 2), refused.stderr
    after = _entries(_journal_of(twin))[1:]
    if twin.remote:
        assert [e["outcome"]["http_status"] for e in after] == [400]
    else:
        assert after == []


def test_with_the_journal_off_nothing_is_written(twin: Twin) -> None:
    _ok(twin, "conv", "create", "--contact-id", "c_1", CONVRISK_JOURNAL="off")
    assert not _journal_of(twin).parent.exists()


@pytest.mark.parametrize("unwritable", ["directory", "symlink", "under_a_file"])
def test_a_journal_that_cannot_be_written_warns_once_and_the_writes_happen(
    twin: Twin, tmp_path: Path, unwritable: str
) -> None:
    path = tmp_path / "j" / "journal.jsonl"
    path.parent.mkdir()
    if unwritable == "directory":
        path.mkdir()
    elif unwritable == "symlink":
        (tmp_path / "elsewhere").write_text("")
        path.symlink_to(tmp_path / "elsewhere")
    else:
        path = tmp_path / "j" / "a-file" / "journal.jsonl"
        path.parent.write_text("")
    made = twin.run("conv", "create", "--contact-id", "c_1", "-o", "id", CONVRISK_JOURNAL=str(path))
    assert made.code == 0, made.stderr
    assert made.stdout.startswith("conv_")
    (warning,) = made.stderr.splitlines()
    assert warning.startswith("Warning: The journal was not written") and str(path) in warning
    ids = [made.stdout.strip(), _ok(twin, "conv", "create", "--contact-id", "c_2", "-o", "id")]
    both = twin.run(
        "conv", "update", *[i.strip() for i in ids], "--mute", "-o", "id",
        CONVRISK_JOURNAL=str(path),
    )  # fmt: skip
    assert both.code == 0 and len(both.stdout.split()) == 2
    assert len(both.stderr.splitlines()) == 1  # one warning for the command, not one per write
    assert twin.count("conversations") == 2
    if unwritable == "symlink":
        assert (tmp_path / "elsewhere").read_text() == ""


def test_a_full_disk_leaves_no_half_line_and_the_write_stands(
    twin: Twin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk fills up part way through the journal's append (here its writes stop short of
    100 bytes more and then fail with EFBIG, as a file size limit makes them): the journal is
    cut back to where it was, the create is done, one warning. The real limit, on the
    installed script's own process, is tests/e2e/test_journal.py."""
    path = tmp_path / "journal.jsonl"
    _ok(twin, "conv", "create", "--contact-id", "c_0", CONVRISK_JOURNAL=str(path))
    path.write_bytes(path.read_bytes() * 4000)
    before = path.read_bytes()
    limit = len(before) + 100  # room for part of a line, not for all of it
    write = os.write

    def up_to_the_limit(fd: int, data: Any) -> int:
        if os.path.realpath(f"/proc/self/fd/{fd}") != str(path.resolve()):
            return write(fd, data)
        room = limit - os.fstat(fd).st_size
        if room <= 0:
            raise OSError(errno.EFBIG, os.strerror(errno.EFBIG))
        return write(fd, bytes(data)[:room])

    with monkeypatch.context() as patched:
        patched.setattr(os, "write", up_to_the_limit)
        result = twin.run(
            "conv", "create", "--contact-id", "c_1", "-o", "id", CONVRISK_JOURNAL=str(path)
        )
    assert result.code == 0, result.stderr
    (warning,) = result.stderr.splitlines()
    assert "The journal was not written" in warning and "too large" in warning.lower()
    assert path.read_bytes() == before
    assert twin.store.conversations.retrieve(result.stdout.strip())["contact_id"] == "c_1"


def test_the_journal_is_private(twin: Twin) -> None:
    _ok(twin, "conv", "create", "--contact-id", "c_1")
    path = _journal_of(twin)
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700
    assert sys.platform != "win32" and os.stat(path).st_uid == os.geteuid()
