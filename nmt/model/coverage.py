"""Coverage (`model.attention.coverage`): the attention remembers how much of each source
word it has used, so a decoder stops translating a phrase twice or dropping one.

The coverage of source word j before target step i is what the attention gave it so far,

    vector      c_ij = sum over t < i of a_tj                     (See et al. 2017)
    linguistic  c_ij = sum over t < i of a_tj / Phi_j,            (Tu et al. 2016)
                Phi_j = N sigmoid(U_f h_j), a predicted fertility, N = 2

and it enters the additive score beside the query and the key, e_ij = v^T tanh(W s_{i-1} +
U h_j + w c_ij). The running sums live in the decoder state (`CoverageState`), so beam
search reorders them with the rest and nothing about a sentence lives on the module.

Two uses of coverage need no such attention and work with any model: the training loss
`train.coverage_loss` (`attention_overlap`) and the penalty `decode.coverage_penalty` that
beam search ranks by (nmt/search/hypothesis.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

MAX_FERTILITY = 2.0  # Tu et al.'s N: the most target words one source word is expected to give


@dataclass
class CoverageState:
    total: torch.Tensor  # [B, S] c_ij of the next step
    fertility: torch.Tensor | None  # [B, S] Phi_j (linguistic), or None (vector)

    def select(self, indices: torch.Tensor) -> CoverageState:
        fertility = None if self.fertility is None else self.fertility.index_select(0, indices)
        return CoverageState(self.total.index_select(0, indices), fertility)

    def after(self, weights: torch.Tensor) -> CoverageState:
        """The coverage one step on, given that step's weights [B, H, S] (heads averaged)."""
        given = weights.mean(1)
        if self.fertility is not None:
            given = given / self.fertility
        return CoverageState(self.total + given, self.fertility)


class Coverage(nn.Module):
    def __init__(self, memory_dim: int, attn_dim: int, linguistic: bool):
        super().__init__()
        self.weight = nn.Linear(1, attn_dim, bias=False)  # w
        self.fertility = nn.Linear(memory_dim, 1) if linguistic else None

    def start(self, states: torch.Tensor) -> CoverageState:
        """Nothing covered yet; states [B, S, D] -> their fertilities where they count."""
        total = states.new_zeros(states.shape[:2])
        if self.fertility is None:
            return CoverageState(total, None)
        fertility = MAX_FERTILITY * torch.sigmoid(self.fertility(states).squeeze(-1))
        return CoverageState(total, fertility)

    def term(self, total: torch.Tensor) -> torch.Tensor:
        """w c_ij, for c [B, T, S] -> [B, T, S, A]: what the additive score adds."""
        return self.weight(total[..., None])


def attention_overlap(weights: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
    """See et al.'s coverage loss, summed over the real target steps: sum_i sum_j min(a_ij,
    sum over t < i of a_tj), which punishes attending again to what was attended before.
    weights [B, T, H, S] (heads averaged), real [B, T] True on real target tokens."""
    attention = weights.float().mean(2)  # [B, T, S]
    before = attention.cumsum(1) - attention
    return torch.minimum(attention, before).sum(-1).masked_fill(~real, 0).sum()


def build_coverage(kind: str, memory_dim: int, attn_dim: int) -> Coverage | None:
    return None if kind == "none" else Coverage(memory_dim, attn_dim, kind == "linguistic")
