"""api_client.remote.concurrently.each_at_once: the results in order, whatever a call answers; an
error every request would meet stops the rest (NotSent); an exception raised reaches the caller."""

from __future__ import annotations

import threading

import pytest

from convrisk.api_client.errors import APIConnectionError, NotFoundError, NotSent
from convrisk.api_client.remote.concurrently import each_at_once


def test_the_results_come_in_the_items_order_none_included() -> None:
    def call(item: int, stop: threading.Event) -> int | None:
        return None if item % 2 else item * 10

    assert each_at_once(list(range(20)), call, at_once=4) == [
        None if n % 2 else n * 10 for n in range(20)
    ]


def test_an_error_of_one_item_is_its_result_and_the_others_go_on() -> None:
    def call(item: int, stop: threading.Event) -> int | NotFoundError:
        return NotFoundError("gone") if item == 3 else item

    results = each_at_once(list(range(6)), call, at_once=2)
    assert isinstance(results[3], NotFoundError)
    assert [r for n, r in enumerate(results) if n != 3] == [0, 1, 2, 4, 5]


def test_an_unreachable_service_stops_the_items_not_taken_yet() -> None:
    def call(item: int, stop: threading.Event) -> int | APIConnectionError:
        return APIConnectionError("refused") if item == 0 else item

    results = each_at_once(list(range(50)), call, at_once=1)
    assert isinstance(results[0], APIConnectionError)
    assert all(isinstance(r, NotSent) for r in results[1:])


def test_an_exception_a_call_raises_reaches_the_caller() -> None:
    def call(item: int, stop: threading.Event) -> int:
        if item == 2:
            raise RuntimeError("broken")
        return item

    with pytest.raises(RuntimeError, match="broken"):
        each_at_once(list(range(5)), call, at_once=2)
