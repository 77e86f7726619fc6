"""The Transformer decoder (Vaswani et al. 2017): masked self-attention over the target prefix,
attention over the source, and a feed-forward block, in `layers` shared-code layers
(nmt/model/layers.py).

Training runs every target position at once under a causal mask. Search runs one position
at a time: each layer's self-attention keys and values of the positions so far are cached
in the decoder state (written in place, nmt/model/cache.py), so a step costs one position's
work, and `select` reorders the caches with the rest of the state for beam search.
Attention weights, for plots and alignments, come from the attention over the source of one
layer (`attention_layer`, default the last); a copy model copies with the head average of
another (`copy_layer`), reported beside them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from nmt.config import AttentionConfig, DecoderConfig
from nmt.model.attention import Memory, build_attention
from nmt.model.cache import KeyValueCache
from nmt.model.dropout import Dropout
from nmt.model.encoder import EncoderOutput
from nmt.model.layers import TransformerLayer
from nmt.model.positions import absolute_positions


@dataclass
class TransformerState:
    sources: tuple[Memory, ...]  # per layer: its attention's prepared source states
    caches: tuple[KeyValueCache, ...]  # per layer: self-attention keys and values so far

    @property
    def position(self) -> int:
        """The index of the next target position."""
        return self.caches[0].length

    def select(self, indices: torch.Tensor) -> TransformerState:
        """Reorders (or repeats) batch rows, e.g. to follow beam-search back-pointers."""
        return TransformerState(
            tuple(memory.select(indices) for memory in self.sources),
            tuple(cache.select(indices) for cache in self.caches),
        )


class TransformerDecoder(nn.Module):
    def __init__(
        self, vocab_size: int, config: DecoderConfig, attention: AttentionConfig, pad_id: int
    ):
        super().__init__()
        dim = config.emb_dim
        self.embed = nn.Embedding(vocab_size, dim, padding_idx=pad_id)
        self.scale = math.sqrt(dim)
        self.dropout = Dropout(config.dropout)
        self.layers = nn.ModuleList(
            TransformerLayer(
                dim,
                config.heads,
                config.ff_dim,
                config.dropout,
                attention.dropout,
                config.norm,
                cross_attention=build_attention(attention, dim, dim, config.attention_bias),
                positions=config.positions,
                max_relative_position=config.max_relative_position,
                activation=config.activation,
                attention_bias=config.attention_bias,
            )
            for _ in range(config.layers)
        )
        self.positions = absolute_positions(config.positions, dim, config.max_positions)
        self.norm = nn.LayerNorm(dim) if config.norm == "pre" else nn.Identity()
        self.generator = nn.Linear(dim, vocab_size)
        if config.tie_embeddings:
            self.generator.weight = self.embed.weight
        self.attention_layer = config.layers - 1
        self.copy_layer: int | None = None  # the layer a copy model copies with, set by its builder

    @property
    def attention_layers(self) -> int:
        return len(self.layers)

    def choose_attention_layer(self, number: int) -> None:
        """Which layer's attention over the source search reports: 1 to layers."""
        if not 1 <= number <= self.attention_layers:
            raise ValueError(f"this Transformer decoder has layers 1 to {len(self.layers)}")
        self.attention_layer = number - 1

    def init_state(self, encoded: EncoderOutput) -> TransformerState:
        """Each layer's attention prepares the source once; the caches start empty."""
        sources = tuple(
            layer.cross_attention.prepare(encoded.states, encoded.mask) for layer in self.layers
        )
        rows, heads = encoded.states.size(0), self.layers[0].attention.scorer.heads
        head_dim = encoded.states.size(-1) // heads
        caches = tuple(
            KeyValueCache.empty(rows, heads, head_dim, encoded.states) for _ in self.layers
        )
        return TransformerState(sources, caches)

    def forward(
        self, state: TransformerState, tgt_in: torch.Tensor, need_weights: bool = True
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """Teacher forcing. tgt_in [B, T] -> output features [B, T, D] (logits are
        `generator(features)`), the chosen layer's weights [B, T, H, S] (None unless needed)
        and the copy layer's (None without one)."""
        x = self._embed(tgt_in, 0)
        chosen = copying = None
        for index, (layer, source) in enumerate(zip(self.layers, state.sources, strict=True)):
            chosen_here = need_weights and index == self.attention_layer
            x, _, weights = layer(
                x, None, source=source, need_weights=chosen_here or index == self.copy_layer
            )
            chosen = weights if chosen_here else chosen
            copying = weights if index == self.copy_layer else copying
        return self.norm(x), chosen, copying

    def step(
        self, state: TransformerState, prev_tokens: torch.Tensor, need_weights: bool = True
    ) -> tuple[torch.Tensor, TransformerState, torch.Tensor | None, torch.Tensor | None]:
        """One target step. prev_tokens [B] -> output features [B, D], next state, the
        chosen layer's weights [B, H, S] (None unless needed) and the copy layer's (None
        without one). Unneeded weights let that layer attend with the fused kernel."""
        x = self._embed(prev_tokens[:, None], state.position)
        caches, chosen, copying = [], None, None
        for index, (layer, source, cache) in enumerate(
            zip(self.layers, state.sources, state.caches, strict=True)
        ):
            reported = need_weights and index == self.attention_layer
            x, cache, weights = layer(
                x, None, cache, source, need_weights=reported or index == self.copy_layer
            )
            caches.append(cache)
            chosen = weights[:, 0] if reported else chosen
            copying = weights[:, 0] if index == self.copy_layer else copying
        return self.norm(x[:, 0]), TransformerState(state.sources, tuple(caches)), chosen, copying

    def _embed(self, tokens: torch.Tensor, start: int) -> torch.Tensor:
        """Embeddings scaled by sqrt(d), plus the positions start.. where they are added to
        the embeddings (the other kinds act in the self-attention), [B, T, D]."""
        embedded = self.embed(tokens) * self.scale
        if self.positions is not None:
            embedded = embedded + self.positions(start, tokens.size(1), tokens.device).to(
                embedded.dtype
            )
        return self.dropout(embedded)
