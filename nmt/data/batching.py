"""Sentence pairs -> subword ids -> length-bucketed token batches.

Reading the pairs is nmt/data/splits.py's job; this module encodes them, drops what cannot train
(empty or over-long pairs) and cuts batches under a token budget.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from nmt.data.directions import draw_order
from nmt.data.splits import ParallelText
from nmt.data.tokenizer import Tokenizer, Vocab
from nmt.errors import UserError

log = logging.getLogger(__name__)


@dataclass
class EncodedSplit:
    """Subword ids of a split; `keep` maps row -> index in the original text (after filtering)."""

    src: list[list[int]]
    tgt: list[list[int]]
    keep: list[int]


def encode_split(text: ParallelText, tokenizer: Tokenizer, max_len: int | None) -> EncodedSplit:
    """Encodes both sides (the targets as training reads them, `Tokenizer.encode_targets`);
    with `max_len`, drops empty and over-long pairs and logs the counts."""
    src, tgt = tokenizer.src.encode(text.src), tokenizer.encode_targets(text.tgt)
    if max_len is None:
        return EncodedSplit(src, tgt, list(range(len(src))))
    empty = long = 0
    keep = []
    tag = int(tokenizer.start_id != tokenizer.tgt.bos_id)  # decoder_bos: a tag before each
    for index, (s, t) in enumerate(zip(src, tgt, strict=True)):
        if not s or len(t) == tag:
            empty += 1
        elif len(s) > max_len or len(t) - tag > max_len:
            long += 1
        else:
            keep.append(index)
    log.info(
        "%s: %d pairs kept, %d empty dropped, %d longer than data.max_len=%d dropped",
        text.origin,
        len(keep),
        empty,
        long,
        max_len,
    )
    if not keep:
        raise UserError(
            f"{text.origin}: no training pairs left ({empty} empty, {long} longer than "
            f"data.max_len={max_len} subwords). Check the files or raise data.max_len."
        )
    return EncodedSplit([src[i] for i in keep], [tgt[i] for i in keep], keep)


@dataclass
class Batch:
    """Padded tensors of one batch. Masks are True on real tokens."""

    src: torch.Tensor  # [B, S]
    src_lengths: torch.Tensor  # [B], on the CPU (packing needs it there)
    tgt_in: torch.Tensor  # [B, T]  bos y_1 ... y_n  (a language tag for bos: decoder_bos)
    tgt_out: torch.Tensor  # [B, T]  y_1 ... y_n eos
    num_tgt_tokens: int  # real target tokens, eos included

    def to(self, device: torch.device) -> Batch:
        return Batch(
            self.src.to(device),
            self.src_lengths,
            self.tgt_in.to(device),
            self.tgt_out.to(device),
            self.num_tgt_tokens,
        )


def pad(sequences: Sequence[Sequence[int]], pad_id: int) -> torch.Tensor:
    """[B, max_len] int64, right-padded."""
    width = max((len(s) for s in sequences), default=0)
    out = torch.full((len(sequences), max(width, 1)), pad_id, dtype=torch.long)
    for row, ids in enumerate(sequences):
        out[row, : len(ids)] = torch.as_tensor(ids, dtype=torch.long)
    return out


def make_batch(
    src: Sequence[Sequence[int]], tgt: Sequence[Sequence[int]], vocab: Vocab, src_pad: int
) -> Batch:
    """The batch of the pairs (src[i], tgt[i]). A target that starts with a language tag
    (`Tokenizer.encode_targets` with data.tags: decoder_bos) starts the decoder from that
    tag instead of bos, and the tag is not a token to predict."""
    tags = set(vocab.tags.values())
    starts = [t[0] if t and t[0] in tags else vocab.bos_id for t in tgt]
    tgt = [t[1:] if start != vocab.bos_id else t for t, start in zip(tgt, starts, strict=True)]
    tgt_in = pad([[start, *t] for start, t in zip(starts, tgt, strict=True)], vocab.pad_id)
    tgt_out = pad([[*t, vocab.eos_id] for t in tgt], vocab.pad_id)
    lengths = torch.tensor([max(len(s), 1) for s in src], dtype=torch.long)
    return Batch(pad(src, src_pad), lengths, tgt_in, tgt_out, sum(len(t) + 1 for t in tgt))


class TokenBatcher:
    """Batches of similar-length pairs under a budget of padded target tokens.

    Each epoch shuffles the pairs, sorts them by length within pools of many batches (so
    padding stays small while batches still vary), cuts batches under the budget and
    shuffles the batch order. The order is a pure function of (seed, epoch), which is what
    makes resuming at a batch position exact.

    With `groups` (the sizes of consecutive runs of pairs: the directions of a multilingual
    corpus) an epoch instead draws as many pairs as there are, group d with probability
    `probabilities[d]` (nmt/data/directions.py), so batches mix the directions.
    """

    def __init__(
        self,
        src_lengths: Sequence[int],
        tgt_lengths: Sequence[int],
        batch_tokens: int,
        seed: int,
        pool_batches: int = 100,
        groups: Sequence[int] | None = None,
        probabilities: Sequence[float] | None = None,
    ):
        self.src_lengths = src_lengths
        self.tgt_lengths = [length + 1 for length in tgt_lengths]  # + bos/eos
        self.batch_tokens = batch_tokens
        self.seed = seed
        self.pool_batches = pool_batches
        self.groups = groups
        self.probabilities = probabilities

    def epoch(self, epoch: int) -> list[list[int]]:
        rng = random.Random(self.seed * 1_000_003 + epoch)
        if self.groups is None:
            order = list(range(len(self.tgt_lengths)))
            rng.shuffle(order)
        else:
            order = draw_order(self.groups, self.probabilities, rng)
        mean = sum(self.tgt_lengths) / max(len(self.tgt_lengths), 1)
        pool = max(1, int(self.pool_batches * self.batch_tokens / mean))
        batches: list[list[int]] = []
        for start in range(0, len(order), pool):
            chunk = sorted(
                order[start : start + pool],
                key=lambda i: (self.tgt_lengths[i], self.src_lengths[i]),
            )
            batches.extend(self._cut(chunk))
        rng.shuffle(batches)
        return batches

    def _cut(self, indices: list[int]) -> list[list[int]]:
        batches, current, longest = [], [], 0
        for index in indices:
            length = self.tgt_lengths[index]
            if current and max(longest, length) * (len(current) + 1) > self.batch_tokens:
                batches.append(current)
                current, longest = [], 0
            current.append(index)
            longest = max(longest, length)
        if current:
            batches.append(current)
        return batches
