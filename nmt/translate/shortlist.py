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
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from nmt.checkpoint import checkpoint_file, load_checkpoint, restore_model, save_checkpoint
from nmt.config import DataConfig
from nmt.data.splits import read_pairs
from nmt.data.tokenizer import Tokenizer
from nmt.errors import UserError
from nmt.search.constraints import Constraints
from nmt.translate.lexical_table import BLOCK_LINKS, PiecePairs, ibm_model_1
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
    block_links: int = BLOCK_LINKS,
) -> Shortlist:
    """IBM Model 1's p(t | s) by `iterations` rounds of EM over the pairs of piece ids
    (nmt/translate/lexical_table.py, `block_links` links at a time), then each source
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
