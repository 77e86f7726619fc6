"""Encoders turn source ids into annotations h_j, one per source token.

`birnn` is the RNNsearch encoder; `self_attention` replaces it with Transformer encoder
layers (query = key = value = the source words); `birnn_self_attention` puts such layers
on top of a BiRNN. Those are the Transformer layers of nmt/model/layers.py, which the
Transformer decoder shares.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from nmt.config import EncoderConfig
from nmt.model.dropout import Dropout
from nmt.model.layers import TransformerEncoderStack
from nmt.model.positions import absolute_positions


@dataclass
class EncoderOutput:
    states: torch.Tensor  # [B, S, D] annotations h_j
    mask: torch.Tensor  # [B, S] True on real tokens
    final: torch.Tensor  # [B, F] summary that initialises the decoder
    src: torch.Tensor | None = None  # [B, S] the source ids, kept where a copy model needs them


def length_mask(lengths: torch.Tensor, width: int, device: torch.device) -> torch.Tensor:
    """[B] -> [B, width], True on real tokens."""
    return torch.arange(width, device=device)[None, :] < lengths.to(device)[:, None]


class BiRNN(nn.Module):
    """h_j = [forward h_j; backward h_j] over packed (padding-free) sequences.

    The summary is the backward state at the first token, from which the paper initialises s_0.
    """

    def __init__(self, input_dim: int, hidden_dim: int, layers: int, rnn: str, dropout: float):
        super().__init__()
        rnn_class = nn.GRU if rnn == "gru" else nn.LSTM
        self.rnn = rnn_class(
            input_dim,
            hidden_dim,
            num_layers=layers,
            batch_first=True,
            bidirectional=True,
            dropout=dropout if layers > 1 else 0.0,
        )

    def forward(
        self,
        embedded: torch.Tensor,
        lengths: torch.Tensor,
        mask: torch.Tensor,
        final: torch.Tensor | None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """embedded [B, S, E] -> states [B, S, 2H], backward state at token 1 [B, H]."""
        packed = pack_padded_sequence(
            embedded, lengths.cpu(), batch_first=True, enforce_sorted=False
        )
        outputs, last = self.rnn(packed)
        states, _ = pad_packed_sequence(outputs, batch_first=True, total_length=embedded.size(1))
        hidden = last[0] if isinstance(last, tuple) else last  # [layers * 2, B, H]
        return states, hidden[-1]


def masked_mean(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over real tokens: [B, S, D] -> [B, D]."""
    weights = mask.to(states.dtype)[:, :, None]
    return (states * weights).sum(1) / weights.sum(1).clamp(min=1)


class Encoder(nn.Module):
    """Embeddings, then stages (a BiRNN, self-attention layers, or both) that each refine h_j.

    Without a recurrent stage nothing orders the words, so positions enter: added to the
    embeddings (scaled by sqrt(d) as the Transformer's are) or inside the self-attention
    (nmt/model/positions.py); and the decoder starts from the mean annotation instead of the
    backward RNN state.
    """

    def __init__(
        self,
        vocab_size: int,
        emb_dim: int,
        pad_id: int,
        stages: list[nn.Module],
        dropout: float,
        output_dim: int,
        final_dim: int,
        positions: nn.Module | None = None,
        scaled: bool = False,
    ):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, emb_dim, padding_idx=pad_id)
        self.stages = nn.ModuleList(stages)
        self.dropout = Dropout(dropout)
        self.positions = positions
        self.scaled = scaled
        self.output_dim = output_dim
        self.final_dim = final_dim

    def forward(self, src: torch.Tensor, lengths: torch.Tensor) -> EncoderOutput:
        """src [B, S], lengths [B] -> states [B, S, D], final [B, F]."""
        mask = length_mask(lengths, src.size(1), src.device)
        states = self.embed(src)  # [B, S, E]
        if self.scaled:
            states = states * math.sqrt(states.size(-1))
        if self.positions is not None:
            states = states + self.positions(0, src.size(1), src.device).to(states.dtype)
        states = self.dropout(states)
        final = None
        for stage in self.stages:
            states, final = stage(states, lengths, mask, final)
        if final is None:
            final = masked_mean(states, mask)
        return EncoderOutput(self.dropout(states), mask, final)


def _birnn(config: EncoderConfig, vocab_size: int, pad_id: int) -> Encoder:
    rnn = BiRNN(config.emb_dim, config.hidden_dim, config.layers, config.rnn, config.dropout)
    return Encoder(
        vocab_size,
        config.emb_dim,
        pad_id,
        [rnn],
        config.dropout,
        config.output_dim,
        config.hidden_dim,
    )


def _self_attention(config: EncoderConfig, vocab_size: int, pad_id: int) -> Encoder:
    positions = absolute_positions(config.position_kind, config.emb_dim, config.max_positions)
    return Encoder(
        vocab_size,
        config.emb_dim,
        pad_id,
        [TransformerEncoderStack(config)],
        config.dropout,
        config.output_dim,
        config.output_dim,
        positions,
        scaled=True,
    )


def _birnn_self_attention(config: EncoderConfig, vocab_size: int, pad_id: int) -> Encoder:
    """One BiRNN layer, then `layers` self-attention layers over its states."""
    rnn = BiRNN(config.emb_dim, config.hidden_dim, 1, config.rnn, config.dropout)
    return Encoder(
        vocab_size,
        config.emb_dim,
        pad_id,
        [rnn, TransformerEncoderStack(config)],
        config.dropout,
        config.output_dim,
        config.hidden_dim,
    )


ENCODERS = {
    "birnn": _birnn,
    "self_attention": _self_attention,
    "birnn_self_attention": _birnn_self_attention,
}


def build_encoder(config: EncoderConfig, vocab_size: int, pad_id: int) -> Encoder:
    return ENCODERS[config.type](config, vocab_size, pad_id)
