"""Private folders (mode 0700) for convrisk's files, without sqlite3 (the journal needs one too)."""

from __future__ import annotations

import os
from pathlib import Path


def make_private_folder(folder: Path) -> None:
    """Create `folder`, and each missing parent, with mode 0700 (the XDG base directory rule).

    A folder that exists keeps its mode: its owner may have opened it on purpose.
    """
    missing: list[Path] = []
    current = folder
    while not current.is_dir() and current.parent != current:
        missing.append(current)
        current = current.parent
    for path in reversed(missing):
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            if not path.is_dir():
                raise
            # another process made it meanwhile
