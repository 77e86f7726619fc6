import itertools
import math
import typing

import pytest
import torch

from nmt.config import AttentionConfig
from nmt.model.normalisers import (
    NORMALISERS,
    HardAttention,
    annealed_temperature,
    build_normaliser,
)

B, T, H, S = 3, 4, 2, 6


def random_case(mask_shape: str, scale: float, seed: int = 0):
    """scores [B, T, H, S] and a random mask with at least one real position per row, shaped
    [B, 1, 1, S] (source lengths, one of them 1) or [B, T, 1, S] (a pattern per query)."""
    generator = torch.Generator().manual_seed(seed)
    scores = scale * torch.randn(B, T, H, S, generator=generator)
    if mask_shape == "lengths":
        lengths = torch.tensor([S, 1, 3])
        mask = (torch.arange(S) < lengths[:, None])[:, None, None, :]  # [B, 1, 1, S]
    else:
        mask = torch.rand(B, T, 1, S, generator=generator) < 0.5
        keep = torch.randint(S, (B, T, 1, 1), generator=generator)
        mask.scatter_(-1, keep, True)  # [B, T, 1, S]
    return scores, mask


@pytest.mark.parametrize("scale", [0.1, 3.0, 1000.0])
@pytest.mark.parametrize("mask_shape", ["lengths", "per_query"])
@pytest.mark.parametrize("name", list(NORMALISERS))
def test_weights_lie_on_the_simplex_and_vanish_on_padding(name, mask_shape, scale):
    scores, mask = random_case(mask_shape, scale)
    scores.requires_grad_(True)
    torch.manual_seed(0)
    weights = build_normaliser(name)(scores, mask)  # hard: training mode, the noisy path

    assert weights.shape == scores.shape
    assert not weights.isnan().any()
    assert (weights >= 0).all()
    assert torch.allclose(weights.sum(-1), torch.ones(B, T, H), atol=1e-6)
    assert (weights.masked_select(~mask.expand_as(weights)) == 0).all()

    weights.mul(torch.randn_like(weights)).sum().backward()
    assert scores.grad.isfinite().all()
    assert (scores.grad.masked_select(~mask.expand_as(scores)) == 0).all()


def test_every_normaliser_the_config_offers_has_an_implementation_and_no_other():
    offered = typing.get_args(typing.get_type_hints(AttentionConfig)["normaliser"])
    assert sorted(NORMALISERS) == sorted(offered)


@pytest.mark.parametrize("name", ["softmax", "sparsemax", "entmax15"])
def test_padding_changes_nothing_on_real_positions(name):
    scores, mask = random_case("lengths", 3.0)
    weights = build_normaliser(name)(scores, mask)
    for b, length in enumerate(mask.sum(-1).flatten().tolist()):
        alone = build_normaliser(name)(scores[b, ..., :length], torch.ones(length, dtype=bool))
        assert torch.allclose(weights[b, ..., :length], alone, atol=1e-6)


def test_softmax_equals_torch_softmax_without_padding():
    scores = torch.randn(B, T, H, S)
    weights = build_normaliser("softmax")(scores, torch.ones(B, 1, 1, S, dtype=bool))
    assert torch.allclose(weights, torch.softmax(scores, dim=-1))


@pytest.mark.parametrize("name", list(NORMALISERS))
def test_no_mask_means_every_position_is_real(name):
    scores = torch.randn(B, T, H, S)
    normaliser = build_normaliser(name).eval()
    assert torch.equal(normaliser(scores, None), normaliser(scores, torch.ones(S, dtype=bool)))


def sparsemax_reference(z: list[float]) -> list[float]:
    """Martins & Astudillo 2016, sort-based: sort z descending, k(z) = max{k : 1 + k z_(k) >
    sum_{j<=k} z_(j)}, tau = (sum_{j<=k(z)} z_(j) - 1) / k(z), p = max(z - tau, 0)."""
    ordered = sorted(z, reverse=True)
    support = max(k for k in range(1, len(z) + 1) if 1 + k * ordered[k - 1] > sum(ordered[:k]))
    tau = (sum(ordered[:support]) - 1) / support
    return [max(value - tau, 0.0) for value in z]


def test_sparsemax_equals_the_sort_based_formula():
    scores, mask = random_case("per_query", 1.0, seed=1)
    scores = scores.double()
    weights = build_normaliser("sparsemax")(scores, mask)
    rows, masks = scores.reshape(-1, S), mask.expand(B, T, H, S).reshape(-1, S)
    for row, real, got in zip(rows, masks, weights.reshape(-1, S), strict=True):
        expected = torch.zeros(S, dtype=torch.float64)
        expected[real] = torch.tensor(sparsemax_reference(row[real].tolist()), dtype=torch.float64)
        assert torch.allclose(got, expected, atol=1e-12)
    assert (weights[mask.expand_as(weights)] == 0).any()  # the case does exercise sparsity


def normalise(name: str, scores: list[float], mask: list[bool] | None = None) -> torch.Tensor:
    mask = [True] * len(scores) if mask is None else mask
    return build_normaliser(name)(torch.tensor([scores]), torch.tensor([mask]))[0]


def test_sparsemax_gives_exact_zeros_where_theory_says():
    assert normalise("sparsemax", [0.0, 0.0, -5.0]).tolist() == [0.5, 0.5, 0.0]
    # Tied maxima m: tau = m - 1 / 2, so a score more than 1 below m gets exactly 0 ...
    assert normalise("sparsemax", [3.0, 3.0, 1.9]).tolist() == [0.5, 0.5, 0.0]
    # ... and a padded position gets 0 even with the highest raw score.
    assert normalise("sparsemax", [3.0, 3.0, 1.9, 9.0], [True] * 3 + [False]).tolist() == [
        0.5,
        0.5,
        0.0,
        0.0,
    ]


def test_entmax15_is_sparse_and_between_sparsemax_and_softmax():
    weights = normalise("entmax15", [0.0, 0.0, -5.0])
    assert weights[2] == 0
    assert torch.allclose(weights, torch.tensor([0.5, 0.5, 0.0]))

    scores = [0.0, -0.5, -1.5, -5.0]
    support = {name: int((normalise(name, scores) > 0).sum()) for name in NORMALISERS}
    assert support["sparsemax"] < support["entmax15"] < support["softmax"]


def test_hard_in_eval_is_the_argmax_over_real_positions():
    scores, mask = random_case("per_query", 3.0)
    scores = scores.masked_fill(~mask, 100.0)  # padding scores highest of all
    hard = build_normaliser("hard").eval()
    weights = hard(scores, mask)
    expected = scores.masked_fill(~mask, float("-inf")).argmax(-1)
    assert torch.equal(weights, torch.nn.functional.one_hot(expected, S).float())
    assert torch.equal(hard(scores, mask), weights)  # no noise


def test_hard_in_training_is_one_hot_forward_with_gradients_backward():
    scores, mask = random_case("per_query", 1.0)
    scores = scores.masked_fill(~mask, 100.0).requires_grad_(True)
    hard = HardAttention(temperature=0.5)
    weights = hard(scores, mask)
    assert set(weights.unique().tolist()) <= {0.0, 1.0}
    assert (weights.sum(-1) == 1).all()
    assert (weights.masked_select(~mask.expand_as(weights)) == 0).all()

    weights.mul(torch.randn_like(weights)).sum().backward()
    assert scores.grad.isfinite().all() and (scores.grad != 0).any()


def test_hard_training_draws_repeat_with_the_seed_and_vary_without():
    scores, mask = torch.zeros(B, T, H, S), torch.ones(B, 1, 1, S, dtype=bool)
    hard = HardAttention()
    torch.manual_seed(7)
    first = hard(scores, mask)
    torch.manual_seed(7)
    assert torch.equal(hard(scores, mask), first)
    assert not torch.equal(hard(scores, mask), first)


def test_hard_training_samples_follow_the_softmax():
    """Gumbel-max: argmax_j (e_j + g_j) is position j with probability softmax(e)_j."""
    scores = torch.tensor([1.0, 0.0, -1.0, 2.0]).expand(20000, 1, 1, 4)
    torch.manual_seed(0)
    weights = HardAttention()(scores, torch.tensor([True, True, False, True]))
    frequencies = weights.mean(dim=(0, 1, 2))
    expected = torch.softmax(torch.tensor([1.0, 0.0, float("-inf"), 2.0]), dim=-1)
    assert torch.allclose(frequencies, expected, atol=0.02)


def test_annealed_temperature_decays_exponentially_from_start_to_end():
    start, end, total = 2.0, 0.1, 1000
    assert annealed_temperature(0, total, start, end) == start
    assert annealed_temperature(total, total, start, end) == end
    assert annealed_temperature(5 * total, total, start, end) == end
    assert annealed_temperature(total // 2, total, start, end) == pytest.approx(
        math.sqrt(start * end)
    )
    decaying = [annealed_temperature(step, total, start, end) for step in range(0, total, 7)]
    assert all(a > b for a, b in itertools.pairwise(decaying))
    assert decaying[-1] > end
