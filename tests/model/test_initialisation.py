"""Every parameter of every model family starts by the rule of the module that owns it:
zero biases, Xavier-uniform projections, orthogonal recurrences gate by gate, normal
embeddings with a zero padding row, layer norms at one."""

import math
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from nmt.config import AttentionConfig, DecoderConfig, EncoderConfig, ModelConfig
from nmt.model.seq2seq import build_model

WIDTH = 48  # wide enough that a sample variance tells Xavier's band from a neighbour's
RNN = EncoderConfig(emb_dim=WIDTH, hidden_dim=WIDTH)
LSTM = EncoderConfig(rnn="lstm", emb_dim=WIDTH, hidden_dim=WIDTH, layers=2)
SELF = EncoderConfig(type="self_attention", emb_dim=WIDTH, layers=2, heads=2, ff_dim=64)
MIXED = EncoderConfig(type="birnn_self_attention", emb_dim=WIDTH, hidden_dim=24, heads=2)
DECODER = DecoderConfig(emb_dim=WIDTH, hidden_dim=WIDTH, out_dim=WIDTH)
TRANSFORMER = DecoderConfig(type="transformer", emb_dim=WIDTH, layers=2, heads=2, ff_dim=64)
FAMILIES = {
    "rnnsearch": ModelConfig(RNN, DECODER, AttentionConfig(attn_dim=WIDTH)),
    "lstm_keyvalue": ModelConfig(LSTM, DECODER, AttentionConfig(attn_dim=WIDTH, kv="separate")),
    "general_local": ModelConfig(RNN, DECODER, AttentionConfig(type="general", window=4)),
    "dot": ModelConfig(RNN, DECODER, AttentionConfig(type="dot", kv="separate")),
    "multihead": ModelConfig(RNN, DECODER, AttentionConfig(type="multihead", heads=2)),
    "selfattn_rnnsearch": ModelConfig(SELF, DECODER, AttentionConfig(attn_dim=WIDTH)),
    "birnn_selfattn": ModelConfig(MIXED, DECODER, AttentionConfig(attn_dim=WIDTH)),
    "transformer": ModelConfig(
        SELF, TRANSFORMER, AttentionConfig(type="multihead", attn_dim=WIDTH, kv="separate")
    ),
    "transformer_tied_shared": ModelConfig(
        SELF,
        DecoderConfig(**{**TRANSFORMER.__dict__, "tie_embeddings": True}),
        AttentionConfig(type="multihead", attn_dim=WIDTH, heads=2, kv="separate"),
        share_embeddings=True,
    ),
}
# The RNNsearch decoder's own GRU: its gate inputs and its recurrence, as nn.GRU's are.
DECODER_GATES = {"embedding_gates": False, "context_gates": False, "hidden_gates": True}


def owners(model):
    """(module path, module, parameter name, parameter), each parameter once, first owner."""
    seen = set()
    for path, module in model.named_modules():
        for name, parameter in module.named_parameters(recurse=False):
            if id(parameter) not in seen:
                seen.add(id(parameter))
                yield path, module, name, parameter


def assert_xavier(weight, what):
    """Xavier uniform: within +-a, a = sqrt(6 / (fan_in + fan_out)), variance a^2 / 3."""
    fan_out, fan_in = weight.shape
    bound = math.sqrt(6 / (fan_in + fan_out))
    assert weight.abs().max() <= bound * (1 + 1e-6), what
    spread = 4 * 0.9 / math.sqrt(weight.numel())  # 4 standard errors of the sample variance
    assert abs(weight.pow(2).mean().item() / (bound**2 / 3) - 1) < spread, what


def assert_orthogonal(weight, what):
    identity = torch.eye(weight.size(0))
    torch.testing.assert_close(weight @ weight.T, identity, atol=1e-5, rtol=0, msg=what)


def per_gate(weight, gates, check, what):
    assert weight.size(0) % gates == 0, what
    for index, block in enumerate(weight.chunk(gates)):
        check(block, f"{what} gate {index}")


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_parameter_starts_by_its_modules_rule(family):
    torch.manual_seed(0)
    vocab = SimpleNamespace(size=400, pad_id=0)
    model = build_model(FAMILIES[family], vocab, vocab)
    checked = 0
    for path, module, name, parameter in owners(model):
        what, weight = f"{path}.{name}", parameter.detach()
        checked += 1
        if name.startswith("bias"):
            assert (weight == 0).all(), what
        elif isinstance(module, nn.Embedding):
            assert (weight[module.padding_idx] == 0).all(), what
            rows = torch.cat([weight[: module.padding_idx], weight[module.padding_idx + 1 :]])
            std = weight.size(1) ** -0.5
            assert abs(rows.std().item() / std - 1) < 4 / math.sqrt(2 * rows.numel()), what
        elif isinstance(module, (nn.GRU, nn.LSTM)):
            gates = 3 if isinstance(module, nn.GRU) else 4
            recurrent = name.startswith("weight_hh")
            per_gate(weight, gates, assert_orthogonal if recurrent else assert_xavier, what)
        elif path.rsplit(".", 1)[-1] in DECODER_GATES:
            recurrent = DECODER_GATES[path.rsplit(".", 1)[-1]]
            per_gate(weight, 3, assert_orthogonal if recurrent else assert_xavier, what)
        elif isinstance(module, nn.Linear):
            assert_xavier(weight, what)
        elif isinstance(module, nn.LayerNorm):
            assert (weight == 1).all(), what
        else:
            pytest.fail(f"{what}: no rule for {type(module).__name__}")
    assert checked == len(list(model.parameters()))


def test_a_tied_output_layer_is_the_embedding():
    torch.manual_seed(0)
    vocab = SimpleNamespace(size=400, pad_id=0)
    model = build_model(FAMILIES["transformer_tied_shared"], vocab, vocab)
    assert model.output_layer.weight is model.decoder.embed.weight
    assert model.encoder.embed.weight is model.decoder.embed.weight
    assert (model.output_layer.weight[0] == 0).all()  # the padding row, an embedding's rule


def test_the_same_seed_gives_the_same_weights():
    vocab = SimpleNamespace(size=400, pad_id=0)
    states = []
    for _ in range(2):
        torch.manual_seed(5)
        states.append(build_model(FAMILIES["rnnsearch"], vocab, vocab).state_dict())
    assert all(torch.equal(states[0][key], states[1][key]) for key in states[0])
