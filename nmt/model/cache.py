"""The self-attention cache of a Transformer decoder in search: the keys and values of the
target positions decoded so far, written in place into a preallocated buffer.

Concatenating each step's keys onto the cache copies the whole cache every step, and beam
search's reordering copies it again. Here a step writes its one position into free room of
the buffer (grown by `BLOCK` positions when full), and reordering gathers the rows in use into
a second buffer of the same size (made at the first reorder: greedy search, which reorders
only when a sentence ends, may never need it), which then becomes the cache while the first
waits as the next reorder's target: one contiguous copy per row, nothing allocated after the
first steps.
Keys and values share one buffer, [rows, positions, 2, heads, head_dim], so a reorder is one
`index_select`, and each row's positions so far are one contiguous block of memory.

A cache is used once: `appended` and `select` hand back the next one, which may reuse the
buffers of this one (search never steps or reorders a state twice), as fairseq's
`reorder_incremental_state` reorders its cache in place. The contract is enforced, not
assumed: a cache that has handed on its buffers is spent, and any later use of it raises,
where it would otherwise read rows that a later reorder overwrote.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from nmt.model.attention import Memory

BLOCK = 32  # positions added when a cache is full


class SpentCacheError(RuntimeError):
    """A KeyValueCache used after `appended` or `select` handed its buffers on."""


@dataclass
class KeyValueCache:
    buffer: torch.Tensor  # [R, L, 2, H, d]: rows x positions x (keys, values) x heads x dims
    spare: torch.Tensor | None  # the same layout; where the next reorder gathers to
    rows: int  # rows in use
    length: int  # positions written
    spent: bool = False  # set once `appended` or `select` has handed the buffers on

    def _spend(self) -> None:
        self._check()
        self.spent = True

    def _check(self) -> None:
        if self.spent:
            raise SpentCacheError(
                "this KeyValueCache was appended to or reordered already, and the cache that "
                "came back may have overwritten its rows: use that one (a cache is used once)"
            )

    @classmethod
    def empty(cls, rows: int, heads: int, head_dim: int, like: torch.Tensor) -> KeyValueCache:
        """A cache of `rows` rows and no positions, of `like`'s dtype and device."""
        return cls(like.new_empty(rows, BLOCK, 2, heads, head_dim), None, rows, 0)

    def memory(self) -> Memory:
        """The positions written, as a memory of keys and values [rows, H, length, d]."""
        self._check()
        used = self.buffer[: self.rows, : self.length]
        return Memory(used[:, :, 0].transpose(1, 2), used[:, :, 1].transpose(1, 2), None)

    def appended(self, newer: Memory) -> KeyValueCache:
        """This cache with `newer`'s positions (keys and values [rows, H, T, d]) after its own;
        this one is spent."""
        self._spend()
        end = self.length + newer.keys.size(-2)
        buffer, spare = self.buffer, self.spare
        if end > buffer.size(1):
            grown = -(-end // BLOCK) * BLOCK
            buffer = buffer.new_empty(buffer.size(0), grown, *buffer.shape[2:])
            buffer[: self.rows, : self.length] = self.buffer[: self.rows, : self.length]
            spare = None
        room = buffer[: self.rows, self.length : end]
        room[:, :, 0] = newer.keys.transpose(1, 2)
        room[:, :, 1] = newer.values.transpose(1, 2)
        return KeyValueCache(buffer, spare, self.rows, end)

    def select(self, indices: torch.Tensor) -> KeyValueCache:
        """The cache of rows `indices` (reordered or repeated), gathered into the spare buffer;
        this one is spent."""
        self._spend()
        rows = indices.numel()
        spare = self.spare
        if spare is None or spare.size(0) < rows:
            spare = self.buffer.new_empty(max(rows, self.buffer.size(0)), *self.buffer.shape[1:])
        source, target = self.buffer[: self.rows, : self.length], spare[:rows, : self.length]
        if source.requires_grad:  # autograd records no out= arguments
            target.copy_(source.index_select(0, indices))
        else:
            torch.index_select(source, 0, indices, out=target)
        buffer = self.buffer if self.buffer.size(0) >= rows else None
        return KeyValueCache(spare, buffer, rows, self.length)
