"""How a Transformer stack knows where each token is (`model.encoder.positions`,
`model.decoder.positions`). Attention alone sees a set, so order has to enter one of two ways:

| kind       | enters                                   | reference                          |
|------------|------------------------------------------|------------------------------------|
| sinusoidal | added to the embeddings: fixed sin/cos   | Vaswani et al. 2017                |
| learned    | added to the embeddings: a learnt table  | Gehring et al. 2017                |
| relative   | self-attention scores: q_i·a_clip(j - i) | Shaw et al. 2018 (the key term)    |
| rotary     | self-attention queries and keys rotated  | Su et al. 2021 (RoPE)              |
| alibi      | self-attention scores: -m_h · abs(j - i) | Press et al. 2022                  |

The last three make scores depend on the distance between two tokens only, which is what
helps on sentences longer than any seen in training. They see positions as the attention
does: a query is the last of T queries over S positions (a decoder's cached prefix then its
own), so query i sits at S - T + i and key j at j. Incremental decoding is therefore exact:
a cached key keeps the rotation of its own position, and a step's bias is the last row of
the teacher-forced one. `relative` keeps Shaw et al.'s key term and drops their value term,
as the Music Transformer did (Huang et al. 2019): the scores carry the distances.
"""

from __future__ import annotations

import math

import torch
from torch import nn


def sinusoid_positions(length: int, dim: int, device: torch.device, start: int = 0) -> torch.Tensor:
    """Vaswani et al. 2017 position encodings of positions start.., [length, dim]."""
    position = torch.arange(start, start + length, device=device, dtype=torch.float32)[:, None]
    rate = torch.exp(torch.arange(0, dim, 2, device=device) * (-math.log(10000.0) / dim))
    table = torch.zeros(length, dim, device=device)
    table[:, 0::2] = torch.sin(position * rate)
    table[:, 1::2] = torch.cos(position * rate[: dim // 2])
    return table


class SinusoidalPositions(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, start: int, length: int, device: torch.device) -> torch.Tensor:
        """The vectors of positions start.., [length, dim]."""
        return sinusoid_positions(length, self.dim, device, start)


class LearnedPositions(nn.Module):
    """A learnt vector per position up to `max_positions`; later positions share the last one
    (a sentence that long was never trained on, so no vector would be a learnt one)."""

    def __init__(self, dim: int, max_positions: int):
        super().__init__()
        self.table = nn.Embedding(max_positions, dim)

    def forward(self, start: int, length: int, device: torch.device) -> torch.Tensor:
        index = torch.arange(start, start + length, device=device)
        return self.table(index.clamp(max=self.table.num_embeddings - 1))


def relative_distances(queries: int, positions: int, device: torch.device) -> torch.Tensor:
    """j - i for the last `queries` of `positions` positions and every key j, [T, S]."""
    rows = torch.arange(positions - queries, positions, device=device)
    return torch.arange(positions, device=device)[None, :] - rows[:, None]


class AttentionPositions(nn.Module):
    """What a self-attention asks of positions that act inside it; the base class changes
    nothing, each kind overrides what it uses. Queries and keys are per head, [B, H, L, d]."""

    def queries(self, queries: torch.Tensor, start: int) -> torch.Tensor:
        """Queries of positions start.."""
        return queries

    def keys(self, keys: torch.Tensor, start: int) -> torch.Tensor:
        """Keys of positions start.."""
        return keys

    def bias(self, queries: torch.Tensor, positions: int) -> torch.Tensor | None:
        """What to add to the scaled scores of these queries (the last T of `positions`),
        [B or 1, H or 1, T, S]; None: nothing."""
        return None


class RotaryPositions(AttentionPositions):
    """Su et al. 2021: each pair (x_2i, x_2i+1) of a query or key at position p is rotated by
    the angle p·θ_i, θ_i = 10000^(-2i/d), so q_m·k_n depends on m - n only."""

    def __init__(self, head_dim: int):
        super().__init__()
        self.head_dim = head_dim

    def rotate(self, x: torch.Tensor, start: int) -> torch.Tensor:
        # the angles in float32 whatever x is (no buffer a bf16 model would cast): bf16 would
        # round an angle of 100 radians to a half, and the rotation would lose m - n
        d, device = self.head_dim, x.device
        rates = 10000.0 ** (-torch.arange(0, d, 2, device=device, dtype=torch.float32) / d)
        positions = torch.arange(start, start + x.size(-2), device=device, dtype=torch.float32)
        angles = positions[:, None] * rates  # [L, d / 2]
        cos, sin = torch.cos(angles).to(x.dtype), torch.sin(angles).to(x.dtype)
        even, odd = x[..., 0::2], x[..., 1::2]
        return torch.stack([even * cos - odd * sin, even * sin + odd * cos], -1).flatten(-2)

    def queries(self, queries: torch.Tensor, start: int) -> torch.Tensor:
        return self.rotate(queries, start)

    def keys(self, keys: torch.Tensor, start: int) -> torch.Tensor:
        return self.rotate(keys, start)


class RelativePositions(AttentionPositions):
    """Shaw et al. 2018: e_ij += q_i·a_k(j - i) / sqrt(d), a learnt vector per distance
    clipped to [-k, k] (k = `max_relative_position`), shared by the heads of a layer."""

    def __init__(self, head_dim: int, max_distance: int):
        super().__init__()
        self.max_distance = max_distance
        self.table = nn.Embedding(2 * max_distance + 1, head_dim)
        self.scale = head_dim**-0.5

    def bias(self, queries: torch.Tensor, positions: int) -> torch.Tensor:
        distances = relative_distances(queries.size(-2), positions, queries.device)
        index = distances.clamp(-self.max_distance, self.max_distance) + self.max_distance
        per_distance = queries @ self.table.weight.T * self.scale  # [B, H, T, 2k + 1]
        return per_distance.gather(-1, index.expand(*queries.shape[:-2], -1, -1))


def alibi_slopes(heads: int) -> list[float]:
    """Press et al. 2022: the geometric sequence 2^(-8/n), 2^(-16/n), .. for n heads; for n
    not a power of 2, those of the power below it, then every other slope of twice that."""
    if math.log2(heads).is_integer():
        return [2 ** (-8 * (head + 1) / heads) for head in range(heads)]
    below = 2 ** math.floor(math.log2(heads))
    return alibi_slopes(below) + alibi_slopes(2 * below)[0::2][: heads - below]


class AlibiPositions(AttentionPositions):
    """Press et al. 2022: e_ij -= m_h · abs(j - i), a fixed slope m_h per head; no vector
    anywhere. A causal decoder only sees j <= i, where this is the paper's -m_h (i - j). An
    encoder looks both ways, and distance costs the same in each: the symmetric form its
    authors suggest for encoders. Its cost: distances have no direction, so an encoder with
    only ALiBi gives a sentence and its mirror image mirrored states."""

    def __init__(self, heads: int):
        super().__init__()
        self.register_buffer("slopes", torch.tensor(alibi_slopes(heads)), persistent=False)

    def bias(self, queries: torch.Tensor, positions: int) -> torch.Tensor:
        distances = relative_distances(queries.size(-2), positions, queries.device).abs()
        return -self.slopes.to(queries.dtype)[None, :, None, None] * distances


def absolute_positions(
    kind: str | None, dim: int, max_positions: int
) -> SinusoidalPositions | LearnedPositions | None:
    """What a stack adds to its embeddings (None: positions act inside the attention)."""
    if kind == "sinusoidal":
        return SinusoidalPositions(dim)
    if kind == "learned":
        return LearnedPositions(dim, max_positions)
    return None


def attention_positions(
    kind: str | None, heads: int, head_dim: int, max_relative_position: int
) -> AttentionPositions | None:
    """What one self-attention layer uses (None: positions are added to the embeddings)."""
    if kind == "relative":
        return RelativePositions(head_dim, max_relative_position)
    if kind == "rotary":
        return RotaryPositions(head_dim)
    if kind == "alibi":
        return AlibiPositions(heads)
    return None
