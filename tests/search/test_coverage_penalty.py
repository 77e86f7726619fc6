"""GNMT's coverage penalty in beam search (the penalty itself: tests/model/test_coverage.py)."""

import math

import pytest
import torch
from toy_models import BOS, EOS, MarkovModel, eos_biased_model, markov_table, source

from nmt.search.beam import beam_search


def test_the_penalty_picks_the_hypothesis_that_covers_the_source():
    """Attention is uniform over 4 source words, so a hypothesis of n steps gives each n / 4.
    Ending at once is the likeliest; with the penalty, the first that covers every word wins:
    [eos] -0.51 + 4 log 0.25 = -6.06; [4, 4, eos] -2.30 + 4 log 0.75 = -3.45;
    [4, 4, 4, eos] -3.00 + 0; [4, 4, 4, 4, eos] -3.69 + 0. (Beam 8: room for all of them
    beside the unlikely tokens, which finish and take slots too.)"""
    model = MarkovModel(markov_table({BOS: {EOS: 0.6, 4: 0.4}, 4: {4: 0.5, EOS: 0.5}}))
    src, lengths = source([4])
    limits = torch.tensor([8])
    (plain,) = beam_search(model, src, lengths, BOS, EOS, limits, beam=8, alpha=0.0)
    (covered,) = beam_search(
        model, src, lengths, BOS, EOS, limits, beam=8, alpha=0.0, nbest=3, coverage_penalty=1.0
    )
    assert plain[0].tokens == []
    assert [h.tokens for h in covered] == [[4, 4, 4], [4, 4], [4, 4, 4, 4]]
    assert [h.normalised_score(0.0, 1.0) for h in covered] == pytest.approx(
        [-3.0, -3.45, -3.69], abs=0.01
    )


def hand_score(model, src, length, hypothesis, alpha, beta):
    """A hypothesis's penalised score from a teacher-forced pass: its log-probability (eos
    included when it ended) over GNMT's length penalty, plus beta * sum over source words of
    log min(attention received, 1), heads averaged."""
    target = [BOS, *hypothesis.tokens, *([EOS] if hypothesis.ended else [])]
    tgt_in, tgt_out = torch.tensor([target[:-1]]), torch.tensor([target[1:]])
    with torch.no_grad():
        logits, weights = model.teacher_forcing(src[None, :length], torch.tensor([length]), tgt_in)
    log_prob = logits.log_softmax(-1).gather(2, tgt_out[..., None]).sum().item()
    received = weights[0].mean(1).sum(0)  # [S]
    coverage = sum(math.log(min(max(float(r), 1e-38), 1.0)) for r in received)
    return log_prob / ((5 + len(target) - 1) / 6) ** alpha + beta * coverage


def test_the_nbest_come_ranked_by_the_penalised_score(tiny_config):
    """Each sentence's n-best in the order of a penalised score computed here from a
    teacher-forced pass, and the penalty reorders some of them against the plain ranking."""
    model = eos_biased_model(tiny_config)
    src, lengths = source([3, 7, 5, 2])
    limits = torch.tensor([6, 12, 9, 5])
    found = beam_search(
        model, src, lengths, BOS, EOS, limits, beam=4, alpha=0.6, nbest=4, coverage_penalty=0.4
    )
    reordered = False
    for row, hypotheses in enumerate(found):
        scores = [hand_score(model, src[row], int(lengths[row]), h, 0.6, 0.4) for h in hypotheses]
        assert [h.normalised_score(0.6, 0.4) for h in hypotheses] == pytest.approx(scores, abs=1e-4)
        assert scores == sorted(scores, reverse=True)
        plain = [hand_score(model, src[row], int(lengths[row]), h, 0.6, 0.0) for h in hypotheses]
        reordered |= plain != sorted(plain, reverse=True)
    assert reordered
    plain = beam_search(model, src, lengths, BOS, EOS, limits, beam=4, alpha=0.6, nbest=4)
    zero = beam_search(
        model, src, lengths, BOS, EOS, limits, beam=4, alpha=0.6, nbest=4, coverage_penalty=0.0
    )
    assert [[h.tokens for h in s] for s in plain] == [[h.tokens for h in s] for s in zero]
