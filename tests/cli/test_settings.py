"""Settings, highest first: flags > environment > config profile > defaults; and the backend
choice (a base_url means the remote service, otherwise the local database)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import Invoke

TOKEN = "tok_settings_0123456789abcdef"


def ids_in(path: Path) -> list[str]:
    """The conversation ids stored in a local database file."""
    from convrisk.local_backend.backend import LocalBackend

    store = LocalBackend(path)
    try:
        return [c["id"] for c in store.conversations.list(limit=100)["data"]]
    finally:
        store.close()


def create_one(invoke: Invoke, *global_flags: str) -> str:
    args = (*global_flags, "conv", "create", "--contact-id", "c", "-o", "id")
    return invoke(*args).ok().stdout.strip()


@pytest.fixture
def service(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """convrisk's own HTTP server on loopback over its own database file: (url, db path)."""
    from convrisk.local_backend.backend import LocalBackend
    from convrisk.local_backend.serve.server import make_server

    path = tmp_path / "served.db"
    backend = LocalBackend(path)
    server = make_server(backend, token=TOKEN)
    try:
        with server.running():
            yield server.url, path
    finally:
        backend.close()


def test_the_local_database_is_created_on_first_use_under_xdg_data_home(
    invoke: Invoke, db_path: Path
) -> None:
    assert not db_path.exists()
    new_id = create_one(invoke)
    assert ids_in(db_path) == [new_id]


def test_a_relative_xdg_data_home_is_ignored(
    invoke: Invoke, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", "relative/data")
    new_id = create_one(invoke)
    assert ids_in(home / ".local" / "share" / "convrisk" / "convrisk.db") == [new_id]


def test_db_flag_beats_environment_beats_profile(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from_profile, from_env, from_flag = (tmp_path / f"{n}.db" for n in ("p", "e", "f"))
    invoke("config", "set", "db", str(from_profile)).ok()
    a = create_one(invoke)
    monkeypatch.setenv("CONVRISK_DB", str(from_env))
    b = create_one(invoke)
    c = create_one(invoke, "--db", str(from_flag))
    assert (ids_in(from_profile), ids_in(from_env), ids_in(from_flag)) == ([a], [b], [c])


def test_profile_chosen_by_flag_or_environment(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("one", "two"):
        invoke("config", "set", "--profile", name, "db", str(tmp_path / f"{name}.db")).ok()
    monkeypatch.setenv("CONVRISK_PROFILE", "one")
    a = create_one(invoke)
    b = create_one(invoke, "--profile", "two")
    assert ids_in(tmp_path / "one.db") == [a] and ids_in(tmp_path / "two.db") == [b]


def test_page_size_and_output_from_each_layer(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    invoke("config", "set", "output", "id").ok()
    create_one(invoke)
    assert invoke("conv", "list").ok().stdout.startswith("conv_")
    monkeypatch.setenv("CONVRISK_OUTPUT", "json")
    assert invoke("conv", "list").ok().stdout.startswith("[")
    assert invoke("conv", "list", "-o", "csv").ok().stdout.startswith("id,")
    monkeypatch.setenv("CONVRISK_PAGE_SIZE", "0")
    bad = invoke("conv", "list")
    assert bad.code == 2 and "CONVRISK_PAGE_SIZE" in bad.stderr


def test_a_profile_with_a_base_url_is_remote(
    invoke: Invoke, service: tuple[str, Path], db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, served = service
    invoke("config", "set", "base_url", url).ok()
    invoke("config", "set", "token", "-", input=TOKEN).ok()
    remote_id = create_one(invoke)
    assert ids_in(served) == [remote_id]
    assert not db_path.exists()
    # --db beats the profile's base_url: back to a local file.
    local = served.parent / "local.db"
    local_id = create_one(invoke, "--db", str(local))
    assert ids_in(local) == [local_id]
    # CONVRISK_TOKEN beats the profile's token.
    monkeypatch.setenv("CONVRISK_TOKEN", "tok_wrong_wrong_wrong_wrong")
    assert invoke("conv", "list").code == 4


def test_base_url_flag_and_environment(
    invoke: Invoke, service: tuple[str, Path], monkeypatch: pytest.MonkeyPatch, db_path: Path
) -> None:
    url, served = service
    monkeypatch.setenv("CONVRISK_TOKEN", TOKEN)
    by_flag = create_one(invoke, "--base-url", url)
    monkeypatch.setenv("CONVRISK_BASE_URL", url)
    by_env = create_one(invoke)
    assert set(ids_in(served)) == {by_flag, by_env}
    assert not db_path.exists()


def test_both_base_url_and_db_at_one_level_is_a_usage_error(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    both_flags = invoke(
        "--base-url", "http://127.0.0.1:1", "--db", str(tmp_path / "x.db"), "conv", "list"
    )
    assert both_flags.code == 2 and "not both" in both_flags.stderr
    monkeypatch.setenv("CONVRISK_BASE_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("CONVRISK_DB", str(tmp_path / "x.db"))
    both_env = invoke("conv", "list")
    assert both_env.code == 2 and "not both" in both_env.stderr


def test_resolve_reports_every_source() -> None:
    from convrisk.cli.settings import Flags, resolve

    env: dict[str, Any] = {
        "HOME": "/h",
        "CONVRISK_TIMEOUT": "4",
        "CONVRISK_CONFIG": "/nonexistent/c.toml",
    }
    settings = resolve(Flags(db="/tmp/f.db"), env)
    assert settings.timeout == 4 and settings.sources["timeout"] == "CONVRISK_TIMEOUT"
    assert settings.db == Path("/tmp/f.db") and settings.sources["db"] == "--db"
    assert settings.page_size == 100 and settings.sources["page_size"] == "default"
    assert settings.max_retries == 2 and settings.output == "table"
    assert not settings.is_remote
