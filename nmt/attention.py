"""Attention: score a query against source states, average the values by the weights.

Every variant answers two calls. `prepare(states, mask)` runs once per source batch and
returns a `Memory` (for additive attention the U·h_j projection, so it is not recomputed
at every target step); `forward(query, memory)` returns the context and the weights. The
prepared memory travels with the decoder state, so beam search can reorder it and no
per-sentence state lives on the module.

Weights always come per head, [B, T, H, S], with H = 1 for single-head variants: one layout
for every variant, so plots and alignments never ask which kind produced them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch
from torch import nn

from nmt.config import AttentionConfig


class Memory(NamedTuple):
    """What a query attends over; every field has batch first so `index_select(0)` reorders it."""

    keys: torch.Tensor  # [B, S, K] prepared keys
    values: torch.Tensor  # [B, S, V]
    mask: torch.Tensor  # [B, S] True on real source tokens

    def select(self, indices: torch.Tensor) -> Memory:
        return Memory(*(field.index_select(0, indices) for field in self))


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dim, padded positions exactly 0. scores [B, T, S], mask [B, S]."""
    return scores.masked_fill(~mask[:, None, :], float("-inf")).softmax(dim=-1)


class AdditiveAttention(nn.Module):
    """Bahdanau et al. 2015: e_ij = v^T tanh(W s_{i-1} + U h_j); h_j are keys and values."""

    def __init__(self, query_dim: int, memory_dim: int, attn_dim: int):
        super().__init__()
        self.query_proj = nn.Linear(query_dim, attn_dim, bias=False)
        self.key_proj = nn.Linear(memory_dim, attn_dim)
        self.energy = nn.Linear(attn_dim, 1, bias=False)
        self.context_dim = memory_dim

    def prepare(self, states: torch.Tensor, mask: torch.Tensor) -> Memory:
        return Memory(self.key_proj(states), states, mask)  # keys [B, S, A]

    def forward(self, query: torch.Tensor, memory: Memory) -> tuple[torch.Tensor, torch.Tensor]:
        """query [B, T, Q] -> context [B, T, V], weights [B, T, 1, S]."""
        hidden = torch.tanh(self.query_proj(query)[:, :, None, :] + memory.keys[:, None, :, :])
        scores = self.energy(hidden).squeeze(-1)  # [B, T, S]
        weights = masked_softmax(scores, memory.mask)
        return weights @ memory.values, weights[:, :, None, :]


AttentionFactory = Callable[[AttentionConfig, int, int], nn.Module]

ATTENTIONS: dict[str, AttentionFactory] = {
    "additive": lambda config, query_dim, memory_dim: AdditiveAttention(
        query_dim, memory_dim, config.attn_dim
    ),
}


def build_attention(config: AttentionConfig, query_dim: int, memory_dim: int) -> nn.Module:
    return ATTENTIONS[config.type](config, query_dim, memory_dim)
