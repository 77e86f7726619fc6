"""A set of texts in 8 bytes each: what cleaning keeps to find duplicates in a corpus of
any size (nmt/data/cleaning.py)."""

from __future__ import annotations

import hashlib

import numpy as np


class SeenHashes:
    """A set of texts kept as 64-bit hashes (BLAKE2b, the same in every run), 8 bytes each
    in a sorted array, with the newest in a small set until they are merged in."""

    def __init__(self, merge_every: int = 1 << 16):
        self.sorted = np.zeros(0, dtype=np.uint64)
        self.recent: set[int] = set()
        self.merge_every = merge_every

    def seen_or_add(self, text: str) -> bool:
        """Whether `text` was added before; adds it."""
        key = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
        if key in self.recent:
            return True
        at = int(np.searchsorted(self.sorted, np.uint64(key)))
        if at < self.sorted.size and int(self.sorted[at]) == key:
            return True
        self.recent.add(key)
        if len(self.recent) >= self.merge_every:
            self.sorted = np.union1d(self.sorted, np.fromiter(self.recent, dtype=np.uint64))
            self.recent.clear()
        return False
