"""Lexical constraints and prefixes in search: every included phrase appears and no excluded
one at every beam size down to 1, an ensemble included; no constraints is plain search bit for
bit; a prefix starts every output; bank allocation and progress follow Post & Vilar."""

import pytest
import torch
from toy_models import BOS, EOS, eos_biased_model

from nmt.search import Ensemble, beam_search, greedy_search, sample_search
from nmt.search.constraints import Constraints, Progress, bank_sizes, satisfies


def source():
    src = torch.randint(4, 50, (5, 6), generator=torch.Generator().manual_seed(3))
    return src, torch.tensor([6, 4, 5, 2, 6]), torch.tensor([20, 14, 18, 12, 20])


def test_satisfies_reads_phrases_as_contiguous_runs():
    constraints = Constraints(include=((5, 6), (9,)), exclude=((7, 8),))
    assert satisfies([1, 5, 6, 2, 9], constraints)
    assert not satisfies([1, 5, 2, 6, 9], constraints)  # 5 6 not adjacent
    assert not satisfies([9, 5, 6, 7, 8], constraints)  # the excluded run
    assert satisfies([9, 5, 6, 8, 7], constraints)


def test_progress_meets_phrases_in_any_order_and_starts_a_broken_phrase_over():
    progress = Progress(((5, 6, 7), (9,)))
    assert progress.advancing() == [5, 9] and progress.unmet_tokens == 4
    progress = progress.advance(5).advance(6)
    assert progress.advancing() == [7] and progress.met_tokens == 2
    broken = progress.advance(5)  # 5 6 5: the phrase starts over from this 5
    assert broken.met_tokens == 1 and broken.advancing() == [6]
    done = progress.advance(7).advance(1).advance(9)
    assert done.complete and done.unmet_tokens == 0 and done.advancing() == []
    assert Progress(()).complete


@pytest.mark.parametrize(
    ("slots", "counts", "sizes"),
    [
        (5, [9, 9, 9], [1, 1, 3]),  # even shares, the remainder to the top bank
        (5, [9, 9, 0], [1, 4, 0]),  # an empty top bank gives its slots to the one below
        (5, [2, 0, 0], [2, 0, 3]),  # what no bank can use wraps to the top and stays unused
        (1, [4, 3, 0, 0], [0, 1, 0, 0]),  # beam 1: the most advanced bank with candidates
    ],
)
def test_bank_sizes_follow_post_and_vilar(slots, counts, sizes):
    assert bank_sizes(slots, counts) == sizes


def draw_constraints(hypotheses, seed):
    """Phrases taken from other sentences' outputs (unlikely here) and from a sentence's own
    output (likely: to exclude), as tests of constrained decoding draw them."""
    rng = torch.Generator().manual_seed(seed)
    outputs = [h.tokens for h in hypotheses]
    constraints = []
    for index in range(len(outputs)):
        other = outputs[(index + 1) % len(outputs)] or [7, 8]
        start = int(torch.randint(0, max(1, len(other) - 1), (1,), generator=rng))
        own = outputs[index]
        include = (tuple(other[start : start + 2]), (11,))
        exclude = ((own[0],),) if own and own[0] not in (11, *other[start : start + 2]) else ()
        constraints.append(Constraints(include=include, exclude=exclude))
    return constraints


@pytest.mark.parametrize("beam", [1, 2, 5])
@pytest.mark.parametrize("members", [1, 2], ids=["one model", "an ensemble"])
def test_every_included_phrase_appears_and_no_excluded_one(tiny_config, beam, members):
    models = [eos_biased_model(tiny_config, seed=seed) for seed in range(members)]
    model = models[0] if members == 1 else Ensemble(models).eval()
    src, lengths, limits = source()
    plain = greedy_search(model, src, lengths, BOS, EOS, limits)
    constraints = draw_constraints(plain, seed=beam)
    assert not all(satisfies(h.tokens, c) for h, c in zip(plain, constraints, strict=True))
    found = beam_search(
        model, src, lengths, BOS, EOS, limits, beam, 0.6, nbest=1, constraints=constraints
    )
    for (best,), wanted, limit in zip(found, constraints, limits.tolist(), strict=True):
        assert satisfies(best.tokens, wanted), (best.tokens, wanted)
        assert len(best.tokens) <= limit


def test_a_beam_of_one_with_constraints_is_greedy_where_they_are_already_met(tiny_config):
    model = eos_biased_model(tiny_config)
    src, lengths, limits = source()
    plain = greedy_search(model, src, lengths, BOS, EOS, limits)
    own = [Constraints(include=(tuple(h.tokens[:1]),)) if h.tokens else None for h in plain]
    found = beam_search(model, src, lengths, BOS, EOS, limits, 1, 0.6, constraints=own)
    assert [h.tokens for (h,) in found] == [h.tokens for h in plain]


def test_phrases_that_fill_the_length_limit_are_written_and_longer_ones_rank_by_satisfaction(
    tiny_config,
):
    model = eos_biased_model(tiny_config)
    src, lengths = source()[:2]
    limits = torch.tensor([4, 4, 4, 4, 3])
    tight = [Constraints(include=((20, 21), (22, 23)))] * 5
    found = beam_search(model, src, lengths, BOS, EOS, limits, 3, 0.6, constraints=tight)
    for (best,), limit in zip(found[:4], limits.tolist()[:4], strict=True):
        assert satisfies(best.tokens, tight[0]) and len(best.tokens) == limit
    assert not satisfies(found[4][0].tokens, tight[0])  # 4 tokens cannot fit in 3


def test_no_constraints_is_plain_beam_search_bit_for_bit(tiny_config):
    model = eos_biased_model(tiny_config)
    src, lengths, limits = source()
    plain = beam_search(model, src, lengths, BOS, EOS, limits, 4, 0.6, nbest=3)
    for constraints in (None, [None] * 5, [Constraints()] * 5):
        again = beam_search(
            model, src, lengths, BOS, EOS, limits, 4, 0.6, nbest=3, constraints=constraints
        )
        for ours, theirs in zip(again, plain, strict=True):
            assert [(h.tokens, h.score) for h in ours] == [(h.tokens, h.score) for h in theirs]
            for a, b in zip(ours, theirs, strict=True):
                assert torch.equal(a.attention, b.attention)


def test_unconstrained_sentences_decode_as_without_their_constrained_neighbours(tiny_config):
    model = eos_biased_model(tiny_config)
    src, lengths, limits = source()
    plain = beam_search(model, src, lengths, BOS, EOS, limits, 4, 0.6, nbest=2)
    mixed = [None, Constraints(include=((30, 31),)), None, Constraints(exclude=((9,),)), None]
    found = beam_search(model, src, lengths, BOS, EOS, limits, 4, 0.6, nbest=2, constraints=mixed)
    for index in (0, 2, 4):
        assert [(h.tokens, h.score) for h in found[index]] == [
            (h.tokens, h.score) for h in plain[index]
        ]
    assert satisfies(found[1][0].tokens, mixed[1])


@pytest.mark.parametrize("search", ["greedy", "beam", "sample"])
def test_a_prefix_starts_the_output_and_the_scores_stay_the_models(tiny_config, search):
    model = eos_biased_model(tiny_config)
    src, lengths, limits = source()
    prefixes = [(12, 13), (), (14,), (15, 16, 17), (12,)]
    constraints = [Constraints(prefix=prefix) for prefix in prefixes]
    run = {
        "greedy": lambda c: [[h] for h in greedy_search(model, *common, constraints=c)],
        "beam": lambda c: beam_search(model, *common, 3, 0.6, nbest=2, constraints=c),
        "sample": lambda c: sample_search(model, *common, 2, seeds=[1] * len(src), constraints=c),
    }[search]
    common = (src, lengths, BOS, EOS, limits)
    found = run(constraints)
    for hypotheses, prefix in zip(found, prefixes, strict=True):
        for hypothesis in hypotheses:
            assert tuple(hypothesis.tokens[: len(prefix)]) == prefix
    # an empty prefix is plain search
    assert [[h.tokens for h in hs] for hs in run([Constraints()] * 5)] == [
        [h.tokens for h in hs] for hs in run(None)
    ]
    # the sentence without a prefix decodes as alone
    assert [h.tokens for h in found[1]] == [h.tokens for h in run(None)[1]]


def test_included_phrases_are_refused_by_greedy_and_sampling(tiny_config):
    model = eos_biased_model(tiny_config)
    src, lengths, limits = source()
    with pytest.raises(ValueError, match="need beam search"):
        greedy_search(
            model, src, lengths, BOS, EOS, limits, constraints=[Constraints(include=((5,),))] * 5
        )


def test_a_multi_token_excluded_phrase_is_blocked_only_as_a_whole(tiny_config):
    """Exclude the model's own bigram: its first token may still appear, never followed by
    the second."""
    model = eos_biased_model(tiny_config)
    src, lengths, limits = source()
    plain = greedy_search(model, src, lengths, BOS, EOS, limits)
    bigrams = [tuple(h.tokens[:2]) if len(h.tokens) >= 2 else (7, 8) for h in plain]
    constraints = [Constraints(exclude=(bigram,)) for bigram in bigrams]
    greedy = greedy_search(model, src, lengths, BOS, EOS, limits, constraints=constraints)
    for before, after, bigram in zip(plain, greedy, bigrams, strict=True):
        if tuple(before.tokens[:2]) == bigram:  # the same first token, another second one
            assert after.tokens[0] == bigram[0] and after.tokens[1:2] != [bigram[1]]
    assert sum(tuple(h.tokens[:2]) == b for h, b in zip(plain, bigrams, strict=True)) >= 3
    for found in (
        greedy,
        [
            hs[0]
            for hs in beam_search(
                model, src, lengths, BOS, EOS, limits, 3, 0.6, constraints=constraints
            )
        ],
    ):
        for hypothesis, wanted in zip(found, constraints, strict=True):
            assert satisfies(hypothesis.tokens, wanted)
