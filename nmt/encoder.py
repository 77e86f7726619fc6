"""Encoders turn source ids into annotations h_j, one per source token."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from nmt.config import EncoderConfig


@dataclass
class EncoderOutput:
    states: torch.Tensor  # [B, S, D] annotations h_j
    mask: torch.Tensor  # [B, S] True on real tokens
    final: torch.Tensor  # [B, F] summary that initialises the decoder


class BiRNNEncoder(nn.Module):
    """RNNsearch encoder: h_j = [forward h_j; backward h_j] over packed (padding-free) sequences.

    `final` is the backward state at the first token, from which the paper initialises s_0.
    """

    def __init__(
        self,
        vocab_size: int,
        emb_dim: int,
        hidden_dim: int,
        layers: int,
        rnn: str,
        dropout: float,
        pad_id: int,
    ):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, emb_dim, padding_idx=pad_id)
        self.dropout = nn.Dropout(dropout)
        rnn_class = nn.GRU if rnn == "gru" else nn.LSTM
        self.rnn = rnn_class(
            emb_dim,
            hidden_dim,
            num_layers=layers,
            batch_first=True,
            bidirectional=True,
            dropout=dropout if layers > 1 else 0.0,
        )
        self.output_dim = 2 * hidden_dim
        self.final_dim = hidden_dim

    def forward(self, src: torch.Tensor, lengths: torch.Tensor) -> EncoderOutput:
        """src [B, S], lengths [B] (CPU) -> states [B, S, 2H], final [B, H]."""
        embedded = self.dropout(self.embed(src))  # [B, S, E]
        packed = pack_padded_sequence(
            embedded, lengths.cpu(), batch_first=True, enforce_sorted=False
        )
        outputs, last = self.rnn(packed)
        states, _ = pad_packed_sequence(outputs, batch_first=True, total_length=src.size(1))
        hidden = last[0] if isinstance(last, tuple) else last  # [layers * 2, B, H]
        mask = (
            torch.arange(src.size(1), device=src.device)[None, :] < lengths.to(src.device)[:, None]
        )
        return EncoderOutput(self.dropout(states), mask, hidden[-1])


ENCODERS = {
    "birnn": lambda config, vocab_size, pad_id: BiRNNEncoder(
        vocab_size,
        config.emb_dim,
        config.hidden_dim,
        config.layers,
        config.rnn,
        config.dropout,
        pad_id,
    ),
}


def build_encoder(config: EncoderConfig, vocab_size: int, pad_id: int) -> nn.Module:
    return ENCODERS[config.type](config, vocab_size, pad_id)
