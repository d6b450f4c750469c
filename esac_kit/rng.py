"""Seeded randomness for item generators: a SHA-256 counter stream, identical on every machine (amendment 001 §4)."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import MutableSequence, Sequence
from typing import TypeVar

T = TypeVar("T")


def derive_item_key(pool_seed: str, suite: str, item_id: str, major: int) -> bytes:
    """Return the 32-byte key of one item's stream: HMAC-SHA256(pool seed, "suite/item/major") (amendment 001 §3)."""
    return hmac.new(pool_seed.encode(), f"{suite}/{item_id}/{major}".encode(), hashlib.sha256).digest()


class ItemRng:
    """A deterministic random stream; unlike random.Random its output is defined here, not by the interpreter."""

    def __init__(self, key: bytes):
        self._key = key
        self._counter = 0
        self._buffer = b""

    def _bytes(self, n: int) -> bytes:
        while len(self._buffer) < n:
            block = hashlib.sha256(self._key + self._counter.to_bytes(8, "big")).digest()
            self._counter += 1
            self._buffer += block
        out, self._buffer = self._buffer[:n], self._buffer[n:]
        return out

    def _below(self, n: int) -> int:
        """Uniform integer in [0, n) by rejection sampling."""
        if n <= 0:
            raise ValueError("range is empty")
        nbytes = (n.bit_length() + 7) // 8 + 1
        limit = (256**nbytes // n) * n
        while True:
            value = int.from_bytes(self._bytes(nbytes), "big")
            if value < limit:
                return value % n

    def randint(self, low: int, high: int) -> int:
        """Uniform integer in [low, high], both ends included."""
        return low + self._below(high - low + 1)

    def randrange(self, start: int, stop: int | None = None, step: int = 1) -> int:
        """Uniform integer from range(start, stop, step)."""
        values = range(start, stop, step) if stop is not None else range(start)
        return values[self._below(len(values))]

    def random(self) -> float:
        """Uniform float in [0, 1) with 53 random bits."""
        return (int.from_bytes(self._bytes(7), "big") >> 3) / float(1 << 53)

    def choice(self, seq: Sequence[T]) -> T:
        """One element of a non-empty sequence."""
        return seq[self._below(len(seq))]

    def shuffle(self, seq: MutableSequence) -> None:
        """Fisher–Yates shuffle in place."""
        for i in range(len(seq) - 1, 0, -1):
            j = self._below(i + 1)
            seq[i], seq[j] = seq[j], seq[i]

    def sample(self, population: Sequence[T], k: int) -> list[T]:
        """k distinct elements in random order."""
        pool = list(population)
        if k > len(pool):
            raise ValueError("sample larger than population")
        self.shuffle(pool)
        return pool[:k]

    def weighted_choice(self, seq: Sequence[T], weights: Sequence[int]) -> T:
        """One element chosen with integer weights."""
        total = sum(weights)
        point = self._below(total)
        for item, weight in zip(seq, weights):
            if point < weight:
                return item
            point -= weight
        raise AssertionError("unreachable")

    def fork(self, label: str) -> "ItemRng":
        """An independent child stream, so adding draws in one part of a generator leaves others unchanged."""
        return ItemRng(hmac.new(self._key, label.encode(), hashlib.sha256).digest())
