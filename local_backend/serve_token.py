"""The token of `convrisk serve`, kept in a file beside the database so restarts reuse it.

`<db>.token`, mode 0600, one line. Made once (atomically: a half-written file is never seen,
and two servers starting at once agree on one token), then read at every start.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import string
from dataclasses import dataclass
from pathlib import Path

from convrisk.api_client.endpoint import token_problem
from convrisk.api_client.errors import ConvriskError


@dataclass(frozen=True)
class StoredToken:
    """The token, its file, whether this start made it, and whether others may read the file."""

    token: str
    path: Path
    created: bool
    readable_by_others: bool


def token_path(db_path: Path) -> Path:
    """Where the token of the database at `db_path` is kept."""
    return db_path.with_name(db_path.name + ".token")


def load_or_create(db_path: Path) -> StoredToken:
    """The token kept beside `db_path`; a new one (saved, 0600) when there is none yet."""
    path = token_path(db_path)
    created = False
    if not path.exists():
        created = _create(path, new_token())
    try:
        text = path.read_text(encoding="ascii").strip()
        mode = path.stat().st_mode
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not ASCII text"
        raise ConvriskError(f"Cannot read the token file {path}: {reason}.") from None
    if token_problem(text) is not None:
        raise ConvriskError(
            f"The token file {path} does not hold a valid token; delete it to make a new one, "
            "or give one with --token."
        )
    return StoredToken(text, path, created, bool(mode & (stat.S_IRWXG | stat.S_IRWXO)))


def new_token() -> str:
    """A random token (256 bits) that starts with a letter or digit, never `-`: pasted as an
    argument (`config set token T`), it must not read as an option."""
    return secrets.choice(string.ascii_letters + string.digits) + secrets.token_urlsafe(32)


def _create(path: Path, token: str) -> bool:
    """Write `token` to `path` unless it exists; whether this call made it."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(token + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        # A hard link appears whole and fails if the name is taken: no torn or double token.
        os.link(temp, path)
        return True
    except FileExistsError:
        return False
    except OSError as exc:
        raise ConvriskError(
            f"Cannot save the token file {path}: {exc.strerror or exc}; give a token with --token."
        ) from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temp)
