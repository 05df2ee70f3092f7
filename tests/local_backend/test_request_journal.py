"""The request journal's bound: the oldest requests go, and are counted."""

from __future__ import annotations

from convrisk.local_backend.sandbox.request_journal import Journal


def test_over_the_bound_the_oldest_are_dropped_and_counted() -> None:
    journal = Journal("tok-12345678", size=3)
    for number in range(5):
        journal.record("GET", f"/v1/x{number}", "", [], None, 200, None, 0.001)
    kept = [journal.entry_json(entry) for entry in journal.entries()]
    assert [entry["path"] for entry in kept] == ["/v1/x2", "/v1/x3", "/v1/x4"]
    assert [entry["seq"] for entry in kept] == [3, 4, 5]
    assert journal.dropped == 2
    assert journal.clear() == 3
    assert journal.dropped == 0
    assert journal.entries() == []
