"""The idempotency keys of an import: one per record and line, sorting in file order."""

from __future__ import annotations

from convrisk.cli.importing.plan import idempotency_key

RECORD = {"customer_id": "cus_1", "profile_type": "moderate", "score": 5, "details": {}}


def test_the_keys_of_a_file_sort_in_file_order() -> None:
    keys = [idempotency_key("risk_profiles", line, RECORD, "") for line in (1, 2, 9, 10, 99, 100)]
    assert keys == sorted(keys)
    assert keys[2].startswith("import-0000000009-")
    assert len(set(keys)) == len(keys)


def test_a_key_changes_with_the_record_the_run_and_the_resource_but_not_field_order() -> None:
    key = idempotency_key("risk_profiles", 7, RECORD, "")
    assert idempotency_key("risk_profiles", 7, dict(reversed(RECORD.items())), "") == key
    assert idempotency_key("risk_profiles", 7, {**RECORD, "score": 6}, "") != key
    assert idempotency_key("risk_profiles", 7, RECORD, "pipeline-42") != key
    assert idempotency_key("conversations", 7, RECORD, "") != key
    # A header value: printable ASCII, within the 255 characters the interface allows.
    assert key.isascii() and key.isprintable() and len(key) <= 255


def test_a_copied_record_keeps_its_key_wherever_it_stands_in_a_newer_export() -> None:
    from convrisk.cli.importing.files import Record
    from convrisk.cli.importing.plan import CONVERSATION_IMPORT, plan

    exported = {"id": "conv_01", "contact_id": "c_1", "group_id": None, "is_muted": True}
    first = plan(CONVERSATION_IMPORT, Record(1, exported), "", copy=True)
    later = plan(CONVERSATION_IMPORT, Record(40, {**exported, "last_active_at": 9}), "", copy=True)
    assert first.key == later.key and first.key is not None
    assert (first.body, first.then) == ({"contact_id": "c_1"}, {"is_muted": True})
    other = plan(CONVERSATION_IMPORT, Record(1, {**exported, "id": "conv_02"}), "", copy=True)
    assert other.key != first.key


def test_a_key_is_the_one_earlier_versions_sent_for_the_same_record() -> None:
    # An import interrupted under one build and finished with a newer one replays what was
    # created: the key of a record must not change between builds (KEY_VERSION says when).
    fields = {"score": 5, "details": {"b": "é", "a": [1.5]}, "customer_id": "cus_1"}
    assert idempotency_key("risk_profiles", 7, fields, "run-ü") == (
        "import-0000000007-b0d070bdd2cc81293a001c38957c98c426ab13c78a0861da0596ec700d224e79"
    )
    assert idempotency_key("conversations", 12345, {"contact_id": "ct_1"}, "") == (
        "import-0000012345-757e3d76d0120dc5e1607668e03b66dd07a8d338756bb510ade7ef8fbca62729"
    )
