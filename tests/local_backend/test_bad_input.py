"""Every input rule: the bad input is refused naming its parameter, and the file is unchanged."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from convrisk.api_client.errors import InvalidRequestError
from convrisk.api_client.resources import RISK_PROFILES
from convrisk.local_backend.backend import LocalBackend

from .conftest import dump, risk_body

Call = Callable[[LocalBackend, str, str], object]


class Weird:
    """An object JSON cannot encode."""


def conv_create(body: Any) -> Call:
    return lambda b, conv_id, rp_id: b.conversations.create(body)


def conv_update(body: Any) -> Call:
    return lambda b, conv_id, rp_id: b.conversations.update(conv_id, body)


def risk_create(body: Any) -> Call:
    return lambda b, conv_id, rp_id: b.risk_profiles.create(body)


def risk_update(body: Any) -> Call:
    return lambda b, conv_id, rp_id: b.risk_profiles.update(rp_id, body)


def conv_list(filters: Any = None, **paging: Any) -> Call:
    return lambda b, conv_id, rp_id: b.conversations.list(filters, **paging)


def risk_list(filters: Any = None, **paging: Any) -> Call:
    return lambda b, conv_id, rp_id: b.risk_profiles.list(filters, **paging)


def nested(levels: int, inner: Any = None) -> Any:
    """Objects nested `levels` deep (`inner`, if given, is the innermost level)."""
    value: Any = {} if inner is None else inner
    for _ in range(levels - 1):
        value = {"k": value}
    return value


def conv_create_keyed(key: Any) -> Call:
    return lambda b, conv_id, rp_id: b.conversations.create(
        {"contact_id": "ct_new"}, idempotency_key=key
    )


CASES: list[tuple[str, Call, str | None]] = [
    # create conversation: exactly one of contact_id / group_id, strings, nothing else
    ("conv neither party", conv_create({}), "contact_id"),
    ("conv both empty", conv_create({"contact_id": "", "group_id": ""}), "contact_id"),
    ("conv both parties", conv_create({"contact_id": "c", "group_id": "g"}), "group_id"),
    ("conv contact not string", conv_create({"contact_id": 12}), "contact_id"),
    ("conv group not string", conv_create({"group_id": ["g"]}), "group_id"),
    ("conv unknown attribute", conv_create({"contact_id": "c", "is_muted": True}), "is_muted"),
    ("conv contact bad unicode", conv_create({"contact_id": "\ud800"}), "contact_id"),
    ("conv body not object", conv_create(["contact_id"]), None),
    ("conv body None", conv_create(None), None),
    # update conversation
    ("upd unknown attribute", conv_update({"contact_id": "c"}), "contact_id"),
    ("upd created_at", conv_update({"created_at": 1}), "created_at"),
    ("upd is_pinned string", conv_update({"is_pinned": "true"}), "is_pinned"),
    ("upd is_muted int", conv_update({"is_muted": 1}), "is_muted"),
    ("upd is_muted null", conv_update({"is_muted": None}), "is_muted"),
    ("upd archived_at string", conv_update({"archived_at": "now"}), "archived_at"),
    ("upd archived_at bool", conv_update({"archived_at": True}), "archived_at"),
    ("upd archived_at negative", conv_update({"archived_at": -1}), "archived_at"),
    ("upd archived_at nan", conv_update({"archived_at": float("nan")}), "archived_at"),
    ("upd archived_at inf", conv_update({"archived_at": float("inf")}), "archived_at"),
    ("upd archived_at too big", conv_update({"archived_at": 2**64}), "archived_at"),
    ("upd pinned message number", conv_update({"pinned_message_id": 5}), "pinned_message_id"),
    ("upd pinned message empty", conv_update({"pinned_message_id": ""}), "pinned_message_id"),
    (
        "upd pinned message bad unicode",
        conv_update({"pinned_message_id": "m\udfff"}),
        "pinned_message_id",
    ),
    ("upd valid then unknown", conv_update({"is_muted": True, "colour": "red"}), "colour"),
    ("upd body not object", conv_update("is_muted"), None),
    # create risk profile
    *[
        (
            f"risk missing {key}",
            risk_create({k: v for k, v in risk_body().items() if k != key}),
            key,
        )
        for key in (f.name for f in RISK_PROFILES.creatable() if f.required)
    ],
    ("risk customer null", risk_create(risk_body(customer_id=None)), "customer_id"),
    ("risk customer empty", risk_create(risk_body(customer_id="")), "customer_id"),
    ("risk customer blank", risk_create(risk_body(customer_id="  ")), "customer_id"),
    ("risk customer number", risk_create(risk_body(customer_id=7)), "customer_id"),
    ("risk customer bad unicode", risk_create(risk_body(customer_id="\ud83d")), "customer_id"),
    ("risk type number", risk_create(risk_body(profile_type=3)), "profile_type"),
    ("risk type empty", risk_create(risk_body(profile_type="")), "profile_type"),
    ("risk score string", risk_create(risk_body(score="72")), "score"),
    ("risk score bool", risk_create(risk_body(score=True)), "score"),
    ("risk score nan", risk_create(risk_body(score=float("nan"))), "score"),
    ("risk score -inf", risk_create(risk_body(score=float("-inf"))), "score"),
    ("risk score too big", risk_create(risk_body(score=10**30)), "score"),
    ("risk details list", risk_create(risk_body(details=[1, 2])), "details"),
    ("risk details string", risk_create(risk_body(details='{"a": 1}')), "details"),
    ("risk details nan", risk_create(risk_body(details={"x": float("nan")})), "details"),
    ("risk details not json", risk_create(risk_body(details={"x": Weird()})), "details"),
    ("risk details bad unicode", risk_create(risk_body(details={"x": "\udc00"})), "details"),
    ("risk unknown attribute", risk_create(risk_body(owner="me")), "owner"),
    ("risk details 65 deep", risk_create(risk_body(details=nested(65))), "details"),
    ("risk details 300 deep", risk_create(risk_body(details=nested(300))), "details"),
    ("risk details deep arrays", risk_create(risk_body(details={"a": nested(64, [])})), "details"),
    # update risk profile
    ("rupd customer_id", risk_update({"customer_id": "cus_2"}), "customer_id"),
    ("rupd customer_id same", risk_update({"customer_id": "cus_1", "score": 1}), "customer_id"),
    ("rupd unknown", risk_update({"updated_at": 1}), "updated_at"),
    ("rupd score null", risk_update({"score": None}), "score"),
    ("rupd score string", risk_update({"score": "1"}), "score"),
    ("rupd score too big", risk_update({"score": -(2**70)}), "score"),
    ("rupd details null", risk_update({"details": None}), "details"),
    ("rupd details list", risk_update({"details": []}), "details"),
    ("rupd details 300 deep", risk_update({"details": nested(300)}), "details"),
    ("rupd type empty", risk_update({"profile_type": ""}), "profile_type"),
    ("rupd type null", risk_update({"profile_type": None}), "profile_type"),
    # list: limit, cursors, filters
    ("list limit 0", conv_list(limit=0), "limit"),
    ("list limit 101", conv_list(limit=101), "limit"),
    ("list limit string", conv_list(limit="10"), "limit"),
    ("list limit float", conv_list(limit=1.5), "limit"),
    ("list limit bool", risk_list(limit=True), "limit"),
    ("list limit null", risk_list(limit=None), "limit"),
    ("list cursor of other resource", conv_list(starting_after="rp_01H"), "starting_after"),
    ("list cursor not an id", risk_list(ending_before="abc"), "ending_before"),
    ("list cursor number", conv_list(starting_after=5), "starting_after"),
    ("list cursor bad unicode", conv_list(starting_after="conv_\ud800"), "starting_after"),
    (
        "list both cursors",
        conv_list(starting_after="conv_a", ending_before="conv_b"),
        "ending_before",
    ),
    ("list unknown filter", conv_list({"customer_id": "c"}), "customer_id"),
    ("list risk unknown filter", risk_list({"muted": True}), "muted"),
    ("list muted string", conv_list({"muted": "true"}), "muted"),
    ("list archived int", conv_list({"archived": 1}), "archived"),
    ("list pinned string", conv_list({"pinned": "yes"}), "pinned"),
    ("list group empty", conv_list({"group_id": ""}), "group_id"),
    ("list group number", conv_list({"group_id": 3}), "group_id"),
    ("list group bad unicode", conv_list({"group_id": "\ud800"}), "group_id"),
    ("list customer empty", risk_list({"customer_id": ""}), "customer_id"),
    ("list type number", risk_list({"profile_type": 1}), "profile_type"),
    ("list filters not object", conv_list(["muted"]), None),
    ("list filters number", risk_list(5), None),
    # idempotency key
    ("key not string", conv_create_keyed(123), "idempotency_key"),
    ("key empty", conv_create_keyed(""), "idempotency_key"),
    ("key too long", conv_create_keyed("k" * 256), "idempotency_key"),
    ("key bad unicode", conv_create_keyed("k\ud800"), "idempotency_key"),
    ("key not ascii", conv_create_keyed("clé-1"), "idempotency_key"),
    ("key newline", conv_create_keyed("a\nb"), "idempotency_key"),
    ("key leading space", conv_create_keyed(" k"), "idempotency_key"),
    # ids from a command-line argument that is not UTF-8
    ("retrieve id bad unicode", lambda b, c, r: b.conversations.retrieve("conv_\udcff"), "id"),
    ("update id bad unicode", lambda b, c, r: b.risk_profiles.update("rp_\udcff", {}), "id"),
    ("delete id bad unicode", lambda b, c, r: b.conversations.delete("conv_\ud800"), "id"),
]


@pytest.fixture
def seeded(backend: LocalBackend, db_path: Path) -> tuple[LocalBackend, str, str]:
    """A backend holding one of each object, and an idempotency key already used."""
    conv = backend.conversations.create({"group_id": "grp_1"}, idempotency_key="seed")
    profile = backend.risk_profiles.create(risk_body())
    return backend, conv["id"], profile["id"]


@pytest.mark.parametrize(("call", "param"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_names_the_param_and_changes_nothing(
    seeded: tuple[LocalBackend, str, str], db_path: Path, call: Call, param: str | None
) -> None:
    backend, conv_id, rp_id = seeded
    before = dump(db_path)
    with pytest.raises(InvalidRequestError) as caught:
        call(backend, conv_id, rp_id)
    assert caught.value.param == param
    assert caught.value.status == 400
    assert caught.value.message
    assert dump(db_path) == before
    # The backend is still fine afterwards.
    assert backend.conversations.retrieve(conv_id)["id"] == conv_id


def test_the_rule_is_checked_before_the_object_is_looked_up(
    seeded: tuple[LocalBackend, str, str],
) -> None:
    backend, _, _ = seeded
    # An invalid body for a missing object is an invalid request, not a not-found.
    with pytest.raises(InvalidRequestError) as caught:
        backend.risk_profiles.update("rp_missing", {"customer_id": "x"})  # type: ignore[typeddict-unknown-key]
    assert caught.value.param == "customer_id"


def test_the_dump_sees_every_change(seeded: tuple[LocalBackend, str, str], db_path: Path) -> None:
    # Guards the test above: a change that does happen shows up in the dump.
    backend, conv_id, _ = seeded
    before = dump(db_path)
    backend.conversations.update(conv_id, {"is_muted": True})
    assert dump(db_path) != before


def test_a_create_too_deep_with_a_key_stores_nothing_and_lists_keep_working(
    backend: LocalBackend,
) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        backend.risk_profiles.create(risk_body(details=nested(300)), idempotency_key="deep")
    assert caught.value.param == "details"
    assert backend.risk_profiles.list()["data"] == []
    # The key was not used up by the refused request.
    made = backend.risk_profiles.create(risk_body(details=nested(64)), idempotency_key="deep")
    assert backend.risk_profiles.list()["data"] == [made]
    assert made["details"] == nested(64)
