"""A lexical translation table p(target piece | source piece) learnt by IBM Model 1 (Brown
et al. 1993) on pairs of piece ids, in memory bounded by the table, not the corpus.

Every target position of a pair links to every source position of it, so a corpus of 200k
pairs holds some 10^8 links: far too many to hold at once (8 bytes an id, several ids a
link). The pairs are kept as flat int32 ids, and each round of EM builds their links a block
of `block_links` at a time, adding the block's expected counts into one float64 entry per
distinct (source, target) piece pair that co-occurs anywhere: memory is the table plus one
block, whatever the corpus's size.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import torch

BLOCK_LINKS = 1 << 21  # links built at once: about 100 MB of tensors


@dataclass(frozen=True)
class PiecePairs:
    """Pairs of piece-id sequences as flat int32 ids with each side's offsets; pairs with an
    empty side are left out (IBM Model 1 learns nothing from them)."""

    src: torch.Tensor  # [all source ids] int32
    tgt: torch.Tensor  # [all target ids] int32
    src_offsets: torch.Tensor  # [P + 1] int64: pair p's sources are src[offsets[p]:offsets[p+1]]
    tgt_offsets: torch.Tensor  # [P + 1] int64

    @classmethod
    def of(cls, pairs: Iterable[tuple[Sequence[int], Sequence[int]]]) -> PiecePairs:
        src, tgt, src_lengths, tgt_lengths = array("i"), array("i"), array("q"), array("q")
        for source, target in pairs:
            if source and target:
                src.extend(source)
                tgt.extend(target)
                src_lengths.append(len(source))
                tgt_lengths.append(len(target))
        return cls(
            _tensor(src, torch.int32),
            _tensor(tgt, torch.int32),
            _offsets(_tensor(src_lengths, torch.int64)),
            _offsets(_tensor(tgt_lengths, torch.int64)),
        )

    def __len__(self) -> int:
        return self.src_offsets.numel() - 1

    def blocks(self, block_links: int = BLOCK_LINKS) -> Iterator[tuple[torch.Tensor, ...]]:
        """(sources, targets, slots) of every link, a block of about `block_links` at a time
        (at least one pair): link l joins source piece sources[l] to target piece
        targets[l], whose target position in the block is slots[l]."""
        src_lengths, tgt_lengths = self.src_offsets.diff(), self.tgt_offsets.diff()
        links = (src_lengths * tgt_lengths).cumsum(0)
        start = 0
        while start < len(self):
            done = int(links[start - 1]) if start else 0
            end = int(torch.searchsorted(links, done + block_links, side="right"))
            end = max(end, start + 1)
            yield self._links(start, end, src_lengths[start:end], tgt_lengths[start:end])
            start = end

    def _links(
        self, start: int, end: int, src_lengths: torch.Tensor, tgt_lengths: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        counts = src_lengths * tgt_lengths  # [p] links of each pair
        pair = torch.repeat_interleave(torch.arange(end - start), counts)  # [L]
        within = torch.arange(int(counts.sum())) - (counts.cumsum(0) - counts)[pair]
        width = src_lengths[pair]
        position, target_position = within % width, within // width  # target-major, as read
        tgt_start = self.tgt_offsets[start:end][pair] + target_position
        sources = self.src[self.src_offsets[start:end][pair] + position].long()
        targets = self.tgt[tgt_start].long()
        return sources, targets, tgt_start - self.tgt_offsets[start]


def ibm_model_1(
    pairs: PiecePairs,
    source_size: int,
    target_size: int,
    iterations: int = 5,
    block_links: int = BLOCK_LINKS,
) -> tuple[torch.Tensor, torch.Tensor]:
    """IBM Model 1's table after `iterations` rounds of EM from uniform: (keys, p), where
    keys [K] are the sorted source * target_size + target of the piece pairs that co-occur
    and p [K] float64 their p(target | source)."""
    keys = torch.zeros(0, dtype=torch.long)
    for sources, targets, _ in pairs.blocks(block_links):
        keys = torch.cat([keys, (sources * target_size + targets).unique()]).unique()
    key_source = keys // target_size
    table = torch.ones(keys.numel(), dtype=torch.float64)
    for _ in range(iterations):
        counts = torch.zeros_like(table)
        for sources, targets, slots in pairs.blocks(block_links):
            index = torch.searchsorted(keys, sources * target_size + targets)
            weights = table[index]
            per_slot = torch.zeros(int(slots.max()) + 1, dtype=torch.float64)
            per_slot.index_add_(0, slots, weights)  # each target position's total
            counts.index_add_(0, index, weights / per_slot[slots])
        totals = torch.zeros(source_size, dtype=torch.float64).index_add_(0, key_source, counts)
        table = counts / totals[key_source]
    return keys, table


def _tensor(values: array, dtype: torch.dtype) -> torch.Tensor:
    return torch.frombuffer(values, dtype=dtype).clone() if values else torch.zeros(0, dtype=dtype)


def _offsets(lengths: torch.Tensor) -> torch.Tensor:
    return torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)])
