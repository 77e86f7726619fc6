"""Attention statistics over hypotheses: exact values on rows whose answer is known, and
torch's own Categorical entropy as the reference on random sparse rows."""

import math

import pytest
import torch

from nmt.scoring import Scores, SystemRow, format_table
from nmt.search import Hypothesis
from nmt.translate.attention_stats import attention_stats


def hypothesis(attention: torch.Tensor) -> Hypothesis:
    return Hypothesis(tokens=list(range(attention.size(0) - 1)), score=0.0, attention=attention)


def test_one_hot_rows_have_zero_entropy_and_one_nonzero_weight():
    rows = torch.eye(5)[[0, 3, 4]].unsqueeze(1)  # [3 steps, 1 head, 5 positions]
    stats = attention_stats([hypothesis(rows)])
    assert (stats.entropy, stats.nonzero, stats.tokens) == (0.0, 1.0, 3)


def test_uniform_rows_over_n_positions_have_entropy_log_n():
    two = torch.tensor([[[0.5, 0.5, 0.0, 0.0]]])  # one step: two of four positions
    four = torch.full((2, 1, 4), 0.25)  # two steps over all four
    stats = attention_stats([hypothesis(two), hypothesis(four)])
    assert stats.tokens == 3
    assert stats.entropy == pytest.approx((math.log(2) + 2 * math.log(4)) / 3)
    assert stats.nonzero == pytest.approx((2 + 4 + 4) / 3)


def test_heads_are_averaged_within_a_token_and_tokens_across_sentences():
    generator = torch.Generator().manual_seed(0)
    sentences = []
    for steps, heads, positions in [(3, 4, 6), (5, 4, 2), (1, 4, 9)]:
        scores = torch.randn(steps, heads, positions, generator=generator)
        scores[torch.rand(scores.shape, generator=generator) < 0.4] = -math.inf
        scores[..., 0] = 0.0  # at least one position stays
        sentences.append(scores.softmax(-1))
    stats = attention_stats(hypothesis(weights) for weights in sentences)
    expected_entropy = (
        sum(
            torch.distributions.Categorical(probs=w).entropy().mean(-1).sum().item()
            for w in sentences
        )
        / 9
    )
    expected_nonzero = sum((w > 0).sum(-1).double().mean(-1).sum().item() for w in sentences) / 9
    assert stats.tokens == 9
    assert stats.entropy == pytest.approx(expected_entropy, abs=1e-6)
    assert stats.nonzero == pytest.approx(expected_nonzero)


def test_no_tokens_give_no_statistics():
    assert attention_stats([]) is None
    assert attention_stats([hypothesis(torch.zeros(0, 1, 3))]) is None


def test_reports_show_the_statistics_only_when_there_are_some():
    plain = Scores(30.0, 55.0, 50.0, "bleu-sig", "chrf-sig", "ter-sig")
    assert "attention" not in plain.summary()
    measured = Scores(30.0, 55.0, 50.0, "bleu-sig", "chrf-sig", "ter-sig", 0.5, 2.25)
    assert "entropy 0.500 nats, 2.25 non-zero weights" in measured.summary()
    rows = [
        SystemRow("a", 30.0, 55.0, 50.0, None, None, None, 1.25, 7.5),
        SystemRow("b", 29.0, 54.0, 51.0, 0.2, 0.3, 0.4),
    ]
    table = format_table(rows, {"BLEU": "sig"}).splitlines()
    assert table[0].endswith("entropy  non-zero")
    assert table[1].endswith("1.250      7.50") and table[2].endswith("-         -")
    assert "entropy" not in format_table(rows[1:], {"BLEU": "sig"})
