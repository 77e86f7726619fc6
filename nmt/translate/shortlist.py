"""A vocabulary shortlist (Schwenk 2007, L'Hostis et al. 2016): which target pieces a batch's
translations may hold, so that search computes the output layer for those alone.

Each source piece keeps its most likely translations from a lexical table p(target piece |
source piece), learnt by IBM Model 1 (Brown et al. 1993) on the training pairs, as Marian's
and Sockeye's shortlists are (from fast_align's table, which is IBM Model 1 with a diagonal
prior). A lexical table, not the model's attention, because it needs no pass of the model
over the corpus (a few seconds for 29k pairs) and because a Transformer's attention is a poor
aligner: its peak often sits on a neighbour of the word translated. A batch may write the
union of its source pieces' best K, the target's most frequent pieces (what any sentence
needs: punctuation, articles), the special pieces and any piece its constraints or prefix
name. A source piece the table never saw contributes nothing and falls back on the frequent
pieces.

The shortlist is stored beside its checkpoint (`best.pt` -> `best.shortlist.pt`).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from nmt.checkpoint import checkpoint_file, load_checkpoint, restore_model, save_checkpoint
from nmt.data.splits import read_pairs
from nmt.data.tokenizer import Tokenizer
from nmt.errors import UserError
from nmt.search.constraints import Constraints
from nmt.translate.loading import tokenizer_towards

SUFFIX = ".shortlist.pt"


@dataclass(frozen=True)
class Shortlist:
    candidates: torch.Tensor  # [source vocabulary, C] target ids, most likely first; -1: none
    frequent: torch.Tensor  # [F] target ids, most frequent first
    target_size: int  # the target vocabulary's size

    @property
    def depth(self) -> int:
        """The most candidates per source piece it can give (C)."""
        return self.candidates.size(1)

    def columns(
        self,
        src_ids: Sequence[Sequence[int]],
        best: int,
        always: Iterable[int] = (),
        constraints: Iterable[Constraints | None] = (),
    ) -> torch.Tensor:
        """The sorted target ids a batch may write: each source piece's `best` candidates,
        the frequent pieces, `always` (the special pieces) and every piece the constraints
        (included phrases, prefixes) name."""
        pieces = sorted({piece for ids in src_ids for piece in ids})
        chosen = self.candidates[torch.tensor(pieces, dtype=torch.long), :best].flatten()
        named = [
            piece
            for guide in constraints
            if guide is not None
            for piece in guide.named_pieces()
            if piece < self.target_size  # a copied piece lies beyond the output layer
        ]
        extra = torch.tensor([*always, *named], dtype=torch.long)
        return torch.cat([chosen[chosen >= 0], self.frequent, extra]).unique()

    def save(self, checkpoint: Path) -> Path:
        """Writes it beside `checkpoint` (atomically, as checkpoints are); returns its path."""
        path = shortlist_file(checkpoint)
        save_checkpoint(
            path,
            {
                "candidates": self.candidates,
                "frequent": self.frequent,
                "target_size": self.target_size,
            },
        )
        return path


def shortlist_file(checkpoint: Path | str) -> Path:
    """Where the shortlist of `checkpoint` (a .pt file or a run directory) lives."""
    path = checkpoint_file(checkpoint)
    return path.with_name(path.stem + SUFFIX)


def load_shortlist(checkpoint: Path | str, source_size: int, target_size: int) -> Shortlist:
    """The shortlist beside `checkpoint`, checked against the model's vocabulary sizes."""
    path = shortlist_file(checkpoint)
    if not path.is_file():
        raise UserError(
            f"--shortlist needs {path}, which does not exist; build it with "
            f"`nmt shortlist --checkpoint {checkpoint}` (it learns from the training data)."
        )
    stored = torch.load(path, map_location="cpu", weights_only=True)
    shortlist = Shortlist(stored["candidates"], stored["frequent"], stored["target_size"])
    if (shortlist.candidates.size(0), shortlist.target_size) != (source_size, target_size):
        raise UserError(
            f"{path} was built for vocabularies of {shortlist.candidates.size(0)} source and "
            f"{shortlist.target_size} target pieces, but the model has {source_size} and "
            f"{target_size}; build it again with `nmt shortlist --checkpoint {checkpoint}`."
        )
    return shortlist


def build_shortlist(
    checkpoint: Path | str,
    data_path: Path | None = None,
    depth: int = 100,
    frequent: int = 100,
    max_pairs: int = 200_000,
) -> tuple[Shortlist, Path]:
    """Learns the shortlist of `checkpoint` from the first `max_pairs` training pairs of each
    of its directions (read from `data_path` instead of its data.path, if given), in the
    model's own pieces (a multilingual model's sources with their language tag, so the tag
    names its language's pieces), and writes it beside the checkpoint."""
    path = checkpoint_file(checkpoint)
    _, tokenizer, config = restore_model(load_checkpoint(path), path)
    data = (
        config.data if data_path is None else dataclasses.replace(config.data, path=str(data_path))
    )
    pairs = []
    for source, target in data.pairs:
        towards = tokenizer_towards(tokenizer, data.target_languages, target)
        text = list(itertools.islice(read_pairs(data.direction(source, target)), max_pairs))
        sources = towards.src.encode([src for src, _ in text])
        targets = towards.tgt.encode([tgt for _, tgt in text])
        pairs.extend(zip(sources, targets, strict=True))
    shortlist = learn_shortlist(pairs, tokenizer.src.size, tokenizer.tgt.size, depth, frequent)
    return shortlist, shortlist.save(path)


def translation_shortlist(
    checkpoint: Path, model: torch.nn.Module, tokenizer: Tokenizer, best: int
) -> Shortlist:
    """The shortlist beside `checkpoint` for translating with `model` (a Seq2Seq or an
    Ensemble) and each source piece's `best` candidates; a UserError if it cannot serve."""
    shortlist = load_shortlist(checkpoint, tokenizer.src.size, tokenizer.tgt.size)
    if any(
        getattr(member, "copy", None) is not None for member in getattr(model, "members", [model])
    ):
        raise UserError(
            f"shortlist {best}: a model that copies (model.copy) writes its source's pieces "
            "too, which a shortlist cannot name; translate it without --shortlist."
        )
    if best > shortlist.depth:
        raise UserError(
            f"shortlist {best}: the shortlist of {checkpoint} holds {shortlist.depth} "
            "candidates per source piece; ask for at most that, or build it deeper with "
            "`nmt shortlist --depth N`."
        )
    return shortlist


def learn_shortlist(
    pairs: Iterable[tuple[Sequence[int], Sequence[int]]],
    source_size: int,
    target_size: int,
    depth: int = 100,
    frequent: int = 100,
    iterations: int = 5,
) -> Shortlist:
    """IBM Model 1's p(t | s) by `iterations` rounds of EM over the pairs of piece ids (each
    target piece aligned to one of its sentence's source pieces), then each source piece's
    `depth` most likely target pieces, and the `frequent` most frequent target pieces."""
    links = _links(pairs)
    if links is None:
        raise UserError("the training data has no pair with both sides non-empty.")
    sources, targets, slots, target_counts = links
    keys, inverse = torch.unique(sources * target_size + targets, return_inverse=True)
    key_source = keys // target_size
    table = torch.ones(keys.numel(), dtype=torch.float64)
    for _ in range(iterations):
        weights = table[inverse]
        per_slot = torch.zeros(int(slots.max()) + 1, dtype=torch.float64)
        posterior = weights / per_slot.index_add_(0, slots, weights)[slots]
        counts = torch.zeros_like(table).index_add_(0, inverse, posterior)
        totals = torch.zeros(source_size, dtype=torch.float64).index_add_(0, key_source, counts)
        table = counts / totals[key_source]
    return Shortlist(
        _best_per_source(keys, table, source_size, target_size, depth),
        target_counts.argsort(descending=True, stable=True)[:frequent],
        target_size,
    )


def _links(
    pairs: Iterable[tuple[Sequence[int], Sequence[int]]],
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor] | None:
    """Every (source piece, target piece) of every pair, with the number of the target
    position each belongs to (its EM normalises over its sentence's source pieces), and how
    often each target piece occurs."""
    sources, targets, slots, counts = [], [], [], {}
    slot = 0
    for src, tgt in pairs:
        if not src or not tgt:
            continue
        src_row = torch.tensor(src, dtype=torch.long)
        tgt_row = torch.tensor(tgt, dtype=torch.long)
        sources.append(src_row.repeat(len(tgt)))
        targets.append(tgt_row.repeat_interleave(len(src)))
        slots.append(torch.arange(slot, slot + len(tgt)).repeat_interleave(len(src)))
        slot += len(tgt)
        for piece in tgt:
            counts[piece] = counts.get(piece, 0) + 1
    if not sources:
        return None
    target_counts = torch.zeros(max(counts) + 1, dtype=torch.long)
    target_counts[torch.tensor(list(counts))] = torch.tensor(list(counts.values()))
    return torch.cat(sources), torch.cat(targets), torch.cat(slots), target_counts


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
