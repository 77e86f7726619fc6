"""The Transformer layer (Vaswani et al. 2017), shared by the self-attention encoder and the
Transformer decoder: self-attention, cross-attention over the source (decoder layers only)
and a position-wise feed-forward block, each a residual sub-layer with layer normalisation.

`norm: pre` normalises each sub-layer's input, x + Sublayer(LN x), and the stack ends with
one more LN; `post` is the paper's LN(x + Sublayer(x)). Pre-norm trains stably without a
long warmup, which matters when a run is 30 minutes long.
"""

from __future__ import annotations

import torch
from torch import nn

from nmt.config import AttentionConfig, EncoderConfig
from nmt.model.attention import Attention, Memory, build_attention
from nmt.model.cache import KeyValueCache
from nmt.model.dropout import Dropout
from nmt.model.positions import attention_positions

ACTIVATIONS = {"relu": nn.ReLU, "swish": nn.SiLU, "gelu": nn.GELU}  # gelu: the exact, erf form


def self_attention(
    dim: int,
    heads: int,
    dropout: float,
    positions: str | None,
    max_relative_position: int,
    bias: bool = False,
) -> Attention:
    """Multi-head attention of a sequence over itself: queries, keys and values all projected
    (with biases if `bias`); `positions` of the kinds that act inside attention enter here
    (nmt/model/positions.py)."""
    config = AttentionConfig(
        type="multihead", attn_dim=dim, heads=heads, kv="separate", dropout=dropout
    )
    attention = build_attention(config, dim, dim, bias)
    attention.positions = attention_positions(positions, heads, dim // heads, max_relative_position)
    return attention


class TransformerLayer(nn.Module):
    """One layer; with a `cross_attention` it is a decoder layer, whose self-attention is causal.

    `dropout` acts on the residual paths and inside the feed-forward block; the attention
    modules carry their own dropout on the weights. `activation` names the feed-forward
    block's nonlinearity (ACTIVATIONS); `attention_bias` gives the self-attention's
    projections biases (a decoder layer's cross-attention is built by its caller).
    """

    def __init__(
        self,
        dim: int,
        heads: int,
        ff_dim: int,
        dropout: float,
        attention_dropout: float,
        norm: str = "pre",
        cross_attention: Attention | None = None,
        positions: str | None = None,
        max_relative_position: int = 16,
        activation: str = "relu",
        attention_bias: bool = False,
    ):
        super().__init__()
        self.attention = self_attention(
            dim, heads, attention_dropout, positions, max_relative_position, attention_bias
        )
        self.attention_norm = nn.LayerNorm(dim)
        self.cross_attention = cross_attention
        self.cross_attention_norm = nn.LayerNorm(dim) if cross_attention is not None else None
        self.feed_forward = nn.Sequential(
            nn.Linear(dim, ff_dim),
            ACTIVATIONS[activation](),
            Dropout(dropout),
            nn.Linear(ff_dim, dim),
        )
        self.feed_forward_norm = nn.LayerNorm(dim)
        self.dropout = Dropout(dropout)
        self.pre_norm = norm == "pre"
        self.causal = cross_attention is not None  # a decoder sees no later target position

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor | None,
        cache: KeyValueCache | None = None,
        source: Memory | None = None,
        need_weights: bool = False,
    ) -> tuple[torch.Tensor, KeyValueCache | None, torch.Tensor | None]:
        """x [B, T, D] -> x [B, T, D], the next self-attention cache, cross-attention weights.

        mask [B, T] marks x's real positions (None: all). `cache` holds the self-attention
        keys and values of earlier positions (incremental decoding); the cache returned has
        x's own too, so it is the next step's (None without a cache). Decoder layers attend
        over `source` too and return its weights [B, T, H, S] when asked (`need_weights`).
        """
        normed = self._input(x, self.attention_norm)
        memory = self.attention.prepare(normed, mask, 0 if cache is None else cache.length)
        if cache is not None:
            cache = cache.appended(memory)
            memory = cache.memory()
        context, _ = self.attention(normed, memory, causal=self.causal, need_weights=False)
        x = self._residual(x, context, self.attention_norm)
        weights = None
        if self.cross_attention is not None:
            normed = self._input(x, self.cross_attention_norm)
            context, weights = self.cross_attention(normed, source, need_weights=need_weights)
            x = self._residual(x, context, self.cross_attention_norm)
        output = self.feed_forward(self._input(x, self.feed_forward_norm))
        return self._residual(x, output, self.feed_forward_norm), cache, weights

    def _input(self, x: torch.Tensor, norm: nn.LayerNorm) -> torch.Tensor:
        """What a sub-layer reads: LN x under pre-norm, x itself under post-norm."""
        return norm(x) if self.pre_norm else x

    def _residual(self, x: torch.Tensor, output: torch.Tensor, norm: nn.LayerNorm) -> torch.Tensor:
        """x + dropout(output), normalised afterwards under post-norm."""
        x = x + self.dropout(output)
        return x if self.pre_norm else norm(x)


class TransformerEncoderStack(nn.Module):
    """The encoder's self-attention layers over source states (an encoder stage), with the
    encoder's positions where they act inside attention."""

    def __init__(self, config: EncoderConfig):
        super().__init__()
        kind = config.position_kind
        self.layers = nn.ModuleList(
            TransformerLayer(
                config.output_dim,
                config.heads,
                config.ff_dim,
                config.dropout,
                config.dropout,
                config.norm,
                positions=kind,
                max_relative_position=config.max_relative_position,
                activation=config.activation,
                attention_bias=config.attention_bias,
            )
            for _ in range(config.layers)
        )
        self.norm = nn.LayerNorm(config.output_dim) if config.norm == "pre" else nn.Identity()

    def forward(
        self, x: torch.Tensor, lengths: torch.Tensor, mask: torch.Tensor, final: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x [B, S, D] -> [B, S, D]; the summary from an earlier stage passes through."""
        for layer in self.layers:
            x = layer(x, mask)[0]
        return self.norm(x), final
