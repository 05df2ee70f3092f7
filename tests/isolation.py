"""Each test in a world of its own: its own HOME and XDG folders, and a guard that fails a test
which opens, lists or changes the files of the real user who runs pytest (their config,
database, journal) or writes into the checkout."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# What a test may not touch, by audit event (sys.addaudithook): the first argument is the path.
_PATH_EVENTS = frozenset(
    {
        "open",
        "sqlite3.connect",
        "os.listdir",
        "os.scandir",
        "os.mkdir",
        "os.remove",
        "os.rmdir",
        "os.rename",
        "os.chmod",
        "os.truncate",
        "os.utime",
        "shutil.rmtree",
    }
)
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
# A checkout's own caches, which pytest, Python and the tools write while tests run.
_CHECKOUT_CACHES = frozenset(
    {".pytest_cache", "__pycache__", ".mypy_cache", ".ruff_cache", ".hypothesis"}
)

# convrisk's variables, and the ones that would point a test at the real user's folders.
ISOLATED_VARIABLES = (
    "HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_CACHE_HOME",
    "XDG_RUNTIME_DIR",
)


def real_user_folders(env: Mapping[str, str]) -> tuple[Path, ...]:
    """Where convrisk keeps the real user's config, database, journal and cache, in `env`."""
    home = Path(env.get("HOME") or Path.home())
    bases = (
        env.get("XDG_CONFIG_HOME") or home / ".config",
        env.get("XDG_DATA_HOME") or home / ".local" / "share",
        env.get("XDG_STATE_HOME") or home / ".local" / "state",
        env.get("XDG_CACHE_HOME") or home / ".cache",
    )
    chosen = [Path(env[name]) for name in ("CONVRISK_CONFIG", "CONVRISK_DB", "CONVRISK_JOURNAL")
              if env.get(name)]  # fmt: skip
    return tuple(_absolute(Path(base) / "convrisk") for base in bases) + tuple(
        _absolute(path) for path in chosen
    )


def _absolute(path: Path) -> Path:
    """`path` made absolute without touching the file system more than realpath does."""
    return Path(os.path.realpath(os.path.expanduser(path)))


@dataclass
class Guard:
    """Paths a test may not touch, and what it touched of them."""

    forbidden: tuple[Path, ...]
    checkout: Path | None = None
    writable: tuple[Path, ...] = ()  # folders of the checkout the test writes on purpose
    touched: list[str] = field(default_factory=list)

    def see(self, event: str, args: Sequence[Any]) -> None:
        """Record `event` if it reaches a forbidden path (or writes into the checkout)."""
        if not args:
            return
        raw = args[0]
        if isinstance(raw, int) or raw is None:
            return
        if isinstance(raw, bytes):
            raw = os.fsdecode(raw)
        try:
            named = os.fspath(raw)
        except TypeError:
            return
        if not os.path.isabs(named) and _relative_to_a_folder(event, args):
            return  # relative to a dir_fd (shutil.rmtree's way), not to the working folder
        path = Path(os.path.abspath(named))
        if any(path == root or path.is_relative_to(root) for root in self.forbidden):
            self.touched.append(f"{event} {path}")
        elif (
            self.checkout is not None
            and _writes(event, args)
            and path.is_relative_to(self.checkout)
            and not self._may_write(path)
        ):
            self.touched.append(f"{event} {path} (inside the checkout)")

    def _may_write(self, path: Path) -> bool:
        """Whether a write into the checkout is to its caches or to a folder written on purpose."""
        assert self.checkout is not None
        return bool(_CHECKOUT_CACHES.intersection(path.relative_to(self.checkout).parts)) or any(
            path.is_relative_to(folder) for folder in self.writable
        )


def _relative_to_a_folder(event: str, args: Sequence[Any]) -> bool:
    """Whether an audited call names its path relative to an open folder (dir_fd)."""
    dir_fd = args[2] if event == "os.rename" else args[-1] if len(args) > 1 else None
    return event not in ("open", "sqlite3.connect") and isinstance(dir_fd, int)


def _writes(event: str, args: Sequence[Any]) -> bool:
    """Whether an audited call writes: an open for writing, or any change of a file."""
    if event == "open":
        mode, flags = (args[1], args[2]) if len(args) >= 3 else ("r", 0)
        return bool(isinstance(mode, str) and set(mode) & set("wax+")) or bool(
            isinstance(flags, int) and flags & _WRITE_FLAGS
        )
    return event not in ("os.listdir", "os.scandir", "sqlite3.connect")


_guards: list[Guard] = []
_hooked = False


def _hook(event: str, args: tuple[Any, ...]) -> None:
    """The one audit hook: hands path events to the guards in force (cheap for the rest)."""
    if _guards and event in _PATH_EVENTS:
        for guard in _guards:
            guard.see(event, args)


@contextmanager
def guarding(guard: Guard) -> Iterator[Guard]:
    """`guard` in force in this process for the block (an audit hook cannot be removed, so one
    hook, installed once, dispatches to the guards in force)."""
    global _hooked
    if not _hooked:
        sys.addaudithook(_hook)
        _hooked = True
    _guards.append(guard)
    try:
        yield guard
    finally:
        _guards.remove(guard)
