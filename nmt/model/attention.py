"""Attention: score a query against source states, average the values by the weights.

Every variant is one `Attention` built from a scorer (additive, dot, general or multi-head)
plus the value and output projections; the normaliser that turns scores into weights
(softmax, sparsemax, 1.5-entmax or hard: nmt/model/normalisers.py), the local window, dropout
on the weights and the weighted average are shared. `prepare(states, mask)` runs once per source
batch and returns a `Memory` (projected keys and values, so nothing is recomputed at every
target step); `forward(query, memory)` returns the context and the weights. The prepared
memory travels with the decoder state, so beam search can reorder it and no per-sentence
state lives on the module.

Weights always come per head, [B, T, H, S], with H = 1 for single-head variants: one layout
for every variant, so plots and alignments never ask which kind produced them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple, Protocol

import torch
import torch.nn.functional as F
from torch import nn

from nmt.config import AttentionConfig
from nmt.model.coverage import Coverage, build_coverage
from nmt.model.dropout import Dropout
from nmt.model.normalisers import build_normaliser
from nmt.model.positions import AttentionPositions


class Memory(NamedTuple):
    """What a query attends over; every field has batch first so `index_select(0)` reorders it,
    and positions second to last (`mask`: last).

    `rows` maps query rows to memory rows (None: query row i reads memory row i). `select`
    only composes that map: search reorders and repeats hypotheses at every step, and copying
    each hypothesis's source keys and values ([rows, S, D] per layer) every step cost more
    than attending over them. Attention then groups the queries by the memory row they read.
    """

    keys: torch.Tensor  # scorer-specific layout, e.g. [B, S, A] or [B, H, S, d]
    values: torch.Tensor  # [B, H, S, d_v]
    mask: torch.Tensor | None  # [B, S] True on real positions; None: all real
    rows: torch.Tensor | None = None  # [N] the memory row each query row reads

    def select(self, indices: torch.Tensor) -> Memory:
        return self._replace(rows=indices if self.rows is None else self.rows[indices])


def query_slots(rows: torch.Tensor, groups: int) -> tuple[torch.Tensor, int]:
    """For query rows reading memory rows `rows` [N] (of `groups`): each one's place among
    the rows reading the same memory row, in order, and the most rows any memory row has."""
    order = torch.argsort(rows, stable=True)
    counts = torch.bincount(rows, minlength=groups)
    starts = counts.cumsum(0) - counts
    slots = torch.empty_like(rows)
    slots[order] = torch.arange(rows.numel(), device=rows.device) - starts[rows[order]]
    return slots, int(counts.max())


def allowed_positions(
    mask: torch.Tensor | None, queries: int, positions: int, causal: bool, device: torch.device
) -> torch.Tensor | None:
    """Which positions each query may see, [B or 1, T or 1, 1, S] (None: all of them).

    `causal`: query i of the last T positions sees positions up to its own, S - T + i."""
    allowed = None if mask is None else mask[:, None, None, :]
    if causal:
        offset = positions - queries
        rows = torch.arange(queries, device=device)[:, None] + offset
        past = (torch.arange(positions, device=device)[None, :] <= rows)[None, :, None, :]
        allowed = past if allowed is None else allowed & past
    return allowed


class Scorer(Protocol):
    heads: int

    def queries(self, query: torch.Tensor) -> torch.Tensor:
        """query [B, T, Q] -> the scorer's layout of it (e.g. projected, split into heads)."""
        ...

    def keys(self, states: torch.Tensor) -> torch.Tensor: ...

    def scores(self, queries: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """queries (from `queries`), keys (from `keys`) -> scores [B, T, H, S]."""
        ...


class AdditiveScorer(nn.Module):
    """Bahdanau et al. 2015: e_ij = v^T tanh(W s_{i-1} + U h_j); U h_j is prepared once."""

    heads = 1

    def __init__(self, query_dim: int, memory_dim: int, attn_dim: int):
        super().__init__()
        self.query_proj = nn.Linear(query_dim, attn_dim, bias=False)
        self.key_proj = nn.Linear(memory_dim, attn_dim)
        self.energy = nn.Linear(attn_dim, 1, bias=False)

    def queries(self, query: torch.Tensor) -> torch.Tensor:
        return 2 * self.query_proj(query)  # [B, T, A], doubled for `scores`

    def keys(self, states: torch.Tensor) -> torch.Tensor:
        return 2 * self.key_proj(states)  # [B, S, A], doubled for `scores`

    def scores(
        self, queries: torch.Tensor, keys: torch.Tensor, coverage: torch.Tensor | None = None
    ) -> torch.Tensor:
        """v^T tanh(x) = 2 v^T sigmoid(2x) - sum(v): the constant drops out of the normaliser
        over j (each is shift-invariant), so the weights are the paper's, and sigmoid runs
        several times faster than tanh on CPUs. Queries and keys come doubled; `coverage`,
        the coverage term w c_ij [B, T, S, A] (nmt/model/coverage.py), is doubled here."""
        hidden = queries[:, :, None, :] + keys[:, None, :, :]
        if coverage is not None:
            hidden = hidden + 2 * coverage
        return 2 * self.energy(torch.sigmoid(hidden)).transpose(2, 3)  # [B, T, 1, S]


class DotScorer(nn.Module):
    """Luong et al. 2015: dot scores q·k_j, with k_j = h_j or a learned projection W h_j
    ("general" is the projected form); `scaled` divides by sqrt(d)."""

    heads = 1

    def __init__(self, key_proj: nn.Module, dim: int, scaled: bool):
        super().__init__()
        self.key_proj = key_proj
        self.scale = dim**-0.5 if scaled else 1.0

    def queries(self, query: torch.Tensor) -> torch.Tensor:
        return query

    def keys(self, states: torch.Tensor) -> torch.Tensor:
        return self.key_proj(states)  # [B, S, Q]

    def scores(self, queries: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        return (queries @ keys.transpose(1, 2))[:, :, None, :] * self.scale  # [B, T, 1, S]


class MultiHeadScorer(nn.Module):
    """Per head i: (q W_i^Q)·(h_j W_i^K) / sqrt(d), for H heads of size d = attn_dim / H."""

    def __init__(
        self, query_dim: int, memory_dim: int, attn_dim: int, heads: int, bias: bool = False
    ):
        super().__init__()
        self.heads = heads
        self.query_proj = nn.Linear(query_dim, attn_dim, bias=bias)
        self.key_proj = nn.Linear(memory_dim, attn_dim, bias=bias)
        self.scale = (attn_dim // heads) ** -0.5

    def queries(self, query: torch.Tensor) -> torch.Tensor:
        return split_heads(self.query_proj(query), self.heads)  # [B, H, T, d]

    def keys(self, states: torch.Tensor) -> torch.Tensor:
        return split_heads(self.key_proj(states), self.heads)  # [B, H, S, d]

    def scores(self, queries: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        return (queries @ keys.transpose(2, 3)).transpose(1, 2) * self.scale  # [B, T, H, S]


def split_heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    """[B, L, H * d] -> [B, H, L, d]."""
    return x.unflatten(-1, (heads, -1)).transpose(1, 2)


class LocalWindow(nn.Module):
    """Luong et al. 2015 local-p: predict an aligned position p_i = (S_i - 1) sigmoid(v^T tanh(W q))
    and favour sources near it, a_ij ∝ a_ij exp(-(j - p_i)^2 / 2σ^2) with σ = D / 2, renormalised
    over real tokens. Added to the scores in log space, which is the same and never underflows."""

    def __init__(self, query_dim: int, attn_dim: int, width: int):
        super().__init__()
        self.position = nn.Sequential(
            nn.Linear(query_dim, attn_dim, bias=False),
            nn.Tanh(),
            nn.Linear(attn_dim, 1, bias=False),
        )
        self.sigma = width / 2

    def centre(self, query: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """p_i in [0, S_i - 1]. query [B, T, Q] -> [B, T]."""
        last = (mask.sum(-1, keepdim=True) - 1).to(query.dtype)  # [B, 1]
        return last * torch.sigmoid(self.position(query).squeeze(-1))

    def log_bias(self, query: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """-(j - p_i)^2 / 2σ^2 -> [B, T, 1, S]."""
        positions = torch.arange(mask.size(1), device=query.device, dtype=query.dtype)
        distance = positions[None, None, :] - self.centre(query, mask)[:, :, None]
        return (-(distance**2) / (2 * self.sigma**2))[:, :, None, :]


class Attention(nn.Module):
    def __init__(
        self,
        scorer: Scorer,
        value_proj: nn.Module,
        output_proj: nn.Module,
        context_dim: int,
        window: LocalWindow | None = None,
        dropout: float = 0.0,
        normaliser: str = "softmax",
    ):
        super().__init__()
        self.scorer = scorer
        # what some builders add: positions to a self-attention (nmt/model/layers.py),
        # coverage to an additive attention (`_additive`)
        self.positions: AttentionPositions | None = None
        self.coverage: Coverage | None = None
        self.value_proj = value_proj
        self.output_proj = output_proj
        self.window = window
        self.dropout = Dropout(dropout)
        self.context_dim = context_dim
        self.normaliser = build_normaliser(normaliser)
        # the fused kernel computes softmax attention, and multi-head scores only
        self.fusable = (
            normaliser == "softmax" and window is None and isinstance(scorer, MultiHeadScorer)
        )

    def prepare(self, states: torch.Tensor, mask: torch.Tensor | None, start: int = 0) -> Memory:
        """states [B, S, D], mask [B, S] (None: no padding) -> the memory queries attend over.
        `start`: the position of the first state (a decoder's cache holds the earlier ones)."""
        keys = self.scorer.keys(states)
        if self.positions is not None:
            keys = self.positions.keys(keys, start)
        values = split_heads(self.value_proj(states), self.scorer.heads)  # [B, H, S, d_v]
        return Memory(keys, values, mask)

    def forward(
        self,
        query: torch.Tensor,
        memory: Memory,
        causal: bool = False,
        need_weights: bool = True,
        coverage: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """query [B, T, Q] -> context [B, T, C], weights [B, T, H, S] (None unless needed).

        `causal`: the memory's last T positions are the queries' own, and none sees a later one.
        `coverage` [B, T, S]: each source position's coverage so far, for an attention built
        with coverage. Without weights to return, multi-head attention runs as one fused
        `scaled_dot_product_attention`, which never holds the [B, H, T, S] weights in memory.
        """
        if memory.rows is not None:
            return self._grouped(query, memory, causal, need_weights, coverage)
        queries, positions = self.scorer.queries(query), memory.keys.size(-2)
        bias = None
        if self.positions is not None:  # the queries are the last of the memory's positions
            queries = self.positions.queries(queries, positions - query.size(1))
            bias = self.positions.bias(queries, positions)
        if not need_weights and self.fusable:
            return self._fused(queries, memory, causal, bias), None
        if self.coverage is not None and coverage is not None:
            scores = self.scorer.scores(queries, memory.keys, self.coverage.term(coverage))
        else:
            scores = self.scorer.scores(queries, memory.keys)
        if bias is not None:
            scores = scores + bias.transpose(-3, -2)  # [B, H, T, S] -> [B, T, H, S]
        if self.window is not None:
            scores = scores + self.window.log_bias(query, memory.mask)
        allowed = allowed_positions(memory.mask, query.size(1), positions, causal, query.device)
        weights = self.normaliser(scores, allowed)
        heads = self.dropout(weights).transpose(1, 2) @ memory.values  # [B, H, T, d_v]
        return self._output(heads), weights

    def _grouped(
        self,
        query: torch.Tensor,
        memory: Memory,
        causal: bool,
        need_weights: bool,
        coverage: torch.Tensor | None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Query rows mapped to memory rows: the queries of each memory row are attended as
        one padded row of queries (their coverage alike), then put back in their own rows."""
        if causal:
            raise ValueError("causal attention needs one memory row per query row")
        groups, length = memory.keys.size(0), query.size(1)
        slots, width = query_slots(memory.rows, groups)
        grouped = query.new_zeros(groups, width, length, query.size(-1))  # [G, W, T, Q]
        grouped[memory.rows, slots] = query  # query [N, T, Q]
        if coverage is not None:
            covered = coverage.new_zeros(groups, width, length, coverage.size(-1))
            covered[memory.rows, slots] = coverage  # coverage [N, T, S]
            coverage = covered.flatten(1, 2)
        context, weights = self(
            grouped.flatten(1, 2),
            memory._replace(rows=None),
            need_weights=need_weights,
            coverage=coverage,
        )
        context = context.unflatten(1, (width, length))[memory.rows, slots]  # [N, T, C]
        if weights is not None:
            weights = weights.unflatten(1, (width, length))[memory.rows, slots]  # [N, T, H, S]
        return context, weights

    def _fused(
        self, queries: torch.Tensor, memory: Memory, causal: bool, bias: torch.Tensor | None
    ) -> torch.Tensor:
        """queries [B, H, T, d]; `bias` [B or 1, H, T, S] is added to the scaled scores."""
        dropout = self.dropout.p if self.training else 0.0
        length, positions = queries.size(-2), memory.keys.size(-2)
        causal = causal and length > 1  # one query, the last position, sees every position
        if bias is None and memory.mask is None and (not causal or positions == length):
            allowed = None  # the kernel's own causal mask, or none at all
        else:
            allowed = allowed_positions(memory.mask, length, positions, causal, queries.device)
            if allowed is not None:
                allowed = allowed.transpose(1, 2)  # [B, 1, T, S]: heads second
            if bias is not None:
                allowed = bias if allowed is None else bias.masked_fill(~allowed, -math.inf)
            causal = False
        keys, values, dtype = memory.keys, memory.values, queries.dtype
        if dtype == torch.bfloat16 and queries.device.type == "cpu":
            # torch's CPU kernel runs bf16 attention 4x slower than float32 (its backward
            # most), and float32 keeps the softmax's sums exact: this small share of the
            # products computes in float32
            queries, keys, values = queries.float(), keys.float(), values.float()
            allowed = allowed if allowed is None or allowed.dtype == torch.bool else allowed.float()
        heads = F.scaled_dot_product_attention(
            queries,
            keys,
            values,
            attn_mask=allowed,
            dropout_p=dropout,
            is_causal=causal,
            scale=self.scorer.scale,
        )
        return self._output(heads.to(dtype))

    def _output(self, heads: torch.Tensor) -> torch.Tensor:
        """heads [B, H, T, d_v] -> [B, T, C]."""
        return self.output_proj(heads.transpose(1, 2).flatten(2))


def _projection(in_dim: int, out_dim: int, bias: bool = False) -> nn.Module:
    return nn.Linear(in_dim, out_dim, bias=bias)


def _single_head(
    scorer: Scorer, config: AttentionConfig, query_dim: int, memory_dim: int
) -> Attention:
    """Soft attention: values are the states themselves (kv: shared) or a projection of them."""
    values = nn.Identity() if config.kv == "shared" else _projection(memory_dim, memory_dim)
    window = _window(config, query_dim)
    return Attention(
        scorer, values, nn.Identity(), memory_dim, window, config.dropout, config.normaliser
    )


def _window(config: AttentionConfig, query_dim: int) -> LocalWindow | None:
    return None if config.window is None else LocalWindow(query_dim, config.attn_dim, config.window)


def _additive(config: AttentionConfig, query_dim: int, memory_dim: int) -> Attention:
    attention = _single_head(
        AdditiveScorer(query_dim, memory_dim, config.attn_dim), config, query_dim, memory_dim
    )
    attention.coverage = build_coverage(config.coverage, memory_dim, config.attn_dim)
    return attention


def _dot(config: AttentionConfig, query_dim: int, memory_dim: int) -> Attention:
    keys = nn.Identity() if config.kv == "shared" else _projection(memory_dim, query_dim)
    return _single_head(DotScorer(keys, query_dim, config.scaled), config, query_dim, memory_dim)


def _general(config: AttentionConfig, query_dim: int, memory_dim: int) -> Attention:
    keys = _projection(memory_dim, query_dim)  # q^T W k_j, with W k_j prepared once
    return _single_head(DotScorer(keys, query_dim, config.scaled), config, query_dim, memory_dim)


def _multihead(
    config: AttentionConfig, query_dim: int, memory_dim: int, bias: bool = False
) -> Attention:
    """`bias`: every projection has one (Marian's and fairseq's Transformers do)."""
    scorer = MultiHeadScorer(query_dim, memory_dim, config.attn_dim, config.heads, bias)
    values = (
        scorer.key_proj if config.kv == "shared" else _projection(memory_dim, config.attn_dim, bias)
    )
    output = _projection(config.attn_dim, memory_dim, bias)
    window = _window(config, query_dim)
    return Attention(scorer, values, output, memory_dim, window, config.dropout, config.normaliser)


ATTENTIONS: dict[str, Callable[[AttentionConfig, int, int], Attention]] = {
    "additive": _additive,
    "dot": _dot,
    "general": _general,
    "multihead": _multihead,
}


def build_attention(
    config: AttentionConfig, query_dim: int, memory_dim: int, bias: bool = False
) -> Attention:
    """`bias`: projections with biases, which only a multihead attention has."""
    if bias:
        if config.type != "multihead":
            raise ValueError(f"a {config.type!r} attention has no projections to bias")
        return _multihead(config, query_dim, memory_dim, bias=True)
    return ATTENTIONS[config.type](config, query_dim, memory_dim)
