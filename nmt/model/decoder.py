"""What every decoder offers the model and the search, written down as Protocols.

A decoder is run two ways. Training runs it teacher-forced over all target positions at once
(`forward`); search runs it one token at a time (`step`), carrying a state that holds all it
needs from earlier steps, including what the attention prepared from the source. Search
reorders that state with `select` to follow beam back-pointers, so nothing about a sentence
may live on the module itself. RNNsearch (nmt/model/rnnsearch.py) and the Transformer
(nmt/model/transformer.py, whose state caches each layer's keys and values) implement this.
"""

from __future__ import annotations

from typing import Protocol

import torch
from torch import nn

from nmt.model.encoder import EncoderOutput


class DecoderState(Protocol):
    def select(self, indices: torch.Tensor) -> DecoderState:
        """The state of batch rows `indices` (reordered or repeated), e.g. beam back-pointers."""
        ...


class Decoder(Protocol):
    generator: nn.Linear  # output features [..., D] -> logits [..., V]
    attention_layers: int  # layers attending over the source (0: one attention, no stack)

    def choose_attention_layer(self, number: int) -> None:
        """Which layer's attention over the source `step` reports, 1 to attention_layers; a
        ValueError for any other number."""
        ...

    def init_state(self, encoded: EncoderOutput) -> DecoderState:
        """The state before the first target token; the attention prepares its keys here."""
        ...

    def forward(
        self, state: DecoderState, tgt_in: torch.Tensor, need_weights: bool = True
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """Teacher forcing. tgt_in [B, T] -> output features [B, T, D] (logits are
        `generator(features)`, left to the loss to fuse), the reported attention weights
        [B, T, H, S] (a decoder may return None when they are not needed) and the weights a
        copy model copies with (None where the decoder has no copy layer)."""
        ...

    def step(
        self, state: DecoderState, prev_tokens: torch.Tensor, need_weights: bool = True
    ) -> tuple[torch.Tensor, DecoderState, torch.Tensor | None, torch.Tensor | None]:
        """One target step. prev_tokens [B] -> output features [B, D], next state, reported
        weights [B, H, S] (a decoder may return None when they are not needed), the weights
        to copy with [B, H, S] (or None, as in `forward`)."""
        ...
