"""Seq2Seq: an encoder, a decoder and its output layer, and the one builder of models.

Search is written against `encode`, `init_state` and `step`; training calls the model itself,
which returns the loss: the vocabulary projection is fused with the loss (nmt/model/loss.py),
so nothing outside this package touches the output layer. A copy model (nmt/model/copy.py)
scores V + S columns in search, the last S for source pieces the target vocabulary lacks.

Search tells `init_state` what it needs beyond the logits: attention weights or not (a
Transformer attends faster without them), and optionally a shortlist of the target ids the
output layer computes at all: the projection onto those rows of its weight, sliced once per
batch, costs the share of the vocabulary they are, and `step` returns their logits alone.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import torch
import torch.nn.functional as F
from torch import nn

from nmt.config import ConfigError, ModelConfig
from nmt.model.attention import build_attention
from nmt.model.copy import Copy, copy_loss
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
    unk_id: int

    def pieces(self, ids: Sequence[int]) -> list[str]: ...


def restricted_output(
    layer: nn.Module, ids: torch.Tensor
) -> Callable[[torch.Tensor], torch.Tensor]:
    """The output layer cut down to the rows of target ids [C]: features [B, D] -> their
    logits [B, C]. A dynamically quantised layer (`--quantize int8`) keeps its int8 rows
    and their scales, so the cut layer computes exactly those columns of the whole one."""
    if not callable(layer.weight):  # an nn.Linear
        ids = ids.to(layer.weight.device)
        bias = None if layer.bias is None else layer.bias.index_select(0, ids)
        return functools.partial(F.linear, weight=layer.weight.index_select(0, ids), bias=bias)
    from torch.ao.nn.quantized.dynamic import Linear as QuantizedLinear

    weight, bias = layer.weight(), layer.bias()
    if weight.qscheme() == torch.per_channel_affine:  # index_select takes per-tensor only
        scales, zeros = weight.q_per_channel_scales(), weight.q_per_channel_zero_points()
        rows = torch._make_per_channel_quantized_tensor(
            weight.int_repr()[ids], scales[ids], zeros[ids], 0
        )
    else:
        rows = weight.index_select(0, ids)
    cut = QuantizedLinear(layer.in_features, ids.numel(), dtype=torch.qint8)
    cut.set_weight_bias(rows, None if bias is None else bias[ids])
    return cut


@dataclass
class SearchState:
    """What a Seq2Seq carries from step to step of search."""

    decoder: DecoderState
    need_weights: bool  # whether `step` returns the attention weights (else None)
    # the output layer cut to a shortlist's rows (`restricted_output`); None: the whole one
    output: Callable[[torch.Tensor], torch.Tensor] | None = None
    source_ids: torch.Tensor | None = None  # a copy model's [B, S]: target id or V + position

    def select(self, indices: torch.Tensor) -> SearchState:
        """Reorders (or repeats) batch rows, e.g. to follow beam-search back-pointers."""
        ids = self.source_ids
        return dataclasses.replace(
            self,
            decoder=self.decoder.select(indices),
            source_ids=None if ids is None else ids.index_select(0, indices),
        )


class Seq2Seq(nn.Module):
    def __init__(
        self, encoder: nn.Module, decoder: Decoder, tgt_pad_id: int, copy: Copy | None = None
    ):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.tgt_pad_id = tgt_pad_id
        self.copy = copy

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
        attention_layers (default: the last, or the one a copy model copies with); a
        ValueError for any other number. A copy model copies with its copy layer regardless."""
        self.decoder.choose_attention_layer(number)

    def encode(self, src: torch.Tensor, src_lengths: torch.Tensor) -> EncoderOutput:
        encoded = self.encoder(src, src_lengths)
        return encoded if self.copy is None else dataclasses.replace(encoded, src=src)

    def init_state(
        self,
        encoded: EncoderOutput,
        need_weights: bool = True,
        shortlist: torch.Tensor | None = None,
    ) -> SearchState:
        """The state before the first target token. `need_weights`: whether `step` returns
        attention weights; `shortlist` [C]: the sorted target ids the output layer computes,
        `step`'s logits [B, C] (None: all; a copy model, whose columns beyond the vocabulary
        are its source's, takes none)."""
        if shortlist is not None and self.copy is not None:
            raise ValueError("a copy model scores its source pieces too: it takes no shortlist")
        output = None if shortlist is None else restricted_output(self.output_layer, shortlist)
        ids = None if self.copy is None else self.copy.source_ids(encoded.src)
        return SearchState(self.decoder.init_state(encoded), need_weights, output, ids)

    def step(
        self, state: SearchState, prev_tokens: torch.Tensor
    ) -> tuple[torch.Tensor, SearchState, torch.Tensor | None]:
        """prev_tokens [B] -> logits [B, V] (with a shortlist [B, C]), next state, attention
        weights [B, H, S] (None unless the state needs them); a copy model's
        log-probabilities [B, V + S] instead of logits."""
        copy = self.copy
        tokens = prev_tokens if copy is None else copy.readable(prev_tokens)
        features, decoder_state, weights, copying = self.decoder.step(
            state.decoder, tokens, state.need_weights
        )
        output = state.output
        logits = (self.output_layer if output is None else output)(features)
        state = dataclasses.replace(state, decoder=decoder_state)
        if copy is None:
            return logits, state, weights
        ids = state.source_ids
        log_probs = copy.log_probs(
            logits, features, copying.mean(1), ids, copy.vocab_size + ids.size(1)
        )
        return log_probs, state, weights

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
        state = self.decoder.init_state(self.encoder(src, src_lengths))
        features, weights, copying = self.decoder(state, tgt_in, need_weights=coverage_loss > 0)
        if self.copy is None:
            loss = vocabulary_loss(
                features, self.output_layer, tgt_out, self.tgt_pad_id, label_smoothing
            )
        else:
            loss = copy_loss(
                features,
                self.output_layer,
                self.copy,
                copying.mean(2),
                self.copy.training_ids(src),
                tgt_out,
                self.tgt_pad_id,
                label_smoothing,
            )
        if coverage_loss > 0:
            loss = loss + coverage_loss * attention_overlap(weights, tgt_out != self.tgt_pad_id)
        return loss

    def teacher_forcing(
        self, src: torch.Tensor, src_lengths: torch.Tensor, tgt_in: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits [B, T, V] (a copy model's log-probabilities [B, T, V + S], as `step` gives
        them) and attention weights [B, T, H, S] of all target positions at once."""
        features, weights, copying = self._teacher_forced(src, src_lengths, tgt_in)
        logits = self.output_layer(features)
        if self.copy is None:
            return logits, weights
        ids = self.copy.source_ids(src)
        log_probs = self.copy.log_probs(
            logits,
            features,
            copying.mean(2),
            ids[:, None, :].expand(-1, tgt_in.size(1), -1),
            self.copy.vocab_size + ids.size(1),
        )
        return log_probs, weights

    def copy_gates(
        self, src: torch.Tensor, src_lengths: torch.Tensor, tgt_in: torch.Tensor
    ) -> torch.Tensor:
        """A copy model's p_gen [B, T] at each target position, teacher-forced: how much of
        each token's probability came from the vocabulary rather than from copying."""
        if self.copy is None:
            raise ValueError("this model does not copy")
        features, _, _ = self._teacher_forced(src, src_lengths, tgt_in)
        return torch.sigmoid(self.copy.gates(features).float())

    def _teacher_forced(
        self, src: torch.Tensor, src_lengths: torch.Tensor, tgt_in: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """The decoder's teacher-forced features, reported and copy weights; extended ids in
        tgt_in (copied pieces) enter as <unk>, as in `step`."""
        if self.copy is not None:
            tgt_in = self.copy.readable(tgt_in)
        state = self.decoder.init_state(self.encoder(src, src_lengths))
        return self.decoder(state, tgt_in)


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
    copy = None
    if config.copy:
        copy = Copy(
            decoder.generator.in_features,
            src.pieces(range(src.size)),
            tgt.pieces(range(tgt.size)),
            tgt.unk_id,
        )
        if isinstance(decoder, TransformerDecoder):
            # what plots and alignments show by default is the attention it copies with
            decoder.copy_layer = decoder.attention_layer = (
                config.copy_layer or len(decoder.layers)
            ) - 1
    model = Seq2Seq(encoder, decoder, tgt.pad_id, copy)
    initialise(model)
    return model
