"""The RNNsearch decoder (Bahdanau et al. 2015), in the paper's order of operations.

At target step i the previous state s_{i-1} is the attention query; the context c_i feeds
the GRU, s_i = GRU([E y_{i-1}; c_i], s_{i-1}); the output layer reads (s_i, E y_{i-1}, c_i).
Only the attention and the GRU update depend on the previous step, so under teacher forcing
the embedding-side GRU inputs and the whole output layer run once for all steps, and the
vocabulary projection is left to the loss, which fuses it with the softmax (nmt/model/loss.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from nmt.config import DecoderConfig
from nmt.model.attention import Memory
from nmt.model.coverage import CoverageState
from nmt.model.dropout import Dropout
from nmt.model.encoder import EncoderOutput


class GateLinear(nn.Linear):
    """A Linear layer whose output stacks the pre-activations of `gates` gates of a recurrent
    cell, one block of `hidden` features each; `recurrent`: its input is the cell's own
    previous state. Only its initialisation differs from a Linear layer's (one rule per gate
    block: nmt/model/initialisation.py)."""

    def __init__(
        self, in_dim: int, hidden: int, gates: int, bias: bool = True, recurrent: bool = False
    ):
        super().__init__(in_dim, gates * hidden, bias=bias)
        self.gates = gates
        self.recurrent = recurrent


@dataclass
class RNNSearchState:
    hidden: torch.Tensor  # [B, H] s_{i-1}
    memory: Memory  # the prepared source side
    coverage: CoverageState | None = None  # with model.attention.coverage

    def select(self, indices: torch.Tensor) -> RNNSearchState:
        """Reorders (or repeats) batch rows, e.g. to follow beam-search back-pointers."""
        return RNNSearchState(
            self.hidden.index_select(0, indices),
            self.memory.select(indices),
            None if self.coverage is None else self.coverage.select(indices),
        )


class RNNSearchDecoder(nn.Module):
    def __init__(
        self,
        vocab_size: int,
        config: DecoderConfig,
        attention: nn.Module,
        encoder_final_dim: int,
        pad_id: int,
    ):
        super().__init__()
        hidden, emb, context = config.hidden_dim, config.emb_dim, attention.context_dim
        self.embed = nn.Embedding(vocab_size, emb, padding_idx=pad_id)
        self.dropout = Dropout(config.dropout)
        self.init_proj = nn.Linear(encoder_final_dim, hidden)
        self.attention = attention
        # GRU gates [r, z, n], split by input so the E y part is one matmul for all steps.
        self.embedding_gates = GateLinear(emb, hidden, 3)
        self.context_gates = GateLinear(context, hidden, 3, bias=False)
        self.hidden_gates = GateLinear(hidden, hidden, 3, recurrent=True)
        self.maxout = config.output == "maxout"
        pieces = 2 if self.maxout else 1
        self.readout = nn.Linear(hidden + emb + context, pieces * config.out_dim)
        self.generator = nn.Linear(config.out_dim, vocab_size)
        if config.tie_embeddings:
            self.generator.weight = self.embed.weight

    attention_layers = 0  # one attention, not a stack of layers

    def choose_attention_layer(self, number: int) -> None:
        raise ValueError("an RNNsearch decoder has a single attention, not layers of them")

    def init_state(self, encoded: EncoderOutput) -> RNNSearchState:
        """s_0 = tanh(W_s · backward h_1); the attention prepares its keys once here, and its
        coverage (if any) starts at nothing covered."""
        hidden = torch.tanh(self.init_proj(encoded.final))
        memory = self.attention.prepare(encoded.states, encoded.mask)
        coverage = self.attention.coverage
        return RNNSearchState(
            hidden, memory, None if coverage is None else coverage.start(encoded.states)
        )

    def forward(
        self, state: RNNSearchState, tgt_in: torch.Tensor, need_weights: bool = True
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Teacher forcing. tgt_in [B, T] -> output features [B, T, out_dim] (logits are
        `generator(features)`), attention weights [B, T, H, S], twice: the one attention is
        also the one a copy model copies with. Each step's query needs the step before, so
        the weights come at no extra cost and `need_weights` changes nothing."""
        embedded = self.dropout(self.embed(tgt_in))  # [B, T, E]
        # unbind, not [:, i]: its backward stacks the step gradients once, where [:, i] adds a
        # zero-filled [B, T, 3H] gradient per step.
        embedding_gates = self.embedding_gates(embedded).unbind(1)  # T × [B, 3H]
        hiddens, contexts, weights = [], [], []
        for step_gates in embedding_gates:
            state, context, weight = self._advance(state, step_gates)
            hiddens.append(state.hidden)
            contexts.append(context)
            weights.append(weight)
        features = self._readout(torch.stack(hiddens, 1), embedded, torch.stack(contexts, 1))
        stacked = torch.stack(weights, 1)
        return features, stacked, stacked

    def step(
        self, state: RNNSearchState, prev_tokens: torch.Tensor, need_weights: bool = True
    ) -> tuple[torch.Tensor, RNNSearchState, torch.Tensor, torch.Tensor]:
        """One target step. prev_tokens [B] -> output features [B, out_dim], next state,
        attention weights [B, H, S] (twice, as in `forward`, whatever `need_weights` says)."""
        embedded = self.dropout(self.embed(prev_tokens))  # [B, E]
        state, context, weights = self._advance(state, self.embedding_gates(embedded))
        return self._readout(state.hidden, embedded, context), state, weights, weights

    def _advance(
        self, state: RNNSearchState, embedding_gates: torch.Tensor
    ) -> tuple[RNNSearchState, torch.Tensor, torch.Tensor]:
        """Attend with s_{i-1}, then s_i = GRU([E y_{i-1}; c_i], s_{i-1}); the coverage takes
        in this step's weights. -> the next state, c_i [B, C], weights [B, H, S]."""
        hidden, coverage = state.hidden, state.coverage
        covered = None if coverage is None else coverage.total[:, None, :]
        context, weights = self.attention(hidden[:, None, :], state.memory, coverage=covered)
        context, weights = context[:, 0], weights[:, 0]  # [B, C], [B, H, S]
        x_r, x_z, x_n = (embedding_gates + self.context_gates(context)).chunk(3, dim=-1)
        h_r, h_z, h_n = self.hidden_gates(hidden).chunk(3, dim=-1)
        reset = torch.sigmoid(x_r + h_r)
        update = torch.sigmoid(x_z + h_z)
        candidate = torch.tanh(x_n + reset * h_n)
        hidden = (1 - update) * candidate + update * hidden
        coverage = None if coverage is None else coverage.after(weights)
        return RNNSearchState(hidden, state.memory, coverage), context, weights

    def _readout(
        self, hidden: torch.Tensor, embedded: torch.Tensor, context: torch.Tensor
    ) -> torch.Tensor:
        """Deep output t_i from (s_i, E y_{i-1}, c_i): what the vocabulary projection reads."""
        readout = self.readout(torch.cat([hidden, embedded, context], dim=-1))
        if self.maxout:
            readout = readout.unflatten(-1, (-1, 2)).amax(dim=-1)  # [..., out_dim]
        else:
            readout = torch.tanh(readout)
        return self.dropout(readout)
