"""A snapshot file (`sandbox snapshot FILE`, `serve --record FILE`, `Sandbox.snapshot`) is written
whole through a symbolic link, and never put in place of something that is no regular file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from convrisk.api_client.sandbox import write_whole
from convrisk.local_backend.serve.recording import unwritable


def test_a_snapshot_through_a_symbolic_link_replaces_the_file_it_names(tmp_path: Path) -> None:
    real = tmp_path / "real.jsonl"
    real.write_bytes(b"old\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    write_whole(link, b"new\n")
    assert link.is_symlink() and real.read_bytes() == b"new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.jsonl", "real.jsonl"]


def test_a_fifo_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        write_whole(fifo, b"x\n")
    assert fifo.is_fifo()
    assert unwritable(fifo) == "cannot be written: it is not a regular file"
    assert [p.name for p in tmp_path.iterdir()] == ["pipe"]


def test_a_new_file_is_made_0600(tmp_path: Path) -> None:
    target = tmp_path / "new.jsonl"
    write_whole(target, b"x\n")
    assert target.stat().st_mode & 0o777 == 0o600


def test_a_loop_of_links_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(OSError, match="symbolic links"):
        write_whole(tmp_path / "a", b"x\n")
    assert (tmp_path / "a").is_symlink() and (tmp_path / "b").is_symlink()
    assert "symbolic links" in (unwritable(tmp_path / "a") or "")


def test_a_link_into_a_missing_folder_names_that_folder(tmp_path: Path) -> None:
    (tmp_path / "dangling").symlink_to(tmp_path / "gone" / "rec.jsonl")
    assert unwritable(tmp_path / "dangling") == (
        f"cannot write in {tmp_path / 'gone'}: No such file or directory"
    )
