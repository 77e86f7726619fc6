"""LoRA on a frozen model: the adapted model computes what the base does at the start (B is
zero), only the adapters learn, and merging them gives a plain model of the base's shape
that computes what the adapted one does."""

import torch
from torch import nn

from conftest import TINY_TRANSFORMER, tiny_experiment
from nmt.model.adapters import (
    Bottleneck,
    LoRALinear,
    adapter_state,
    add_bottlenecks,
    add_lora,
    merged,
)
from nmt.model.seq2seq import build_model


class FakeVocab:
    size, pad_id, bos_id, eos_id, unk_id, tags = 50, 0, 2, 3, 1, {}


def test_a_lora_map_starts_as_its_base_and_merges_into_one_linear_map():
    torch.manual_seed(0)
    base = nn.Linear(8, 6)
    x = torch.randn(4, 8)
    expected = base(x).detach()
    adapted = LoRALinear(base, rank=2, alpha=4.0)
    assert torch.equal(adapted(x), expected)  # B = 0: exactly the base
    with torch.no_grad():
        adapted.lora_b.normal_()
    holder = nn.Sequential(adapted)
    out = holder(x).detach()
    plain = merged(holder)[0]
    assert isinstance(plain, nn.Linear) and torch.allclose(plain(x), out, atol=1e-6)


def test_only_the_adapters_learn_on_a_transformer_and_the_base_stays_as_it_was(corpus_dir):
    torch.manual_seed(0)
    config = tiny_experiment(corpus_dir, *TINY_TRANSFORMER)
    model = build_model(config.model, FakeVocab(), FakeVocab())
    before = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    wrapped = add_lora(model, ["attention", "feed_forward", "output"], rank=4, alpha=8)
    assert wrapped and all(isinstance(model.get_submodule(n), LoRALinear) for n in wrapped)
    learning = {name for name, p in model.named_parameters() if p.requires_grad}
    assert learning == {name for name in learning if ".lora_" in name} and learning
    assert set(adapter_state(model)) == learning
    merged(model)
    after = model.state_dict()
    assert set(after) == set(before)  # the base's shape: nothing added, nothing lost
    assert all(torch.equal(after[name], before[name]) for name in before)  # B was zero


def test_bottlenecks_follow_each_transformer_layer_and_start_as_the_identity(corpus_dir):
    torch.manual_seed(0)
    config = tiny_experiment(corpus_dir, *TINY_TRANSFORMER)
    model = build_model(config.model, FakeVocab(), FakeVocab()).eval()
    layer = next(m for m in model.modules() if m.__class__.__name__ == "TransformerLayer")
    x = torch.randn(2, 5, layer.feed_forward_norm.normalized_shape[0])
    expected = layer(x, None)[0]
    wrapped = add_bottlenecks(model, size=8)
    assert wrapped and all(isinstance(model.get_submodule(n), Bottleneck) for n in wrapped)
    adapted = model.get_submodule(wrapped[0])
    assert torch.equal(adapted(x, None)[0], expected)  # W_up zero: the layer's own output
    learning = {name for name, p in model.named_parameters() if p.requires_grad}
    assert learning == set(adapter_state(model)) and all(".bottleneck_" in n for n in learning)
