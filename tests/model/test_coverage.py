import dataclasses
import math

import pytest
import torch

from conftest import tiny_model
from nmt.config import (
    AttentionConfig,
    ConfigError,
    DecodeConfig,
    DecoderConfig,
    EncoderConfig,
    ModelConfig,
    TrainConfig,
)
from nmt.model.coverage import MAX_FERTILITY, attention_overlap
from nmt.search.hypothesis import Hypothesis, coverage_penalty


def coverage_model(tiny_config, kind, seed=0):
    """A tiny RNNsearch with coverage `kind`, every parameter random (so the coverage weight
    and fertility matter from the start)."""
    attention = dataclasses.replace(tiny_config.model.attention, coverage=kind)
    config = dataclasses.replace(
        tiny_config, model=dataclasses.replace(tiny_config.model, attention=attention)
    )
    model = tiny_model(config, seed=seed).eval()
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.5)
    return model


def source(lengths, seed=1):
    generator = torch.Generator().manual_seed(seed)
    src = torch.zeros(len(lengths), max(lengths), dtype=torch.long)
    for row, length in enumerate(lengths):
        src[row, :length] = torch.randint(4, 50, (length,), generator=generator)
    return src, torch.tensor(lengths)


@pytest.mark.parametrize("kind", ["vector", "linguistic"])
@torch.no_grad()
def test_the_coverage_is_the_running_sum_of_past_attention_under_beam_reordering(tiny_config, kind):
    model = coverage_model(tiny_config, kind)
    src, lengths = source([6, 3, 5])
    state = model.init_state(model.encode(src, lengths))
    fertility = state.decoder.coverage.fertility
    if kind == "vector":
        assert fertility is None
    else:
        assert fertility.shape == (3, 6) and fertility.min() > 0 and fertility.max() < 2
    expected = torch.zeros(3, 6)
    generator = torch.Generator().manual_seed(2)
    prev = torch.full((3,), 2)
    for _ in range(5):
        logits, state, weights = model.step(state, prev)
        received = weights.mean(1) / (1 if fertility is None else fertility)
        expected = expected + received
        assert torch.allclose(state.decoder.coverage.total, expected, atol=1e-6)
        rows = torch.randint(0, expected.size(0), (3,), generator=generator)  # back-pointers
        state, expected, prev = state.select(rows), expected[rows], logits.argmax(1)[rows]
        fertility = None if fertility is None else fertility[rows]


@pytest.mark.parametrize("kind", ["vector", "linguistic"])
@torch.no_grad()
def test_step_by_step_equals_teacher_forcing_with_coverage(tiny_config, kind):
    model = coverage_model(tiny_config, kind)
    src, lengths = source([6, 3, 5])
    tgt_in = torch.randint(4, 50, (3, 7), generator=torch.Generator().manual_seed(3))
    forced_logits, forced_weights = model.teacher_forcing(src, lengths, tgt_in)
    state = model.init_state(model.encode(src, lengths))
    for t in range(tgt_in.size(1)):
        logits, state, weights = model.step(state, tgt_in[:, t])
        assert torch.allclose(logits, forced_logits[:, t], atol=1e-5)
        assert torch.allclose(weights, forced_weights[:, t], atol=1e-6)


@torch.no_grad()
def test_the_coverage_enters_the_additive_score_as_the_paper_writes_it(tiny_config):
    """e_ij = v^T tanh(W s + U h_j + w c_j), softmax over j."""
    model = coverage_model(tiny_config, "vector")
    attention = model.decoder.attention
    scorer = attention.scorer
    src, lengths = source([5])
    encoded = model.encode(src, lengths)
    memory = attention.prepare(encoded.states, encoded.mask)
    query, covered = torch.randn(1, 1, scorer.query_proj.in_features), torch.rand(1, 1, 5)
    _, weights = attention(query, memory, coverage=covered)
    w = attention.coverage.weight.weight[:, 0]
    energy = [
        scorer.energy.weight[0]
        @ torch.tanh(
            scorer.query_proj(query[0, 0])
            + scorer.key_proj(encoded.states[0, j])
            + w * covered[0, 0, j]
        )
        for j in range(5)
    ]
    assert torch.allclose(weights[0, 0, 0], torch.stack(energy).softmax(0), atol=1e-5)
    _, uncovered = attention(query, memory)
    assert not torch.allclose(weights, uncovered, atol=1e-3)


def test_fertility_is_n_sigmoid_of_the_state_and_divides_what_a_word_is_given(tiny_config):
    """Tu et al.: Phi_j = N sigmoid(U_f h_j), reaching 0 and N = 2 at the extremes, and the
    coverage of word j grows by its (head-averaged) weight / Phi_j at each step."""
    model = coverage_model(tiny_config, "linguistic")
    encoded = model.encode(*source([4, 6]))
    coverage = model.decoder.attention.coverage
    start = coverage.start(encoded.states)
    by_hand = MAX_FERTILITY * torch.sigmoid(
        encoded.states @ coverage.fertility.weight[0] + coverage.fertility.bias
    )
    torch.testing.assert_close(start.fertility, by_hand)
    extreme = coverage.start(encoded.states * 1000).fertility
    assert extreme.max().item() == pytest.approx(MAX_FERTILITY, abs=1e-4)
    assert extreme.min().item() == pytest.approx(0.0, abs=1e-4)
    weights = torch.rand(2, 3, by_hand.size(1), generator=torch.Generator().manual_seed(0))
    weights = weights / weights.sum(-1, keepdim=True)  # [B, H, S]
    once = start.after(weights)
    torch.testing.assert_close(once.total, weights.mean(1) / by_hand)
    torch.testing.assert_close(once.after(weights).total, 2 * weights.mean(1) / by_hand)


def test_the_penalty_equals_a_hand_computation():
    attention = torch.tensor(  # [T=3, H=2, S=3]; the heads average to the rows below
        [
            [[0.6, 0.4, 0.0], [0.4, 0.6, 0.0]],  # [0.5, 0.5, 0.0]
            [[0.2, 0.6, 0.2], [0.0, 0.4, 0.6]],  # [0.1, 0.5, 0.4]
            [[0.1, 0.1, 0.8], [0.1, 0.1, 0.8]],  # [0.1, 0.1, 0.8]
        ]
    )
    # column sums 0.7, 1.1, 1.2 -> log 0.7 + log 1 + log 1
    assert coverage_penalty(attention, 0.5).item() == pytest.approx(0.5 * math.log(0.7), abs=1e-6)
    # only the first two source words are real: the third's column does not count
    real = torch.tensor([True, True, False])
    padded = torch.cat([attention, torch.zeros(3, 2, 1)], -1)[..., [0, 1, 3]]
    assert coverage_penalty(padded, 0.5, real).item() == pytest.approx(0.5 * math.log(0.7))
    hypothesis = Hypothesis([5, 6], -2.0, attention)
    lp = ((5 + 3) / 6) ** 0.6
    expected = -2.0 / lp + 0.5 * math.log(0.7)
    assert hypothesis.normalised_score(0.6, 0.5) == pytest.approx(expected, abs=1e-6)
    assert hypothesis.normalised_score(0.6) == pytest.approx(-2.0 / lp)


def test_an_unattended_word_lowers_the_score_without_making_it_infinite():
    attention = torch.tensor([[[1.0, 0.0]]])
    assert -100 < coverage_penalty(attention, 1.0).item() < -80


def test_the_coverage_loss_is_the_sum_of_min_attention_coverage():
    generator = torch.Generator().manual_seed(4)
    weights = torch.rand(2, 4, 2, 3, generator=generator).softmax(-1)  # [B, T, H, S]
    real = torch.tensor([[True, True, True, False], [True, True, True, True]])
    expected = 0.0
    for b in range(2):
        for i in range(4):
            if not real[b, i]:
                continue
            a = weights[b, i].mean(0)
            c = weights[b, :i].mean(1).sum(0)
            expected += sum(min(a[j].item(), c[j].item()) for j in range(3))
    assert attention_overlap(weights, real).item() == pytest.approx(expected, abs=1e-5)


@pytest.mark.parametrize("kind", ["none", "linguistic"])
def test_the_training_loss_adds_the_weighted_coverage_loss(tiny_config, kind):
    model = coverage_model(tiny_config, kind)
    src, lengths = source([6, 3])
    tgt = torch.randint(4, 50, (2, 6), generator=torch.Generator().manual_seed(5))
    tgt[1, 4:] = 0  # padding
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]
    plain = model(src, lengths, tgt_in, tgt_out)
    with_loss = model(src, lengths, tgt_in, tgt_out, coverage_loss=0.5)
    _, weights = model.teacher_forcing(src, lengths, tgt_in)
    overlap = attention_overlap(weights, tgt_out != 0)
    assert overlap > 0
    assert with_loss.item() == pytest.approx(plain.item() + 0.5 * overlap.item(), rel=1e-5)


@pytest.mark.parametrize(
    ("make", "key", "message"),
    [
        (lambda: AttentionConfig(type="dot", coverage="vector"), "coverage", "no place for it"),
        (
            lambda: AttentionConfig(type="multihead", coverage="linguistic"),
            "coverage",
            "no place for it",
        ),
        (lambda: TrainConfig(coverage_loss=-1.0), "coverage_loss", "must be >= 0"),
        (lambda: DecodeConfig(coverage_penalty=-0.1), "coverage_penalty", "must be >= 0"),
    ],
)
def test_coverage_settings_that_make_no_sense_are_refused(make, key, message):
    with pytest.raises(ConfigError, match=message) as caught:
        make()
    assert caught.value.path == key


def test_coverage_is_refused_on_a_transformer_decoder():
    with pytest.raises(ConfigError, match="trains all target positions at once") as caught:
        ModelConfig(
            encoder=EncoderConfig(type="self_attention", emb_dim=16, heads=2),
            decoder=DecoderConfig(type="transformer", emb_dim=16, heads=2),
            attention=AttentionConfig(coverage="vector"),
        )
    assert caught.value.path == "attention.coverage"
