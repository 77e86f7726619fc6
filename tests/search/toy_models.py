"""Models for search tests: a hand-built Markov model whose best outputs can be worked out
by hand, and a random tiny model that ends its sentences at different lengths."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from conftest import tiny_model
from nmt.data.batching import pad

BOS, EOS = 2, 3


@dataclass
class MarkovState:
    src_mask: torch.Tensor  # [B, S]

    def select(self, indices: torch.Tensor) -> MarkovState:
        return MarkovState(self.src_mask.index_select(0, indices))


class MarkovModel(torch.nn.Module):
    """A hand-built stand-in for Seq2Seq: the next token's probabilities depend only on the
    previous token, table[prev]; attention is uniform over the real source tokens."""

    def __init__(self, table: torch.Tensor, heads: int = 1):
        super().__init__()
        self.log_table = table.log()  # [V, V]
        self.heads = heads

    def encode(self, src, src_lengths):
        return torch.arange(src.size(1))[None, :] < src_lengths[:, None]

    def init_state(self, src_mask, need_weights=True, shortlist=None):
        return MarkovState(src_mask)

    def step(self, state, prev_tokens):
        weights = state.src_mask.float() / state.src_mask.sum(1, keepdim=True)  # [B, S]
        return (
            self.log_table[prev_tokens],
            state,
            weights[:, None, :].expand(-1, self.heads, -1),
        )


def markov_table(rows: dict[int, dict[int, float]], vocab: int = 6) -> torch.Tensor:
    """Given probabilities per previous token, a tiny rest spread over every other token."""
    table = torch.full((vocab, vocab), 1e-6)
    for prev, probs in rows.items():
        for token, p in probs.items():
            table[prev, token] = p
    return table / table.sum(1, keepdim=True)


def source(lengths):
    return pad([[5] * n for n in lengths], 0), torch.tensor(lengths)


def eos_biased_model(config, seed=0):
    """A random tiny model made confident (larger output weights) and given a taste for eos,
    so that its sentences end at different lengths: at once, midway and at their limit."""
    model = tiny_model(config, seed=seed).eval()
    with torch.no_grad():
        model.output_layer.weight *= 5
        model.output_layer.bias[EOS] = 0.5
    return model
