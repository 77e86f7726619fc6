"""Learning a checkpoint's vocabulary shortlist (`nmt shortlist`): IBM Model 1 over its
training pairs in its own pieces (nmt/corpus/lexical_table.py), each source piece's most
likely target pieces, and the most frequent target pieces; what translation does with it is
nmt/translate/shortlist.py's.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import torch

from nmt.checkpoint import checkpoint_file, load_checkpoint, restore_model
from nmt.config import DataConfig
from nmt.corpus.lexical_table import BLOCK_LINKS, PiecePairs, ibm_model_1
from nmt.data.splits import read_pairs
from nmt.data.tokenizer import Tokenizer
from nmt.errors import UserError
from nmt.translate.loading import tokenizer_towards
from nmt.translate.shortlist import Shortlist


def build_shortlist(
    checkpoint: Path | str,
    data_path: Path | None = None,
    depth: int = 100,
    frequent: int = 100,
    max_pairs: int = 200_000,
) -> tuple[Shortlist, Path]:
    """Learns the shortlist of `checkpoint` from the first `max_pairs` training pairs of each
    of its directions (read from `data_path` instead of its data.path, if given), in the
    model's own pieces: a multilingual model's sources as it reads them, with the target
    language's tag in front where data.tags puts it there (then the tag's own candidates
    are its language's common pieces; under decoder_bos the sources carry no tag). It is
    written beside the checkpoint."""
    path = checkpoint_file(checkpoint)
    _, tokenizer, config = restore_model(load_checkpoint(path), path)
    data = (
        config.data if data_path is None else dataclasses.replace(config.data, path=str(data_path))
    )
    pairs = _encoded_pairs(data, tokenizer, max_pairs)
    shortlist = learn_shortlist(pairs, tokenizer.src.size, tokenizer.tgt.size, depth, frequent)
    return shortlist, shortlist.save(path)


def _encoded_pairs(
    data: DataConfig, tokenizer: Tokenizer, max_pairs: int, chunk: int = 10_000
) -> Iterator[tuple[list[int], list[int]]]:
    """The first `max_pairs` pairs of each direction as piece ids, encoded a chunk at a time."""
    for source, target in data.pairs:
        towards = tokenizer_towards(tokenizer, data.target_languages, target)
        text = itertools.islice(read_pairs(data.direction(source, target)), max_pairs)
        while pairs := list(itertools.islice(text, chunk)):
            sources = towards.src.encode([src for src, _ in pairs])
            yield from zip(sources, towards.tgt.encode([tgt for _, tgt in pairs]), strict=True)


def learn_shortlist(
    pairs: Iterable[tuple[Sequence[int], Sequence[int]]],
    source_size: int,
    target_size: int,
    depth: int = 100,
    frequent: int = 100,
    iterations: int = 5,
    block_links: int = BLOCK_LINKS,
) -> Shortlist:
    """IBM Model 1's p(t | s) by `iterations` rounds of EM over the pairs of piece ids
    (nmt/corpus/lexical_table.py, `block_links` links at a time), then each source
    piece's `depth` most likely target pieces, and the `frequent` most frequent target
    pieces."""
    corpus = PiecePairs.of(pairs)
    if not len(corpus):
        raise UserError("the training data has no pair with both sides non-empty.")
    keys, table = ibm_model_1(corpus, source_size, target_size, iterations, block_links)
    counts = torch.bincount(corpus.tgt.long(), minlength=target_size)
    most = counts.argsort(descending=True, stable=True)[:frequent]
    return Shortlist(
        _best_per_source(keys, table, source_size, target_size, depth),
        most[counts[most] > 0],
        target_size,
    )


def _best_per_source(
    keys: torch.Tensor, table: torch.Tensor, source_size: int, target_size: int, depth: int
) -> torch.Tensor:
    """[source_size, depth]: each source piece's most probable target pieces, -1 padded."""
    order = table.argsort(descending=True, stable=True)
    order = order[(keys[order] // target_size).argsort(stable=True)]  # by source, best first
    source, target = keys[order] // target_size, keys[order] % target_size
    starts = torch.zeros(source_size + 1, dtype=torch.long)
    starts[1:] = torch.bincount(source, minlength=source_size).cumsum(0)
    rank = torch.arange(order.numel()) - starts[source]
    kept = rank < depth
    candidates = torch.full((source_size, depth), -1, dtype=torch.long)
    candidates[source[kept], rank[kept]] = target[kept]
    return candidates
