"""The decoder's hand-written GRU step against torch's own GRU cell."""

import pytest
import torch
from torch import nn

from conftest import tiny_model
from nmt.model.rnnsearch import RNNSearchState

BATCH = 5


def reference_cell(decoder, gate_order=(0, 1, 2)) -> nn.GRUCell:
    """An nn.GRUCell holding the decoder's GRU weights: input [E y_{i-1}; c_i], gates [r, z, n].
    `gate_order` permutes the gate blocks, to build deliberately wrong cells."""
    hidden_dim = decoder.hidden_gates.in_features
    input_dim = decoder.embedding_gates.in_features + decoder.context_gates.in_features
    cell = nn.GRUCell(input_dim, hidden_dim)

    def reorder(tensor):  # [3H, ...] in blocks [r, z, n]
        blocks = tensor.chunk(3, dim=0)
        return torch.cat([blocks[i] for i in gate_order], dim=0)

    weight_ih = torch.cat([decoder.embedding_gates.weight, decoder.context_gates.weight], dim=1)
    with torch.no_grad():
        cell.weight_ih.copy_(reorder(weight_ih))
        cell.bias_ih.copy_(reorder(decoder.embedding_gates.bias))
        cell.weight_hh.copy_(reorder(decoder.hidden_gates.weight))
        cell.bias_hh.copy_(reorder(decoder.hidden_gates.bias))
    return cell.eval()


@pytest.fixture
def step_inputs(tiny_config):
    """A decoder with every parameter random (biases included, which the model's init zeroes),
    a state with a random s_{i-1}, and random previous tokens."""
    model = tiny_model(tiny_config).eval()
    generator = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.5)
    lengths = torch.tensor([7, 3, 5, 1, 6])
    src = torch.randint(4, 50, (BATCH, 7), generator=generator)
    state = model.decoder.init_state(model.encode(src, lengths))
    hidden = torch.randn(state.hidden.shape, generator=generator)
    state = RNNSearchState(hidden, state.memory)
    prev_tokens = torch.randint(4, 50, (BATCH,), generator=generator)
    return model.decoder, state, prev_tokens


def gru_reference(decoder, state, prev_tokens, cell):
    """s_i = GRU([E y_{i-1}; c_i], s_{i-1}), with c_i attended with s_{i-1}."""
    context, _ = decoder.attention(state.hidden[:, None, :], state.memory)  # [B, 1, C]
    cell_input = torch.cat([decoder.embed(prev_tokens), context[:, 0]], dim=-1)  # [B, E + C]
    return cell(cell_input, state.hidden)  # [B, H]


@torch.no_grad()
def test_gru_step_equals_torch_gru_cell(step_inputs):
    decoder, state, prev_tokens = step_inputs
    _, next_state, _, _ = decoder.step(state, prev_tokens)
    expected = gru_reference(decoder, state, prev_tokens, reference_cell(decoder))
    assert next_state.hidden.shape == (BATCH, decoder.hidden_gates.in_features)
    torch.testing.assert_close(next_state.hidden, expected, atol=1e-6, rtol=1e-6)


@torch.no_grad()
@pytest.mark.parametrize("gate_order", [(1, 0, 2), (0, 2, 1), (2, 1, 0)], ids=["rz", "zn", "rn"])
def test_the_reference_tells_swapped_gates_apart(step_inputs, gate_order):
    """The comparison above has teeth: a GRU with two gates' weights swapped differs."""
    decoder, state, prev_tokens = step_inputs
    _, next_state, _, _ = decoder.step(state, prev_tokens)
    wrong = gru_reference(decoder, state, prev_tokens, reference_cell(decoder, gate_order))
    assert (next_state.hidden - wrong).abs().max() > 1e-2
