"""The token of `convrisk serve`, kept in a file beside the database so restarts reuse it.

`<db>.token`, mode 0600, one line. Made once (atomically: a half-written file is never seen,
and two servers starting at once agree on one token), then read at every start. As ssh does with
a private key, a token file that is a symlink, is owned by another user, or that group or others
may read or write is refused: it is a secret.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shlex
import stat
import string
from dataclasses import dataclass
from pathlib import Path

from convrisk.api_client.endpoint import token_problem
from convrisk.api_client.errors import ConvriskError

# A token is one short line; more is not a token file.
_MAX_TOKEN_BYTES = 4096


class UnsafeTokenFile(ConvriskError):
    """The token file is a symlink, another user's, or open to others: it is not used."""


@dataclass(frozen=True)
class StoredToken:
    """The token, its file, and whether this start made it."""

    token: str
    path: Path
    created: bool


def token_path(db_path: Path) -> Path:
    """Where the token of the database at `db_path` is kept."""
    return db_path.with_name(db_path.name + ".token")


def load_or_create(db_path: Path) -> StoredToken:
    """The token kept beside `db_path`; a new one (saved, 0600) when there is none yet."""
    path = token_path(db_path)
    created = False
    if not os.path.lexists(path):
        created = _create(path, new_token())
    text = _read_private(path)
    if token_problem(text) is not None:
        raise ConvriskError(
            f"The token file {path} does not hold a valid token; delete it to make a new one, "
            "or give one with --token."
        )
    return StoredToken(text, path, created)


def _read_private(path: Path) -> str:
    """The text of the token file, checked as ssh checks a private key before reading it."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if os.path.islink(path):
            raise UnsafeTokenFile(
                f"The token file {path} is a symlink: a secret is read only from a file of your "
                "own; remove the link (a new token is then made), or give one with --token."
            ) from None
        raise ConvriskError(f"Cannot read the token file {path}: {exc.strerror or exc}.") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafeTokenFile(f"The token file {path} is not a regular file.")
        if info.st_uid != os.geteuid():
            raise UnsafeTokenFile(
                f"The token file {path} belongs to another user (uid {info.st_uid}), who knows "
                "the token: delete it to make a new one, or give one with --token."
            )
        mode = stat.S_IMODE(info.st_mode)
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise UnsafeTokenFile(
                f"The token file {path} is open to other users (mode {mode:04o}): run chmod 600 "
                f"{shlex.quote(str(path))}, or delete it to make a new token."
            )
        raw = os.read(fd, _MAX_TOKEN_BYTES)
    except OSError as exc:
        raise ConvriskError(f"Cannot read the token file {path}: {exc.strerror or exc}.") from None
    finally:
        os.close(fd)
    try:
        return raw.decode("ascii").strip()
    except UnicodeDecodeError:
        raise ConvriskError(f"Cannot read the token file {path}: not ASCII text.") from None


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
