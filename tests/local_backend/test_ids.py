"""Ids: prefixed, 26 Crockford base32 characters, time first, string order = creation order."""

from __future__ import annotations

import random

from convrisk.local_backend.store import ids


def test_encode_and_decode_round_trip() -> None:
    rng = random.Random(1)
    for _ in range(200):
        number = rng.getrandbits(130)
        body = ids.encode(number)
        assert len(body) == 26
        assert ids.decode(body) == number


def test_string_order_is_number_order() -> None:
    rng = random.Random(2)
    numbers = [rng.getrandbits(rng.choice([10, 60, 128])) for _ in range(300)]
    assert sorted(numbers, key=ids.encode) == sorted(numbers)


def test_time_comes_first() -> None:
    early = ids.number_at(1_700_000_000_000)
    late = ids.number_at(1_700_000_000_001, 0)
    assert early < late
    assert ids.time_of(early) == 1_700_000_000_000
    assert ids.encode(late)[:10] == ids.encode(ids.number_at(1_700_000_000_001, 2**80 - 1))[:10]


def test_next_number_is_strictly_greater_than_the_last() -> None:
    last = ids.number_at(5_000, 2**80 - 1)
    assert ids.next_number(5_000, last) == last + 1
    assert ids.next_number(4_000, last) == last + 1
    assert ids.time_of(ids.next_number(6_000, last)) == 6_000


def test_foreign_strings_are_not_ids() -> None:
    assert ids.parse("conv_", "rp_" + "0" * 26) is None
    assert ids.parse("conv_", "conv_short") is None
    assert ids.parse("conv_", "conv_" + "U" * 26) is None  # U is not in the alphabet
    assert ids.parse("conv_", "conv_" + "0" * 25 + "1") == 1


def test_ids_made_in_one_millisecond_carry_80_fresh_random_bits() -> None:
    numbers = [ids.number_at(1_700_000_000_000) for _ in range(200)]
    randomness = [n & (2**80 - 1) for n in numbers]
    assert all(ids.time_of(n) == 1_700_000_000_000 for n in numbers)
    assert len(set(randomness)) == 200
    # all 80 bits are drawn: the chance that 200 draws all miss the top bit is 2**-200
    assert max(randomness) >= 2**79
    assert min(randomness) < 2**79


def test_a_seeded_source_repeats_its_ids_and_another_seed_does_not() -> None:
    def minted(seed: int) -> list[int]:
        source, last, out = ids.seeded(seed, "conversations"), None, []
        for ms in (5_000, 5_000, 5_001, 7_000):
            last = source.next_number(ms, last)
            out.append(last)
        return out

    assert minted(7) == minted(7)
    assert set(minted(7)).isdisjoint(minted(8))
    assert [ids.time_of(n) for n in minted(7)][-1] == 7_000


def test_each_resource_has_a_seeded_stream_of_its_own() -> None:
    conversations = ids.seeded(7, "conversations").next_number(1_000, None)
    profiles = ids.seeded(7, "risk_profiles").next_number(1_000, None)
    assert conversations != profiles


def test_a_fixed_time_keeps_ids_unique_and_in_order() -> None:
    source = ids.seeded(7, "conversations", fixed_millis=0)
    last: int | None = None
    numbers = []
    for ms in range(1_700_000_000_000, 1_700_000_000_000 + 500):
        last = source.next_number(ms, last)
        numbers.append(last)
    assert numbers == sorted(set(numbers))
    assert all(ids.time_of(n) == 0 for n in numbers)
    assert all(ids.encode(n).startswith("0" * 10) for n in numbers)


def test_the_system_source_is_not_seeded() -> None:
    assert ids.SYSTEM.next_number(1_000, None) != ids.SYSTEM.next_number(1_000, None)


def test_ids_issued_together_are_the_ones_issued_one_by_one() -> None:
    # Within one millisecond, after a step back of the clock, and on a fixed time alike: the
    # same numbers, in the same order, as a seeded stream gives them one at a time.
    millis = [5_000, 5_000, 4_999, 5_001, 5_001, 9_000]
    start = ids.number_at(5_000, 2**80 - 2)
    for fixed in (None, 7):
        single = ids.seeded(3, "risk_profiles", fixed_millis=fixed)
        together = ids.seeded(3, "risk_profiles", fixed_millis=fixed)
        last, expected = start, []
        for ms in millis:
            last = single.next_number(ms, last)
            expected.append(last)
        assert together.next_numbers(millis, start) == expected
        assert together.next_numbers([], None) == []
