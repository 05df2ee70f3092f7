"""The journal file: appends, reading back in either order, bad lines named, secrets redacted."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convrisk.cli import journal
from convrisk.cli.journal import Entry, JournalError, Problem
from convrisk.cli.journaled import Recorder, redact_argv


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
