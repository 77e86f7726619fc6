"""Adapters on a frozen model: the adapted model computes what the base does at the start
(B and W_up are zero), only the adapters learn, a tied matrix takes one update wherever it
is used, and merging gives a plain model of the base's shape computing what the adapted
one does."""

import logging

import pytest
import torch
from torch import nn

from conftest import TINY_TRANSFORMER, tiny_experiment
from nmt.config import AdapterConfig
from nmt.errors import UserError
from nmt.model.adapters import (
    LoRA,
    LoRAEmbedding,
    LoRALinear,
    add_adapters,
    has_adapters,
    load_trained_state,
    merged,
    sharing_base,
    trained_state,
)
from nmt.model.seq2seq import build_model

MERGE_TOLERANCE = 1e-5  # float32: W x + s B A x against (W + s B A) x


class FakeVocab:
    size, pad_id, bos_id, eos_id, unk_id, tags = 50, 0, 2, 3, 1, {}


def transformer(corpus_dir) -> nn.Module:
    """The tiny Transformer, whose output layer and both embeddings are one matrix."""
    torch.manual_seed(0)
    config = tiny_experiment(corpus_dir, *TINY_TRANSFORMER)
    return build_model(config.model, FakeVocab(), FakeVocab()).eval()


def logits(model: nn.Module) -> torch.Tensor:
    torch.manual_seed(1)
    src = torch.randint(4, 50, (2, 7))
    tgt = torch.randint(4, 50, (2, 5))
    return model.teacher_forcing(src, torch.tensor([7, 6]), tgt)[0]


def randomise(model: nn.Module) -> None:
    """Adapters as training leaves them: every adapter weight nonzero."""
    torch.manual_seed(2)
    with torch.no_grad():
        for tensor in trained_state(model).values():
            tensor.normal_(std=0.05)


def test_a_lora_map_starts_as_its_base_and_merges_into_one_linear_map():
    torch.manual_seed(0)
    base = nn.Linear(8, 6)
    x = torch.randn(4, 8)
    expected = base(x).detach()
    adapted = LoRALinear(base, LoRA(6, 8, rank=2, scale=2.0))
    assert torch.equal(adapted(x), expected)  # B = 0: exactly the base
    with torch.no_grad():
        adapted.update.lora_b.normal_()
    holder = nn.Sequential(adapted)
    out = holder(x).detach()
    plain = merged(holder)[0]
    assert type(plain) is nn.Linear
    assert torch.allclose(plain(x), out, atol=MERGE_TOLERANCE)


def test_a_lora_embedding_adds_its_rows_and_never_moves_the_padding_row():
    torch.manual_seed(0)
    base = nn.Embedding(10, 4, padding_idx=0)
    adapted = LoRAEmbedding(base, LoRA(10, 4, rank=2, scale=1.0))
    with torch.no_grad():
        adapted.update.lora_b.normal_()
    ids = torch.tensor([[0, 3, 9]])
    expected = base.weight + adapted.update.delta(torch.float32)  # the merged table
    assert torch.allclose(adapted(ids), expected[ids], atol=MERGE_TOLERANCE)
    adapted(ids).sum().backward()
    assert torch.all(adapted.update.lora_b.grad[0] == 0)  # the padding row learns nothing


@pytest.mark.parametrize(
    "adapters",
    [
        AdapterConfig(targets=["attention", "feed_forward"]),
        AdapterConfig(targets=["output"], rank=4),
        AdapterConfig(targets=["embeddings", "output", "attention"], rank=2),
        AdapterConfig(type="bottleneck", size=8),
    ],
    ids=["attention+ff", "output", "embeddings+output+attention", "bottleneck"],
)
def test_an_adapted_transformer_starts_as_its_base_and_only_the_adapters_learn(
    corpus_dir, adapters
):
    model = transformer(corpus_dir)
    before = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    expected = logits(model)
    wrapped = add_adapters(model, adapters)
    assert wrapped and has_adapters(model)
    assert torch.equal(logits(model), expected)  # B (or W_up) zero: the base's function
    learning = {name for name, p in model.named_parameters() if p.requires_grad}
    assert learning and learning <= set(trained_state(model))
    assert all(".lora_" in name or ".bottleneck_" in name for name in trained_state(model))
    randomise(model)
    logits(model).sum().backward()
    frozen = [p for p in model.parameters() if not p.requires_grad]
    assert all(p.grad is None for p in frozen)
    base_now = {n: t for n, t in model.state_dict().items() if n not in trained_state(model)}
    assert all(  # the base's weights, untouched, under their wrapped names
        any(torch.equal(tensor, old) for old in before.values()) for tensor in base_now.values()
    )


def test_a_tied_matrix_takes_one_update_and_merging_it_is_exact(corpus_dir):
    """The tiny Transformer ties its output layer to both embeddings: LoRA on "output"
    adapts the one matrix, lookups too, so the merged model computes what the adapted one
    does, with the base's names and shapes."""
    model = transformer(corpus_dir)
    shapes = {name: tensor.shape for name, tensor in model.state_dict().items()}
    wrapped = add_adapters(model, AdapterConfig(targets=["output"], rank=4))
    assert {"decoder.generator", "decoder.embed", "encoder.embed"} <= set(wrapped)
    updates = {id(model.get_submodule(name).update) for name in wrapped}
    assert len(updates) == 1
    randomise(model)
    adapted = logits(model).detach()
    plain = merged(model)
    assert not has_adapters(plain)
    assert {name: tensor.shape for name, tensor in plain.state_dict().items()} == shapes
    assert plain.decoder.generator.weight is plain.decoder.embed.weight  # still tied
    assert torch.allclose(logits(plain), adapted, atol=MERGE_TOLERANCE)


def test_a_target_of_its_own_rank_gets_it_at_the_common_scale_and_a_tied_matrix_the_widest(
    corpus_dir,
):
    model = transformer(corpus_dir)
    config = AdapterConfig(
        targets=["attention", "embeddings", "output"], rank=4, alpha=8, ranks={"embeddings": 6}
    )
    wrapped = add_adapters(model, config)
    ranks = {name: model.get_submodule(name).update.lora_a.shape[0] for name in wrapped}
    scales = {model.get_submodule(name).update.scale for name in wrapped}
    assert ranks["encoder.embed"] == ranks["decoder.generator"] == 6  # tied: the widest
    attention = [name for name in wrapped if "embed" not in name and "generator" not in name]
    assert attention and {ranks[name] for name in attention} == {4}
    assert scales == {2.0}
    randomise(model)
    adapted = logits(model).detach()
    assert torch.allclose(logits(merged(model)), adapted, atol=MERGE_TOLERANCE)


def test_a_rank_for_a_target_not_adapted_is_refused_naming_it_unless_it_is_the_default():
    with pytest.raises(UserError, match=r"ranks\.embeddings.*names no target"):
        AdapterConfig(targets=["attention"], ranks={"embeddings": 8})
    with pytest.raises(UserError, match=r"ranks\.attention.*positive integer"):
        AdapterConfig(targets=["attention"], ranks={"attention": 0})
    with pytest.raises(UserError, match=r"ranks\.embedding.*no kind of weight"):
        AdapterConfig(ranks={"embedding": 8})
    assert AdapterConfig(targets=["attention"]).ranks == {"embeddings": 64, "output": 64}


def test_a_rank_wider_than_its_matrix_is_the_matrixs_own(corpus_dir):
    model = transformer(corpus_dir)
    add_adapters(model, AdapterConfig(targets=["output"], ranks={"output": 10_000}))
    update = model.decoder.generator.update
    assert update.lora_a.shape[0] == min(model.decoder.generator.base.weight.shape)


def test_adapters_on_an_rnnsearch_adapt_its_input_projections_and_refuse_bottlenecks(corpus_dir):
    torch.manual_seed(0)
    config = tiny_experiment(corpus_dir)
    model = build_model(config.model, FakeVocab(), FakeVocab()).eval()
    expected = logits(model)
    wrapped = add_adapters(model, AdapterConfig(targets=["rnn_inputs", "output"], rank=2))
    assert {"decoder.embedding_gates", "decoder.context_gates", "decoder.readout"} <= set(wrapped)
    assert torch.equal(logits(model), expected)
    other = build_model(config.model, FakeVocab(), FakeVocab())
    with pytest.raises(UserError, match="no Transformer layer"):
        add_adapters(other, AdapterConfig(type="bottleneck"))


def test_a_target_this_model_lacks_is_named_beside_those_adapted(corpus_dir, caplog):
    model = build_model(tiny_experiment(corpus_dir).model, FakeVocab(), FakeVocab())
    with caplog.at_level(logging.WARNING, logger="nmt"):
        wrapped = add_adapters(model, AdapterConfig(targets=["feed_forward", "output"], rank=2))
    assert wrapped and "train.adapters.targets feed_forward: this model has no" in caplog.text


def test_the_trained_state_round_trips_and_refuses_a_misfit(corpus_dir):
    model = transformer(corpus_dir)
    add_adapters(model, AdapterConfig())
    randomise(model)
    state = {name: tensor.clone() for name, tensor in trained_state(model).items()}
    other = transformer(corpus_dir)
    add_adapters(other, AdapterConfig())
    load_trained_state(other, state)
    assert torch.equal(logits(other), logits(model))
    bottleneck = transformer(corpus_dir)
    add_adapters(bottleneck, AdapterConfig(type="bottleneck", size=8))
    with pytest.raises(RuntimeError, match="adapter weights do not fit"):
        load_trained_state(bottleneck, state)


def test_adapters_on_a_sharing_copy_leave_the_base_alone_and_hold_no_copy_of_it(corpus_dir):
    base = transformer(corpus_dir)
    expected = logits(base)
    copy = sharing_base(base)
    add_adapters(copy, AdapterConfig(targets=["attention", "output"]))
    randomise(copy)
    assert not has_adapters(base) and torch.equal(logits(base), expected)
    assert not torch.allclose(logits(copy), expected)
    base_tensors = {t.data_ptr() for t in base.state_dict().values()}
    copied = [t for n, t in copy.state_dict().items() if n not in trained_state(copy)]
    assert all(t.data_ptr() in base_tensors for t in copied)
