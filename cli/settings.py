"""Settings, highest first: flags > environment > config-file profile > defaults.

The config file is TOML with one table per profile (`[default]`, `[staging]`, ...) and at most
one key outside them, `default_profile = "P"` (set by `config use P`), read with tomllib and
written with tomli-w atomically (temp file + rename) with mode 0600 under a lock (read, change and
write inside it: parallel writers lose nothing); a symlinked config file is written through to its
target, so the link stays a link. As ssh does with its own config, a config file owned by another
user (root aside) or writable by group or others is refused: it chooses where the token goes.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import os
import re
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from convrisk.cli.errors import ConfigLocked, UsageProblem

KEYS: Final = (
    "base_url",
    "token",
    "db",
    "output",
    "timeout",
    "max_retries",
    "page_size",
    "max_response_mb",
    "allow_insecure_http",
    "protected",
    "read_only",
)
# Keys whose value is true or false (in the environment also 1/0, yes/no, on/off).
BOOLEAN_KEYS: Final = ("allow_insecure_http", "protected", "read_only")
# The marks that guard a profile's writes (DESIGN 5.3): true in the environment or in the profile
# applies; an environment's false does not lift the profile's mark (`config unset` does).
GUARD_KEYS: Final = ("protected", "read_only")
OUTPUT_FORMATS: Final = ("table", "json", "jsonl", "csv", "id")
# The formats of an import file (cli.importing.files reads them).
IMPORT_FORMATS: Final = ("jsonl", "csv")
DEFAULT_PROFILE: Final = "default"
# The one top-level key of the config file: the profile used when none is chosen.
DEFAULT_PROFILE_KEY: Final = "default_profile"
# A config file is a few lines; more than this is the wrong file (and is not read whole).
MAX_CONFIG_BYTES: Final = 1024 * 1024
# How long a config write waits for others to finish (as long as the database's busy timeout).
LOCK_WAIT_SECONDS: Final = 30.0
_PROFILE_NAME = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True)
class Bounds:
    """The inclusive range of a numeric setting and what its value is, for messages."""

    low: int | float
    high: int | float
    whole: bool
    what: str

    def describe(self) -> str:
        """E.g. "a number of seconds from 0.1 to 3600"."""
        return f"{self.what} from {self.low:g} to {self.high:g}"


@functools.cache
def defaults() -> dict[str, Any]:
    """The default of each key that has one: the client's own, and the output format.

    Read from api_client.defaults on first use: `--help` and `config path` need none.
    """
    from convrisk.api_client import defaults as client

    return {
        "output": "table",
        "timeout": client.DEFAULT_TIMEOUT,
        "max_retries": client.DEFAULT_MAX_RETRIES,
        "page_size": client.DEFAULT_PAGE_SIZE,
        "max_response_mb": client.DEFAULT_MAX_RESPONSE_MB,
        "allow_insecure_http": False,
        "protected": False,
        "read_only": False,
    }


@functools.cache
def ranges() -> dict[str, Bounds]:
    """The range of each numeric key, checked wherever a value comes from: flag, environment,
    config file or `config set`."""
    from convrisk.api_client.defaults import MAX_LIMIT, MAX_RETRIES, MAX_TIMEOUT, MIN_TIMEOUT

    return {
        "timeout": Bounds(MIN_TIMEOUT, MAX_TIMEOUT, whole=False, what="a number of seconds"),
        "max_retries": Bounds(0, MAX_RETRIES, whole=True, what="a whole number"),
        "page_size": Bounds(1, MAX_LIMIT, whole=True, what="a whole number"),
        "max_response_mb": Bounds(1, 4096, whole=True, what="a whole number of MiB"),
    }


Config = dict[str, dict[str, Any]]


def env_name(key: str) -> str:
    """The environment variable of a profile key: `CONVRISK_<KEY>`."""
    return f"CONVRISK_{key.upper()}"


def config_path(env: Mapping[str, str]) -> Path:
    """`CONVRISK_CONFIG`, else `$XDG_CONFIG_HOME/convrisk/config.toml` (~/.config by default)."""
    explicit = env.get("CONVRISK_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    return _xdg_dir(env, "XDG_CONFIG_HOME", ".config") / "convrisk" / "config.toml"


def default_db_path(env: Mapping[str, str]) -> Path:
    """`$XDG_DATA_HOME/convrisk/convrisk.db` (~/.local/share by default)."""
    return _xdg_dir(env, "XDG_DATA_HOME", ".local/share") / "convrisk" / "convrisk.db"


def _xdg_dir(env: Mapping[str, str], var: str, fallback: str) -> Path:
    value = env.get(var, "")
    # The XDG spec says relative paths in these variables are invalid and must be ignored.
    if value and os.path.isabs(value):
        return Path(value)
    home = env.get("HOME") or str(Path.home())
    return Path(home) / fallback


def check_key(key: str) -> str:
    """The key itself if it is a profile key, else a usage error listing the known ones."""
    if key not in KEYS:
        raise UsageProblem(f"Unknown setting {key!r}. Known: {', '.join(KEYS)}.", param="KEY")
    return key


def check_profile_name(name: str) -> str:
    """A profile name: letters, digits, `_` and `-`; not `default_profile` (a key of the file)."""
    if not _PROFILE_NAME.fullmatch(name):
        raise UsageProblem(
            f"Invalid profile name {name!r}: use letters, digits, '_' and '-'.", param="--profile"
        )
    if name == DEFAULT_PROFILE_KEY:
        raise UsageProblem(
            f"{name!r} cannot be a profile name: it is the config file's key for the default "
            "profile (convrisk config use P).",
            param="--profile",
        )
    return name


def parse_value(key: str, value: object, where: str) -> Any:
    """Check one setting's value (text from a flag or the environment, or a TOML value).

    `where` names the source in the error message, e.g. "CONVRISK_TIMEOUT".
    """
    # The source is named unless it is the key itself (`config set timeout x`).
    where = "" if where == key else f"{where}: "
    if key in ("base_url", "token", "db", "output"):
        if not isinstance(value, str) or not value.strip():
            raise UsageProblem(f"{where}{key} must be a non-empty string.", param=key)
        return _STRING_CHECKS[key](value.strip(), where)
    if key in BOOLEAN_KEYS:
        return _boolean(key, value, where)
    bounds = ranges()[key]
    expected = f"{where}{key} must be {bounds.describe()}"
    number = _number(value)
    if isinstance(number, str):
        raise UsageProblem(f"{expected}, not {number}.", param=key)
    # NaN fails every comparison, so it is out of range like the infinities.
    in_range = bounds.low <= number <= bounds.high
    if not in_range or (bounds.whole and not isinstance(number, int)):
        raise UsageProblem(f"{expected}.", param=key)
    return number


def _boolean(key: str, value: object, where: str) -> bool:
    """A true/false setting, from a TOML boolean or from text (true/false, 1/0, yes/no, on/off)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower() if isinstance(value, str) else ""
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise UsageProblem(f"{where}{key} must be true or false.", param=key)


def _number(value: object) -> int | float | str:
    """The number in `value` (text or a TOML value), or what `value` is instead, for a message."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return value
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, datetime.date | datetime.time):
        return "a date or time"
    text = str(value).strip()
    try:
        return int(text)
    except ValueError:  # also for more than 4300 digits: float() then makes it inf
        pass
    try:
        return float(text)
    except ValueError:
        return repr(text if len(text) <= 40 else text[:40] + "...")


def _base_url(value: str, where: str) -> str:
    from convrisk.api_client.endpoint import base_url_problem

    problem = base_url_problem(value)
    if problem is not None:
        raise UsageProblem(f"{where}{problem}", param="base_url")
    return value.rstrip("/")


def _token(value: str, where: str) -> str:
    from convrisk.api_client.endpoint import token_problem

    problem = token_problem(value)
    if problem is not None:
        raise UsageProblem(f"{where}{problem}", param="token")
    return value


def _db(value: str, where: str) -> str:
    if "\0" in value:
        raise UsageProblem(f"{where}db must not contain a NUL character.", param="db")
    return value


def _output(value: str, where: str) -> str:
    if value.lower() not in OUTPUT_FORMATS:
        raise UsageProblem(
            f"{where}output must be one of {', '.join(OUTPUT_FORMATS)}, not {value!r}.",
            param="output",
        )
    return value.lower()  # `JSON` is `json`, as with -o


_STRING_CHECKS = {"base_url": _base_url, "token": _token, "db": _db, "output": _output}


@dataclass(frozen=True)
class ConfigFile:
    """The config file as read: its profiles and, for a regular file, its permission bits."""

    path: Path
    profiles: Config
    mode: int | None = None
    # `default_profile = "P"` at the top of the file (`config use P`), if any.
    default_profile: str | None = None

    def exposed_token_warning(self) -> str | None:
        """The warning for a file that holds a token and that group or others may read (as ssh)."""
        if self.mode is None or not self.mode & 0o044:
            return None
        if not any("token" in table for table in self.profiles.values()):
            return None
        import shlex

        shown = str(self.path)
        return (
            f"config file {shown} holds a token and is readable by others "
            f"(mode {self.mode:04o}): run chmod 600 {shlex.quote(str(self.path))}"
        )


def read_config(path: Path) -> ConfigFile:
    """The config file; an absent one is empty. Any failure to read or parse it is one
    UsageProblem naming the file and what is wrong."""

    def problem(what: str) -> UsageProblem:
        return UsageProblem(f"Config file {path} {what}.")

    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below).
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return ConfigFile(path, {})
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        raise problem(f"cannot be read: {_reason(exc)}") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise problem("is a directory, not a file")
        # A character device is allowed: CONVRISK_CONFIG=/dev/null means "no config file".
        if not stat.S_ISREG(info.st_mode) and not stat.S_ISCHR(info.st_mode):
            raise problem("is not a regular file")
        if stat.S_ISREG(info.st_mode):
            _check_trusted(path, info)
        raw = _read_at_most(fd, MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise problem(f"cannot be read: {_reason(exc)}") from None
    finally:
        os.close(fd)
    if len(raw) > MAX_CONFIG_BYTES:
        raise problem("is larger than 1 MiB (is it the right file?)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise problem(f"is not UTF-8 text (byte 0x{raw[exc.start]:02x} on line {line})") from None
    import tomllib  # only when there is a file to parse: most runs have none

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise problem(f"is not valid TOML: {exc}") from None
    except ValueError:  # int() past 4300 digits, raised as is by tomllib
        raise problem("holds a number too long to read") from None
    except RecursionError:
        raise problem("nests arrays or tables too deeply to read") from None
    default = data.pop(DEFAULT_PROFILE_KEY, None)
    if default is not None and (
        not isinstance(default, str) or not _PROFILE_NAME.fullmatch(default)
    ):
        raise problem(
            f"has {DEFAULT_PROFILE_KEY} = {default!r}: it must be a profile name "
            "(set it with convrisk config use P)"
        )
    for name, table in data.items():
        if not isinstance(table, dict):
            raise problem(f"has {name!r} outside a profile: put it under a table like [default]")
    mode = stat.S_IMODE(info.st_mode) if stat.S_ISREG(info.st_mode) else None
    return ConfigFile(path, data, mode, default)


def _check_trusted(path: Path, info: os.stat_result) -> None:
    """Refuse a config file that another user could have written (ssh's StrictModes rule)."""
    import shlex

    if info.st_uid not in (os.geteuid(), 0):
        raise UsageProblem(
            f"Config file {path} belongs to another user (uid {info.st_uid}), who could change "
            "where your token is sent: use a file of your own (CONVRISK_CONFIG names another)."
        )
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o022:
        raise UsageProblem(
            f"Config file {path} is writable by other users (mode {mode:04o}), who could change "
            f"where your token is sent: run chmod 600 {shlex.quote(str(path))}"
        )


def _read_at_most(fd: int, size: int) -> bytes:
    chunks: list[bytes] = []
    left = size
    while left > 0:
        chunk = os.read(fd, min(left, 65536))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _reason(exc: BaseException) -> str:
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)


def save_config(path: Path, config: Config, default_profile: str | None = None) -> None:
    """Write the config atomically (temp file in the same folder, then rename), mode 0600;
    `default_profile` goes at the top (none: the key is left out).

    A symlink is followed to its target, which is the file replaced: the link stays a link.
    """
    import tempfile

    import tomli_w

    shown = str(path)
    document: dict[str, Any] = {}
    if default_profile is not None:
        document[DEFAULT_PROFILE_KEY] = default_profile
    document.update((name, table) for name, table in config.items() if table)
    text = tomli_w.dumps(document)
    target = _write_target(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".config.", suffix=".tmp")
    except OSError as exc:
        raise UsageProblem(f"Cannot write config file {shown}: {_reason(exc)}.") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            os.fchmod(handle.fileno(), 0o600)
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise UsageProblem(f"Cannot write config file {shown}: {_reason(exc)}.") from None


def _write_target(path: Path) -> Path:
    """The file a write of the config at `path` replaces (a symlink's target), its folder made.

    A symlink that another user made is not followed: it could point the write anywhere.
    """
    shown = str(path)
    try:
        link = os.lstat(path)
    except FileNotFoundError:
        link = None
    except (OSError, ValueError) as exc:
        raise UsageProblem(f"Cannot write config file {shown}: {_reason(exc)}.") from None
    if link is not None and stat.S_ISLNK(link.st_mode) and link.st_uid not in (os.geteuid(), 0):
        raise UsageProblem(
            f"Config file {shown} is a symlink made by another user (uid {link.st_uid}): "
            "it is not followed; remove it or use a file of your own."
        )
    try:
        target = path.resolve()
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        kind = os.stat(target).st_mode if target.exists() else stat.S_IFREG
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop (Python 3.11, 3.12)
        raise UsageProblem(f"Cannot write config file {shown}: {_reason(exc)}.") from None
    if not stat.S_ISREG(kind):
        # CONVRISK_CONFIG=/dev/null reads as "no settings"; writing must not replace the device.
        raise UsageProblem(f"Config file {shown} is not a regular file: nothing was written.")
    return target


@contextlib.contextmanager
def locked_config(path: Path, *, wait: float = LOCK_WAIT_SECONDS) -> Iterator[ConfigFile]:
    """The config file read under its lock, held until the block ends: change it and
    `save_config` it inside the block, and no other convrisk's change in between is lost.

    The lock is `.NAME.lock` beside the file written (0600, removed on release); it is awaited
    for at most `wait` seconds, then ConfigLocked.
    """
    import fcntl
    import time

    target = _write_target(path)
    lock = target.with_name(f".{target.name}.lock")
    deadline = time.monotonic() + wait
    fd = _open_lock(path, lock)
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                raise ConfigLocked(
                    f"Config file {path} is being changed by another convrisk ({lock} stayed "
                    f"locked for {wait:g} seconds): nothing was written; try again."
                ) from None
            # Short polls: a writer holds the lock for milliseconds, and a long sleep would
            # let the others pass first every time.
            time.sleep(0.005)
            continue
        except OSError as exc:
            os.close(fd)
            raise _lock_failed(path, lock, exc) from None
        # The holder before us removes the file when done: our lock must be on the file that is
        # there now, else another writer may lock the new one at the same time.
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(lock, follow_symlinks=False))
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
        fd = _open_lock(path, lock)
    try:
        yield read_config(path)
    finally:
        # Removed while held; left behind (a failure), it harms nothing: the next writer locks it.
        with contextlib.suppress(OSError):
            os.unlink(lock)
        os.close(fd)


def _open_lock(path: Path, lock: Path) -> int:
    try:
        return os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise _lock_failed(path, lock, exc) from None


def _lock_failed(path: Path, lock: Path, exc: OSError) -> UsageProblem:
    return UsageProblem(f"Cannot lock config file {path} ({lock}): {_reason(exc)}.")


@dataclass
class Flags:
    """The options given on the command line (None: not given)."""

    profile: str | None = None
    base_url: str | None = None
    db: str | None = None
    debug: bool = False
    output: str | None = None  # a command's -o, already checked
    profile_flag: str = "--profile"  # how the profile option is named in messages


@dataclass(frozen=True)
class Settings:
    """The resolved settings of one run, and where each came from."""

    profile: str
    config_path: Path
    base_url: str | None
    token: str | None
    db: Path
    output: str
    timeout: float
    max_retries: int
    page_size: int
    max_response_mb: int
    allow_insecure_http: bool = False
    # Every write asks for the count typed back (or --yes) / is refused (cli/guard.py).
    protected: bool = False
    read_only: bool = False
    sources: dict[str, str] = field(default_factory=dict)
    # Where the profile's name came from: a flag, CONVRISK_PROFILE, default_profile, default.
    profile_source: str = "default"

    @property
    def is_remote(self) -> bool:
        """True when a base_url chooses a remote service over the local database."""
        return self.base_url is not None


def active_profile(
    flags: Flags, env: Mapping[str, str], config: ConfigFile | None = None
) -> tuple[str, str]:
    """The profile name and where it came from: --profile, CONVRISK_PROFILE, the config file's
    `default_profile` (`config use`), or `default`."""
    if flags.profile:
        return check_profile_name(flags.profile), flags.profile_flag
    if env.get("CONVRISK_PROFILE"):
        return check_profile_name(env["CONVRISK_PROFILE"]), "CONVRISK_PROFILE"
    if config is not None and config.default_profile is not None:
        return config.default_profile, f"{DEFAULT_PROFILE_KEY} in {config.path}"
    return DEFAULT_PROFILE, "default"


def resolve(flags: Flags, env: Mapping[str, str], config: ConfigFile | None = None) -> Settings:
    """Settings from flags > environment > the active config profile > defaults.

    `config` is the config file already read (`read_config(config_path(env))`), else it is read.
    """
    path = config_path(env)
    config = config if config is not None else read_config(path)
    profile, profile_source = active_profile(flags, env, config)
    profiles = config.profiles
    # `default` need not exist: settings may come from the environment and defaults alone.
    if profile not in profiles and profile != DEFAULT_PROFILE:
        raise UsageProblem(
            f"No profile {profile!r} in {path} (from {profile_source}). "
            f"Create it with: convrisk config set --profile {profile} KEY VALUE",
            param="--profile",
        )
    table = profiles.get(profile, {})
    for key in table:
        if key not in KEYS:
            raise UsageProblem(
                f"Config file {path}, profile {profile!r}: unknown key {key!r}. "
                f"Known: {', '.join(KEYS)}."
            )
    flag_values = {"base_url": flags.base_url, "db": flags.db, "output": flags.output}
    # First where each setting comes from (the highest layer that has it); then only the value
    # in effect is checked, so a bad one in a lower layer cannot fail a run that overrides it.
    raw: dict[str, tuple[object, str]] = {}
    sources: dict[str, str] = {}
    layers: dict[str, int] = {}
    for key in KEYS:
        flag_value = flag_values.get(key)
        if flag_value is not None:
            flag = "-o/--output" if key == "output" else f"--{key.replace('_', '-')}"
            raw[key], sources[key], layers[key] = (flag_value, flag), flag, 0
        elif env.get(env_name(key)):
            raw[key] = (env[env_name(key)], env_name(key))
            sources[key], layers[key] = env_name(key), 1
        elif key in table:
            raw[key] = (table[key], f"{path} [{profile}]")
            sources[key], layers[key] = f"profile {profile}", 2
        elif key in defaults():
            sources[key], layers[key] = "default", 3
    values: dict[str, Any] = {}
    for key in KEYS:
        if key in raw:
            if key == "base_url" and not _remote_chosen(sources, layers):
                continue  # --db or CONVRISK_DB chose the local database: base_url is not used
            value, where = raw[key]
            values[key] = parse_value(key, value, where)
        elif key in defaults():
            values[key] = defaults()[key]
    for key in GUARD_KEYS:
        # The environment may add the mark, never lift it: the profile's is checked too.
        marked = key in table and layers.get(key) == 1
        if marked and parse_value(key, table[key], f"{path} [{profile}]") and not values[key]:
            values[key] = True
            sources[key] = f"profile {profile}"
    base_url = values.get("base_url")
    db = Path(values["db"]).expanduser() if "db" in values else default_db_path(env)
    if "db" not in values:
        sources["db"] = "default"
    return Settings(
        profile=profile,
        config_path=path,
        base_url=base_url,
        token=values.get("token"),
        db=db,
        output=values["output"],
        timeout=float(values["timeout"]),
        max_retries=values["max_retries"],
        page_size=values["page_size"],
        max_response_mb=values["max_response_mb"],
        allow_insecure_http=values["allow_insecure_http"],
        protected=values["protected"],
        read_only=values["read_only"],
        sources=sources,
        profile_source=profile_source,
    )


def _remote_chosen(sources: dict[str, str], layers: dict[str, int]) -> bool:
    """Whether a base_url chooses the remote service over the local database.

    The higher layer wins: `--db` beats a profile's base_url. Within flags or the environment,
    both at once is a usage error; within a profile, base_url wins (DESIGN: a profile with a
    base_url is remote).
    """
    if "base_url" not in layers or layers["base_url"] > 2:
        return False
    if "db" not in layers:
        return True
    url_layer, db_layer = layers["base_url"], layers["db"]
    if url_layer == db_layer and url_layer < 2:
        raise UsageProblem(
            f"Both {sources['base_url']} and {sources['db']} were given: "
            "choose the remote service or a local database, not both.",
            param=sources["db"],
        )
    return url_layer <= db_layer


def mark_source(sources: Mapping[str, str], key: str) -> str:
    """Where the mark comes from, for the message: the profile's key or the environment's
    (`sources`: Settings.sources)."""
    source = sources.get(key, "")
    if source.startswith("CONVRISK_"):
        return f"{source} is set"
    return f"{key} = true in the config file"


def mask_token(token: str) -> str:
    """A token shown safely: its last four characters only when it is long enough to spare them."""
    if len(token) >= 16:
        return "****" + token[-4:]
    return "****"
