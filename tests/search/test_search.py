"""Search properties: beam 1 is greedy, a wide beam is exhaustive, sampling is reproducible."""

from __future__ import annotations

import itertools

import pytest
import torch
from toy_models import BOS, EOS, MarkovModel, eos_biased_model, markov_table, source

from nmt.search import greedy_search, length_penalty
from nmt.search.beam import beam_search
from nmt.search.sampling import sample_search, truncate


def test_beam_finds_a_better_output_than_greedy():
    # bos -> A (0.6) or B (0.4); A -> eos (0.4), A or B (0.3 each); B -> eos (1.0).
    # Greedy takes A then eos (0.24); B then eos (0.4) is better.
    model = MarkovModel(
        markov_table({BOS: {4: 0.6, 5: 0.4}, 4: {EOS: 0.4, 4: 0.3, 5: 0.3}, 5: {EOS: 1.0}})
    )
    src, lengths = source([3])
    limits = torch.tensor([5])
    greedy = greedy_search(model, src, lengths, BOS, EOS, limits)[0]
    (best,) = beam_search(model, src, lengths, BOS, EOS, limits, beam=2, alpha=0.0)[0]
    assert greedy.tokens == [4] and best.tokens == [5]
    assert best.score > greedy.score
    assert best.score == pytest.approx(torch.tensor(0.4).log().item(), abs=1e-4)


# eos at once (0.5) beats A (0.45) at first, but A A A A (0.45 * 0.95^3) wins once normalised.
LONG_WINS_LATE = markov_table({BOS: {EOS: 0.5, 4: 0.45}, 4: {4: 0.95, EOS: 0.04}}, vocab=5)


def random_table(seed: int, vocab: int = 5) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return (4 * torch.rand(vocab, vocab, generator=generator)).softmax(-1)


@pytest.mark.parametrize(
    "table",
    [LONG_WINS_LATE, random_table(0), random_table(1), random_table(2)],
    ids=["long-wins-late", "random-0", "random-1", "random-2"],
)
def test_a_beam_holding_every_hypothesis_finds_the_exhaustive_optimum(table):
    """Early stopping with length normalisation must never cut off the best hypothesis."""
    vocab, limit, alpha = 5, 4, 2.0
    model = MarkovModel(table)

    def normalised(tokens):
        score = sum(model.log_table[a, b].item() for a, b in itertools.pairwise([BOS, *tokens]))
        return score / length_penalty(len(tokens), alpha)

    others = [t for t in range(vocab) if t != EOS]
    candidates = [(*p, EOS) for n in range(limit) for p in itertools.product(others, repeat=n)]
    candidates += list(itertools.product(others, repeat=limit))
    src, lengths = source([2])
    (best, *_) = beam_search(
        model, src, lengths, BOS, EOS, torch.tensor([limit]), len(candidates), alpha
    )[0]
    assert best.normalised_score(alpha) == pytest.approx(max(map(normalised, candidates)), abs=1e-4)


def test_beam_of_one_is_greedy_search_exactly(tiny_config):
    model = eos_biased_model(tiny_config)
    src = torch.randint(4, 50, (6, 7), generator=torch.Generator().manual_seed(1))
    lengths = torch.tensor([7, 3, 5, 7, 1, 4])
    limits = torch.tensor([9, 2, 6, 12, 3, 7])
    greedy = greedy_search(model, src, lengths, BOS, EOS, limits)
    beam = beam_search(model, src, lengths, BOS, EOS, limits, beam=1, alpha=0.6)
    lengths_found = {len(h.tokens) for h in greedy}
    assert len(lengths_found) >= 3  # the check covers several stopping points
    for expected, (found,) in zip(greedy, beam, strict=True):
        assert found.tokens == expected.tokens
        assert found.score == expected.score
        assert torch.equal(found.attention, expected.attention)


def test_nbest_is_distinct_and_sorted_by_normalised_score(tiny_config):
    model = eos_biased_model(tiny_config)
    src, lengths = source([6, 3, 8])
    limits = torch.tensor([3, 1, 2])  # short enough to cut some hypotheses, different per sentence
    limits_reached = set()
    for alpha in (0.0, 0.6, 1.5):
        nbest = beam_search(model, src, lengths, BOS, EOS, limits, 6, alpha, nbest=4)
        for sentence, (hypotheses, limit) in enumerate(zip(nbest, limits.tolist(), strict=True)):
            scores = [h.normalised_score(alpha) for h in hypotheses]
            assert len(hypotheses) == 4 and scores == sorted(scores, reverse=True)
            assert len({tuple(h.tokens) for h in hypotheses}) == 4
            assert all(len(h.tokens) <= limit for h in hypotheses)
            limits_reached |= {sentence for h in hypotheses if len(h.tokens) == limit}
    assert len(limits_reached) >= 2  # the limit check binds, on sentences with different limits


def test_sampling_is_reproducible_and_top_k_1_is_greedy(tiny_config):
    model = eos_biased_model(tiny_config)
    src, lengths = source([6, 3, 8])
    limits = torch.tensor([8, 5, 10])

    def draw(seed, **options):
        seeds = [seed, seed + 10, seed + 20]
        return sample_search(model, src, lengths, BOS, EOS, limits, 2, seeds=seeds, **options)

    first, again, other = draw(1), draw(1), draw(2)
    tokens = [[h.tokens for h in group] for group in first]
    assert tokens == [[h.tokens for h in group] for group in again]
    assert tokens != [[h.tokens for h in group] for group in other]
    greedy = greedy_search(model, src, lengths, BOS, EOS, limits)
    for expected, samples in zip(greedy, draw(3, top_k=1, temperature=0.7), strict=True):
        assert [h.tokens for h in samples] == [expected.tokens] * 2
        assert samples[0].score == pytest.approx(expected.score, abs=1e-5)  # batch of 6, not 3


def test_truncation_keeps_top_k_and_the_smallest_nucleus():
    log_probs = torch.tensor([[0.5, 0.3, 0.15, 0.05]]).log()
    kept = lambda **options: truncate(log_probs, **options).isfinite()[0].tolist()  # noqa: E731
    assert kept(temperature=1.0, top_k=2, top_p=1.0) == [True, True, False, False]
    assert kept(temperature=1.0, top_k=0, top_p=0.5) == [True, False, False, False]
    assert kept(temperature=1.0, top_k=0, top_p=0.7) == [True, True, False, False]
    assert kept(temperature=1.0, top_k=0, top_p=0.1) == [True, False, False, False]
    flatter = truncate(log_probs, temperature=2.0, top_k=0, top_p=1.0).softmax(-1)
    assert flatter[0, 0] < 0.5 and flatter[0, 3] > 0.05
