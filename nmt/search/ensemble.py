"""Several models decoding as one, behind the same encode / init_state / step / select calls,
so greedy, beam and sampling search drive an ensemble without knowing it is one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn


@dataclass
class EnsembleState:
    members: tuple[Any, ...]  # one decoder state per member model

    def select(self, indices: torch.Tensor) -> EnsembleState:
        return EnsembleState(tuple(state.select(indices) for state in self.members))


class Ensemble(nn.Module):
    """Members must share source and target vocabularies (checked where checkpoints load)."""

    def __init__(self, members: Sequence[nn.Module]):
        super().__init__()
        self.members = nn.ModuleList(members)
        copying = [i for i, m in enumerate(members) if getattr(m, "copy", None) is not None]
        # the first copying member: the others read its copied pieces as <unk>, (V, <unk>)
        self.copier = copying[0] if copying else None
        copy = members[copying[0]].copy if copying else None
        self.unknown = (copy.vocab_size, copy.unk_id) if copy is not None else None

    def encode(self, src: torch.Tensor, src_lengths: torch.Tensor) -> tuple[Any, ...]:
        return tuple(member.encode(src, src_lengths) for member in self.members)

    def init_state(
        self,
        encoded: tuple[Any, ...],
        need_weights: bool = True,
        shortlist: torch.Tensor | None = None,
    ) -> EnsembleState:
        return EnsembleState(
            tuple(
                member.init_state(member_encoded, need_weights, shortlist)
                for member, member_encoded in zip(self.members, encoded, strict=True)
            )
        )

    def step(
        self, state: EnsembleState, prev_tokens: torch.Tensor
    ) -> tuple[torch.Tensor, EnsembleState, torch.Tensor | None]:
        """prev_tokens [B] -> mean log-probabilities [B, V], next state, weights [B, 1, S]
        (None where the state needs none).

        The mean of log-probabilities is not normalised; search applies log_softmax to it
        like to any logits, which makes it the normalised geometric mean of the members.
        Members may have different numbers of heads, so the weights are the mean over
        members of each member's head average: one head. Beside a copy model (V + S
        columns, nmt/model/copy.py) a member that does not copy reads a copied piece as
        <unk>, and its <unk> probability is shared evenly by <unk> and the pieces the copy
        model can copy (the sentence's source pieces outside the target vocabulary), so it
        stays a distribution.
        """
        outputs = [
            member.step(member_state, self._member_tokens(member, prev_tokens))
            for member, member_state in zip(self.members, state.members, strict=True)
        ]
        width = max(logits.size(1) for logits, _, _ in outputs)
        copied = self._copied_columns(state) if self.copier is not None else None
        log_probs = torch.stack(
            [
                self._widened(logits.float().log_softmax(-1), width, copied)
                for logits, _, _ in outputs
            ]
        )
        next_state = EnsembleState(tuple(member_state for _, member_state, _ in outputs))
        if any(weights is None for _, _, weights in outputs):
            return log_probs.mean(0), next_state, None
        weights = torch.stack([weights.mean(1) for _, _, weights in outputs])  # [M, B, S]
        return log_probs.mean(0), next_state, weights.mean(0)[:, None, :]

    def _member_tokens(self, member: nn.Module, tokens: torch.Tensor) -> torch.Tensor:
        """The previous tokens for a member: one that does not copy reads a copied piece as
        <unk>."""
        if self.unknown is None or getattr(member, "copy", None) is not None:
            return tokens
        vocab_size, unk_id = self.unknown
        return tokens.masked_fill(tokens >= vocab_size, unk_id)

    def _copied_columns(self, state: EnsembleState) -> torch.Tensor:
        """[B, S] True where column V + j holds a piece the copy model can copy: source
        position j is the first of a piece outside the target vocabulary."""
        ids = state.members[self.copier].source_ids  # [B, S] extended target ids
        positions = torch.arange(ids.size(1), device=ids.device)
        return ids == self.unknown[0] + positions

    def _widened(
        self, log_probs: torch.Tensor, width: int, copied: torch.Tensor | None
    ) -> torch.Tensor:
        """A member's log-probabilities [B, V] out to `width` columns (V + S): its <unk>
        probability shared by <unk> and the copied columns, -inf elsewhere."""
        if log_probs.size(1) == width:
            return log_probs
        unk = self.unknown[1]
        pieces = copied.sum(1, keepdim=True)  # [B, 1] copyable pieces
        share = log_probs[:, unk, None] - torch.log1p(pieces.to(log_probs.dtype))  # [B, 1]
        extended = share.expand(-1, width - log_probs.size(1)).masked_fill(~copied, -torch.inf)
        own = log_probs.index_copy(1, torch.tensor([unk], device=share.device), share)
        return torch.cat([own, extended], 1)
