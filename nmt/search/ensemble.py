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
        copying = [m.copy for m in members if getattr(m, "copy", None) is not None]
        # (V, <unk>) where a member copies: the others read its copied pieces as <unk>
        self.unknown = (copying[0].vocab_size, copying[0].unk_id) if copying else None

    def encode(self, src: torch.Tensor, src_lengths: torch.Tensor) -> tuple[Any, ...]:
        return tuple(member.encode(src, src_lengths) for member in self.members)

    def init_state(self, encoded: tuple[Any, ...]) -> EnsembleState:
        return EnsembleState(
            tuple(member.init_state(e) for member, e in zip(self.members, encoded, strict=True))
        )

    def step(
        self, state: EnsembleState, prev_tokens: torch.Tensor
    ) -> tuple[torch.Tensor, EnsembleState, torch.Tensor]:
        """prev_tokens [B] -> mean log-probabilities [B, V], next state, weights [B, 1, S].

        The mean of log-probabilities is not normalised; search applies log_softmax to it
        like to any logits, which makes it the normalised geometric mean of the members.
        Members may have different numbers of heads, so the weights are the mean over
        members of each member's head average: one head. Beside a copy model (V + S
        columns, nmt/model/copy.py) a member that does not copy reads a copied piece as
        <unk> and gives each such column its <unk> log-probability.
        """
        outputs = [
            member.step(member_state, self._member_tokens(member, prev_tokens))
            for member, member_state in zip(self.members, state.members, strict=True)
        ]
        width = max(logits.size(1) for logits, _, _ in outputs)
        log_probs = torch.stack(
            [self._widened(logits.float().log_softmax(-1), width) for logits, _, _ in outputs]
        )
        weights = torch.stack([weights.mean(1) for _, _, weights in outputs])  # [M, B, S]
        next_state = EnsembleState(tuple(member_state for _, member_state, _ in outputs))
        return log_probs.mean(0), next_state, weights.mean(0)[:, None, :]

    def _member_tokens(self, member: nn.Module, tokens: torch.Tensor) -> torch.Tensor:
        """The previous tokens for a member: one that does not copy reads a copied piece as
        <unk>."""
        if self.unknown is None or getattr(member, "copy", None) is not None:
            return tokens
        vocab_size, unk_id = self.unknown
        return tokens.masked_fill(tokens >= vocab_size, unk_id)

    def _widened(self, log_probs: torch.Tensor, width: int) -> torch.Tensor:
        """A member's log-probabilities [B, V] out to `width` columns: copied pieces as <unk>."""
        if log_probs.size(1) == width:
            return log_probs
        unknown = log_probs[:, self.unknown[1], None].expand(-1, width - log_probs.size(1))
        return torch.cat([log_probs, unknown], 1)
