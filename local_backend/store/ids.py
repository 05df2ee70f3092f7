"""Time-sortable ids: a prefix and a ULID-like string (10 characters of time, 16 of randomness).

The 26 characters are a 130-bit number in Crockford base32, uppercase, whose top bits are the
creation time in milliseconds and whose low 80 bits are random. The alphabet is in ASCII order,
so ids of one resource compare as strings exactly as they do as numbers: by creation time.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from convrisk.api_client.resources import ID_ALPHABET as ALPHABET
from convrisk.api_client.resources import ID_BODY_LENGTH as BODY_LENGTH

RANDOM_BITS = 80
_MAX_BODY = (1 << (5 * BODY_LENGTH)) - 1
_DIGITS = {char: value for value, char in enumerate(ALPHABET)}
# Two characters (ten bits) at a time: half the steps of one character at a time.
_PAIRS = [high + low for high in ALPHABET for low in ALPHABET]


def encode(number: int) -> str:
    """The 26-character Crockford base32 form of a number below 2**130."""
    if not 0 <= number <= _MAX_BODY:
        raise ValueError(f"id number out of range: {number}")
    # Unrolled (13 pairs of 10 bits, most significant first): an id is made per object created.
    p = _PAIRS
    return (
        p[number >> 120]
        + p[number >> 110 & 1023]
        + p[number >> 100 & 1023]
        + p[number >> 90 & 1023]
        + p[number >> 80 & 1023]
        + p[number >> 70 & 1023]
        + p[number >> 60 & 1023]
        + p[number >> 50 & 1023]
        + p[number >> 40 & 1023]
        + p[number >> 30 & 1023]
        + p[number >> 20 & 1023]
        + p[number >> 10 & 1023]
        + p[number & 1023]
    )


def decode(body: str) -> int | None:
    """The number a 26-character id body stands for, or None when it is not one of ours."""
    if len(body) != BODY_LENGTH:
        return None
    number = 0
    for char in body:
        digit = _DIGITS.get(char)
        if digit is None:
            return None
        number = number * 32 + digit
    return number


Randomness = Callable[[], int]


def system_randomness() -> int:
    """80 random bits from the operating system."""
    # What secrets.randbits(80) does (os.urandom, 10 bytes), without importing secrets,
    # which loads hmac and OpenSSL's hashlib at every `create`; drawn for many ids at once
    # (one system call per batch of an import instead of one per id).
    if not _drawn:
        size = RANDOM_BITS // 8
        block = os.urandom(size * _DRAWN_AT_ONCE)
        _drawn.extend(
            int.from_bytes(block[start : start + size], "big")
            for start in range(0, len(block), size)
        )
    return _drawn.pop()


# Random numbers drawn ahead by system_randomness; a forked child (`serve` workers) draws its
# own, never its parent's.
_DRAWN_AT_ONCE = 256
_drawn: list[int] = []
os.register_at_fork(after_in_child=_drawn.clear)


class SeededRandomness:
    """A repeatable stream of 80-bit numbers: the same seed, the same sequence."""

    def __init__(self, seed: str) -> None:
        import random  # here: only a seeded `serve` needs it

        self._seed = seed
        self._rng = random.Random(seed)

    def __call__(self) -> int:
        """The next number of the stream."""
        return self._rng.getrandbits(RANDOM_BITS)

    def rewind(self) -> None:
        """Start the stream over from its first number."""
        self._rng.seed(self._seed)


def number_at(millis: int, randomness: int | None = None) -> int:
    """The id number for a time in milliseconds and 80 random bits (drawn when not given)."""
    if randomness is None:
        randomness = system_randomness()
    return (max(millis, 0) << RANDOM_BITS) | randomness


def time_of(number: int) -> int:
    """The creation time, in milliseconds, carried by an id number."""
    return number >> RANDOM_BITS


def next_number(millis: int, last: int | None, randomness: Randomness = system_randomness) -> int:
    """A fresh id number for `millis`, strictly greater than `last` (the largest one issued).

    Within one millisecond, or when the clock went back, the successor of `last` is used, so ids
    stay strictly increasing in creation order.
    """
    fresh = number_at(millis, randomness())
    if last is not None and fresh <= last:
        return last + 1
    return fresh


@dataclass(frozen=True)
class IdSource:
    """Where one resource's new ids come from: their random bits, and their time.

    `fixed_millis` set: every id carries that time instead of its creation time (a seeded
    sandbox on the real clock, whose ids must repeat); the successor rule of `next_number`
    keeps them unique and in creation order.
    """

    randomness: Randomness = system_randomness
    fixed_millis: int | None = None

    def next_number(self, millis: int, last: int | None) -> int:
        """The number of the next id, created at `millis`, above `last`."""
        at = millis if self.fixed_millis is None else self.fixed_millis
        return next_number(at, last, self.randomness)

    def next_numbers(self, millis: list[int], last: int | None) -> list[int]:
        """The numbers of ids created at each of `millis`, in order: what `next_number` gives
        for each in turn, each above the one before (and `last`)."""
        randomness = self.randomness
        fixed = self.fixed_millis
        numbers: list[int] = []
        for ms in millis:
            number = max(ms if fixed is None else fixed, 0) << RANDOM_BITS | randomness()
            if last is not None and number <= last:
                number = last + 1
            numbers.append(number)
            last = number
        return numbers

    @property
    def repeatable(self) -> bool:
        """Whether the ids come from a seeded stream, which `rewind` starts over."""
        return isinstance(self.randomness, SeededRandomness)

    def rewind(self) -> None:
        """Start a seeded stream over (a sandbox reset); the system's randomness has no start."""
        if isinstance(self.randomness, SeededRandomness):
            self.randomness.rewind()


SYSTEM = IdSource()


def seeded(seed: int, resource: str, *, fixed_millis: int | None = None) -> IdSource:
    """The repeatable ids of one resource under `serve --seed`: a stream of its own, so each
    resource's ids depend only on its own creates."""
    return IdSource(SeededRandomness(f"ids:{resource}:{seed}"), fixed_millis)


def id_at(prefix: str, millis: int) -> str:
    """The smallest possible id for a time: useful as a cursor that points at a moment."""
    return prefix + encode(number_at(millis, 0))


def parse(prefix: str, object_id: str) -> int | None:
    """The number of an id with this prefix, or None when the id is not of that form."""
    if not object_id.startswith(prefix):
        return None
    return decode(object_id[len(prefix) :])
