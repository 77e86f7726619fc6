"""Seq2Seq: an encoder, a decoder, and the small interface that search is written against."""

from __future__ import annotations

import torch
from torch import nn

from nmt.attention import build_attention
from nmt.config import ModelConfig
from nmt.decoder import DecoderState, RNNSearchDecoder
from nmt.encoder import EncoderOutput, build_encoder
from nmt.tokenizer import Tokenizer


class Seq2Seq(nn.Module):
    def __init__(self, encoder: nn.Module, decoder: RNNSearchDecoder):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder

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
        self, src: torch.Tensor, src_lengths: torch.Tensor, tgt_in: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Teacher-forced output features [B, T, D] and attention weights [B, T, H, S]; the
        logits are `decoder.generator(features)`, which training fuses with the loss (nmt.loss)."""
        return self.decoder(self.init_state(self.encode(src, src_lengths)), tgt_in)


def build_model(
    config: ModelConfig, src_vocab_size: int, tgt_vocab_size: int, src_pad_id: int, tgt_pad_id: int
) -> Seq2Seq:
    encoder = build_encoder(config.encoder, src_vocab_size, src_pad_id)
    attention = build_attention(config.attention, config.decoder.hidden_dim, encoder.output_dim)
    decoder = RNNSearchDecoder(
        tgt_vocab_size, config.decoder, attention, encoder.final_dim, tgt_pad_id
    )
    model = Seq2Seq(encoder, decoder)
    _initialise(model)
    return model


def model_for(config: ModelConfig, tokenizer: Tokenizer) -> Seq2Seq:
    """A fresh model sized for the tokenizer's vocabularies."""
    src, tgt = tokenizer.src, tokenizer.tgt
    return build_model(config, src.size, tgt.size, src.pad_id, tgt.pad_id)


def _initialise(model: nn.Module) -> None:
    """Xavier matrices, zero biases, small embeddings, orthogonal recurrences; norms keep 1."""
    for name, parameter in model.named_parameters():
        if "embed" in name:
            nn.init.normal_(parameter, std=parameter.size(-1) ** -0.5)
        elif "weight_hh" in name:
            for gate in parameter.chunk(parameter.size(0) // parameter.size(1)):
                nn.init.orthogonal_(gate)
        elif parameter.dim() >= 2:
            nn.init.xavier_uniform_(parameter)
        elif name.endswith("bias"):
            nn.init.zeros_(parameter)
    for module in model.modules():
        if isinstance(module, nn.Embedding) and module.padding_idx is not None:
            with torch.no_grad():
                module.weight[module.padding_idx].zero_()
