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

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from nmt.checkpoint import checkpoint_file, save_checkpoint
from nmt.data.tokenizer import Tokenizer
from nmt.errors import UserError
from nmt.reads import record
from nmt.search.constraints import Constraints

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
    record(path, f"the shortlist of {checkpoint}")
    stored = torch.load(path, map_location="cpu", weights_only=True)
    shortlist = Shortlist(stored["candidates"], stored["frequent"], stored["target_size"])
    if (shortlist.candidates.size(0), shortlist.target_size) != (source_size, target_size):
        raise UserError(
            f"{path} was built for vocabularies of {shortlist.candidates.size(0)} source and "
            f"{shortlist.target_size} target pieces, but the model has {source_size} and "
            f"{target_size}; build it again with `nmt shortlist --checkpoint {checkpoint}`."
        )
    return shortlist


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
