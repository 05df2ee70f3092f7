"""`from convrisk import Client`: the library on both backends (a local file, and an in-process
`serve` on loopback), its keyword verbs, and bad input refused as the command line refuses it."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import convrisk
import convrisk.api_client
import convrisk.api_client.errors as tree
from convrisk import Client, InvalidRequestError, NotFoundError, PermissionDeniedError
from convrisk.cli.errors import UsageProblem
from convrisk.cli.settings import default_db_path, parse_value
from convrisk.local_backend.backend import LocalBackend
from tests.shared_server import SharedServer, shared_server

TOKEN = "library-token-5c1d"


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedServer]:
    """One in-process serve for the module's remote legs, each over its test's database."""
    with shared_server(tmp_path_factory.mktemp("library"), TOKEN) as running:
        yield running


@dataclass
class Leg:
    """A library client on one backend, the database behind it, and serve's log (remote)."""

    name: str
    client: Client
    store: LocalBackend
    log: list[str]

    def count(self) -> int:
        """How many conversations the database holds."""
        return len(self.store.conversations.list(limit=100).records)


@pytest.fixture(params=["local", "remote"])
def leg(request: pytest.FixtureRequest, tmp_path: Path, shared: SharedServer) -> Iterator[Leg]:
    """Each test once on Client.local and once on Client.remote."""
    db = tmp_path / "app.db"
    with LocalBackend(db) as store:
        log: list[str] = []
        if request.param == "local":
            with Client.local(db=db) as client:
                yield Leg("local", client, store, log)
        else:
            with shared.serving(store, log) as server, Client.remote(server.url, TOKEN) as client:
                yield Leg("remote", client, store, log)


def test_the_five_verbs_take_the_interfaces_field_names(leg: Leg) -> None:
    conversations = leg.client.conversations
    made = conversations.create(contact_id="c_1")
    assert (made["contact_id"], made["group_id"], made["is_muted"]) == ("c_1", None, False)
    muted = conversations.update(made["id"], is_muted=True, pinned_message_id="m_1")
    assert (muted["is_muted"], muted["pinned_message_id"]) == (True, "m_1")
    assert conversations.retrieve(made["id"]) == muted
    cleared = conversations.update(made["id"], pinned_message_id=None)
    assert cleared["pinned_message_id"] is None and cleared["is_muted"] is True
    assert conversations.delete(made["id"]) == {"id": made["id"], "deleted": True}
    with pytest.raises(NotFoundError):
        conversations.retrieve(made["id"])

    profiles = leg.client.risk_profiles
    profile = profiles.create(
        customer_id="cus_1", profile_type="moderate", score=55, details={"horizon": "10y"}
    )
    changed = profiles.update(profile["id"], score=60.5, details={})
    assert (changed["score"], changed["details"], changed["customer_id"]) == (60.5, {}, "cus_1")
    assert [p["id"] for p in profiles.iterate(customer_id="cus_1")] == [profile["id"]]
    assert profiles.list(customer_id="cus_2").records == []


def test_list_gives_a_page_and_iterate_every_record_lazily(leg: Leg) -> None:
    made = [leg.client.conversations.create(group_id=f"g_{n}")["id"] for n in range(7)]
    leg.client.conversations.update(made[2], is_muted=True)
    first = leg.client.conversations.list(limit=3)
    assert first.has_more and len(first.records) == 3 and first.cursor == first.records[-1]["id"]
    ids, page = [r["id"] for r in first.records], first
    while page.has_more:
        page = leg.client.conversations.list(limit=3, starting_after=page.cursor)
        ids += [r["id"] for r in page.records]
    assert ids == made[::-1]  # newest first
    assert leg.client.conversations.list().records == [
        leg.client.conversations.retrieve(id) for id in made[::-1]
    ]
    walk = leg.client.conversations.iterate()
    assert next(walk)["id"] == made[-1]
    assert [r["id"] for r in walk] == made[-2::-1]
    assert [r["id"] for r in leg.client.conversations.iterate(muted=True)] == [made[2]]
    assert len(list(leg.client.conversations.iterate(muted=False, group_id="g_2"))) == 0


def test_an_idempotency_key_makes_a_repeated_create_answer_the_same(leg: Leg) -> None:
    once = leg.client.conversations.create(contact_id="c_1", idempotency_key="order-17")
    again = leg.client.conversations.create(contact_id="c_1", idempotency_key="order-17")
    assert again == once and leg.count() == 1


@pytest.mark.parametrize(
    ("call", "param", "words"),
    [
        (lambda c: c.conversations.create(contact="c_1"), "contact", "Unknown parameter"),
        (lambda c: c.conversations.create(), "contact_id", "Exactly one of"),
        (lambda c: c.conversations.create(contact_id="a", group_id="b"), "group_id", "both"),
        (lambda c: c.conversations.create(contact_id=7), "contact_id", "string"),
        (lambda c: c.risk_profiles.create(customer_id="c"), "profile_type", "Missing"),
        (
            lambda c: c.risk_profiles.create(
                customer_id="c", profile_type="t", score="high", details={}
            ),
            "score",
            "must be a number",
        ),
        (lambda c: c.conversations.iterate(mutd=True), "mutd", "Unknown parameter"),
        (lambda c: c.conversations.iterate(muted="yes"), "muted", "true or false"),
        (lambda c: c.conversations.list(limit=0), "limit", "from 1 to 100"),
        (lambda c: c.conversations.list(limit=101), "limit", "from 1 to 100"),
        (
            lambda c: c.conversations.create(contact_id="c", idempotency_key=""),
            "idempotency_key",
            "1 to 255",
        ),
    ],
)
def test_a_wrong_keyword_or_value_is_refused_by_name_and_nothing_is_sent(
    leg: Leg, call: Any, param: str, words: str
) -> None:
    with pytest.raises(InvalidRequestError) as refused:
        call(leg.client)  # iterate too: at the call, not at the first record
    assert words in str(refused.value)
    assert refused.value.param == param and param in str(refused.value)
    assert not refused.value.answered
    assert leg.count() == 0 and leg.log == []


def test_an_update_refuses_an_unknown_field_or_a_wrong_value_and_changes_nothing(
    leg: Leg,
) -> None:
    made = leg.client.conversations.create(contact_id="c_1")
    log_before = list(leg.log)
    cases: list[tuple[dict[str, Any], str]] = [
        ({"is_muted": "yes"}, "is_muted"),
        ({"muted": True}, "muted"),
        ({"contact_id": "c_2"}, "contact_id"),
        ({"archived_at": "soon"}, "archived_at"),
    ]
    for fields, param in cases:
        with pytest.raises(InvalidRequestError) as refused:
            leg.client.conversations.update(made["id"], **fields)
        assert refused.value.param == param and param in str(refused.value)
        assert not refused.value.answered
    assert leg.client.conversations.retrieve(made["id"]) == made
    if leg.name == "remote":
        assert len(leg.log) == len(log_before) + 1  # the retrieve only: no update was sent


def test_a_missing_id_is_not_found_on_retrieve_update_and_delete(leg: Leg) -> None:
    missing = "conv_00000000000000000000000000"
    calls: list[Callable[[], object]] = [
        lambda: leg.client.conversations.retrieve(missing),
        lambda: leg.client.conversations.update(missing, is_muted=True),
        lambda: leg.client.conversations.delete(missing),
        lambda: leg.client.risk_profiles.retrieve("rp_00000000000000000000000000"),
    ]
    for call in calls:
        with pytest.raises(NotFoundError) as absent:
            call()
        assert "No such" in str(absent.value)
    assert isinstance(absent.value, convrisk.ConvriskError)


@pytest.mark.parametrize(
    "url",
    [
        "ftp://x",
        "http://",
        "https://",
        "api.example.com",
        "https://u:p@api.example.com",
        "http://h?q=1",
        "http://h:port",
    ],
)
def test_a_bad_base_url_raises_the_command_lines_message(url: str) -> None:
    with pytest.raises(UsageProblem) as cli:
        parse_value("base_url", url, "base_url")
    with pytest.raises(InvalidRequestError) as refused:
        Client.remote(url, "token")
    assert str(refused.value) == cli.value.message and refused.value.param == "base_url"
    assert "p@" not in str(refused.value)


def test_a_token_over_plain_http_to_another_host_is_refused_unless_allowed() -> None:
    with pytest.raises(InvalidRequestError, match="Refusing to send the token over plain http"):
        Client.remote("http://api.example.com", "token")
    Client.remote("http://api.example.com", "token", allow_insecure_http=True).close()
    with pytest.raises(InvalidRequestError, match="token"):
        Client.remote("https://api.example.com", "two words")


def test_remote_takes_timeout_and_retries_as_the_settings_bound_them() -> None:
    bad_timeouts: list[Any] = [0, float("inf"), float("nan"), 1e10, 10**400, True, "3"]
    for timeout in bad_timeouts:
        with pytest.raises(InvalidRequestError, match="timeout must be a number of seconds"):
            Client.remote("https://api.example.com", "t", timeout=timeout)
    bad_retries: list[Any] = [-1, 11, 1.5, True]
    for retries in bad_retries:
        with pytest.raises(InvalidRequestError, match="max_retries must be a whole number"):
            Client.remote("https://api.example.com", "t", max_retries=retries)
    Client.remote("https://api.example.com", "t", timeout=3600, max_retries=10).close()


def test_local_refuses_a_database_in_a_missing_folder(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "app.db"
    with pytest.raises(InvalidRequestError, match="does not exist") as refused:
        Client.local(db=missing)
    assert refused.value.param == "db" and not missing.parent.exists()
    with pytest.raises(InvalidRequestError, match="is a directory"):
        Client.local(db=tmp_path)
    for nothing in ("", 7):
        with pytest.raises(InvalidRequestError, match="db must be the path of a database file"):
            Client.local(db=nothing)  # type: ignore[arg-type]


def test_local_without_a_path_is_the_commands_default_database() -> None:
    with Client.local() as client:
        made = client.conversations.create(contact_id="c_1")
    default = default_db_path(os.environ)
    assert oct(default.parent.stat().st_mode & 0o777) == "0o700"
    with LocalBackend(default) as store:
        assert store.conversations.retrieve(made["id"]) == made


def write_config(home: Path, text: str) -> Path:
    """A config file of mode 0600 at the default place under `home`."""
    path = home / ".config" / "convrisk" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    path.chmod(0o600)
    return path


def test_from_profile_reads_the_settings_as_the_command_line_does(
    tmp_path: Path, shared: SharedServer, monkeypatch: pytest.MonkeyPatch, own_home: Path
) -> None:
    served, db = tmp_path / "served.db", tmp_path / "mine.db"
    with LocalBackend(served) as store, shared.serving(store, []) as server:
        write_config(
            own_home,
            f'[staging]\nbase_url = "{server.url}"\ntoken = "{TOKEN}"\n[mine]\ndb = "{db}"\n',
        )
        with Client.from_profile("staging") as client:
            remote = client.conversations.create(contact_id="c_remote")
        assert store.conversations.retrieve(remote["id"]) == remote
        monkeypatch.setenv("CONVRISK_PROFILE", "mine")
        with Client.from_profile() as client:
            local = client.conversations.create(contact_id="c_local")
        with LocalBackend(db) as mine:
            assert mine.conversations.retrieve(local["id"]) == local
        # The environment over the profile, as on the command line.
        monkeypatch.setenv("CONVRISK_DB", str(served))
        with Client.from_profile("mine") as client:
            assert client.conversations.retrieve(remote["id"]) == remote


def test_from_profile_refuses_what_the_command_line_refuses(
    monkeypatch: pytest.MonkeyPatch, own_home: Path
) -> None:
    with pytest.raises(InvalidRequestError, match="No profile 'nope'"):
        Client.from_profile("nope")
    with pytest.raises(InvalidRequestError, match="Invalid profile name"):
        Client.from_profile("no spaces")
    monkeypatch.setenv("CONVRISK_BASE_URL", "ftp://x")
    with pytest.raises(InvalidRequestError, match="CONVRISK_BASE_URL: base_url must be an http"):
        Client.from_profile()


def test_a_read_only_profiles_writes_are_refused_and_nothing_is_sent(
    tmp_path: Path, own_home: Path
) -> None:
    db = tmp_path / "app.db"
    with LocalBackend(db) as store:
        kept = store.conversations.create({"contact_id": "c_1"})
        write_config(own_home, f'[prod]\ndb = "{db}"\nread_only = true\n')
        with Client.from_profile("prod") as client:
            assert client.conversations.retrieve(kept["id"]) == kept
            writes: list[Callable[[], object]] = [
                lambda: client.conversations.create(contact_id="c_2"),
                lambda: client.conversations.update(kept["id"], is_muted=True),
                lambda: client.conversations.delete(kept["id"]),
            ]
            for write in writes:
                with pytest.raises(PermissionDeniedError, match="'prod' is read-only"):
                    write()
        assert store.conversations.list().records == [kept]


def test_from_profile_warns_of_a_config_file_others_can_read(own_home: Path) -> None:
    path = write_config(own_home, '[default]\ntoken = "secret-token-1234"\n')
    path.chmod(0o644)
    with pytest.warns(UserWarning, match="readable by others"), Client.from_profile():
        pass


def test_the_public_names_are_the_packages_own() -> None:
    assert set(convrisk.__all__) <= set(dir(convrisk))
    for name in convrisk.__all__:
        value = getattr(convrisk, name)
        if name in convrisk.api_client.__all__ and name != "Client":
            assert value is getattr(convrisk.api_client, name), name
    for name in ("ConvriskError", "NotFoundError", "InvalidRequestError", "ServiceError"):
        assert getattr(convrisk, name) is getattr(tree, name)
    assert convrisk.__version__ == convrisk.api_client.__version__
    with pytest.raises(AttributeError, match="no attribute 'Clinet'"):
        convrisk.Clinet  # noqa: B018
