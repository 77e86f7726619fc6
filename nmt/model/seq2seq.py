"""Seq2Seq: an encoder, a decoder and its output layer, and the one builder of models.

Search is written against `encode`, `init_state` and `step`; training calls the model itself,
which returns the loss: the vocabulary projection is fused with the loss (nmt/model/loss.py),
so nothing outside this package touches the output layer.
"""

from __future__ import annotations

from typing import Protocol

import torch
from torch import nn

from nmt.config import ConfigError, ModelConfig
from nmt.model.attention import build_attention
from nmt.model.coverage import attention_overlap
from nmt.model.decoder import Decoder, DecoderState
from nmt.model.encoder import EncoderOutput, build_encoder
from nmt.model.initialisation import initialise
from nmt.model.loss import vocabulary_loss
from nmt.model.rnnsearch import RNNSearchDecoder
from nmt.model.transformer import TransformerDecoder


class Vocabulary(Protocol):
    """What a model needs to know of a vocabulary (a tokenizer's `Vocab` is one)."""

    size: int
    pad_id: int


class Seq2Seq(nn.Module):
    def __init__(self, encoder: nn.Module, decoder: Decoder, tgt_pad_id: int):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.tgt_pad_id = tgt_pad_id

    @property
    def output_layer(self) -> nn.Linear:
        """The vocabulary projection: output features [..., D] -> logits [..., V]."""
        return self.decoder.generator

    @property
    def attention_layers(self) -> int:
        """How many decoder layers attend over the source, each with weights of its own (a
        Transformer's layers); 0 for RNNsearch, whose one attention is not a layer of a stack."""
        return self.decoder.attention_layers

    def choose_attention_layer(self, number: int) -> None:
        """Which of those layers' weights `step` and `teacher_forcing` report, 1 to
        attention_layers (default: the last); a ValueError for any other number."""
        self.decoder.choose_attention_layer(number)

    def encode(self, src: torch.Tensor, src_lengths: torch.Tensor) -> EncoderOutput:
        return self.encoder(src, src_lengths)

    def init_state(self, encoded: EncoderOutput) -> DecoderState:
        return self.decoder.init_state(encoded)

    def step(
        self, state: DecoderState, prev_tokens: torch.Tensor
    ) -> tuple[torch.Tensor, DecoderState, torch.Tensor]:
        """prev_tokens [B] -> logits [B, V], next state, attention weights [B, H, S]."""
        return self.decoder.step(state, prev_tokens)

    def forward(
        self,
        src: torch.Tensor,
        src_lengths: torch.Tensor,
        tgt_in: torch.Tensor,
        tgt_out: torch.Tensor,
        label_smoothing: float = 0.0,
        coverage_loss: float = 0.0,
    ) -> torch.Tensor:
        """The summed label-smoothed cross-entropy of the teacher-forced pass over the real
        target tokens of tgt_out [B, T]; divide by their number yourself. `coverage_loss` > 0
        adds that weight times the coverage loss of the reported attention."""
        state = self.init_state(self.encode(src, src_lengths))
        features, weights = self.decoder(state, tgt_in, need_weights=coverage_loss > 0)
        loss = vocabulary_loss(
            features, self.output_layer, tgt_out, self.tgt_pad_id, label_smoothing
        )
        if coverage_loss > 0:
            loss = loss + coverage_loss * attention_overlap(weights, tgt_out != self.tgt_pad_id)
        return loss

    def teacher_forcing(
        self, src: torch.Tensor, src_lengths: torch.Tensor, tgt_in: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits [B, T, V] and attention weights [B, T, H, S] of all target positions at once."""
        features, weights = self.decoder(self.init_state(self.encode(src, src_lengths)), tgt_in)
        return self.output_layer(features), weights


def build_model(config: ModelConfig, src: Vocabulary, tgt: Vocabulary) -> Seq2Seq:
    """A freshly initialised model sized for the two vocabularies."""
    encoder = build_encoder(config.encoder, src.size, src.pad_id)
    decoder: Decoder
    if config.decoder.type == "transformer":
        decoder = TransformerDecoder(tgt.size, config.decoder, config.attention, tgt.pad_id)
    else:
        attention = build_attention(config.attention, config.decoder.hidden_dim, encoder.output_dim)
        decoder = RNNSearchDecoder(
            tgt.size, config.decoder, attention, encoder.final_dim, tgt.pad_id
        )
    if config.share_embeddings:
        if src is not tgt and (src.size, src.pad_id) != (tgt.size, tgt.pad_id):
            raise ConfigError(
                "model.share_embeddings",
                f"needs one vocabulary for both sides, got {src.size} source and {tgt.size} "
                "target entries; train with tokenizer.joint: true",
            )
        encoder.embed.weight = decoder.embed.weight
    model = Seq2Seq(encoder, decoder, tgt.pad_id)
    initialise(model)
    return model
