"""n-gram blocking: the banned tokens equal a naive reading of each history, and greedy, beam
and sampling then never repeat an n-gram while scoring tokens as the model does."""

import itertools

import pytest
import torch
from toy_models import BOS, EOS, eos_biased_model

from nmt.search import beam_search, greedy_search, sample_search
from nmt.search.blocking import merged_bans, repeated_ngrams
from nmt.search.constraints import Constraints


def naive_banned(row: list[int], n: int, vocab: int) -> set[int]:
    if n == 1:
        return set(row)
    prefix = tuple(row[len(row) - n + 1 :])
    return {row[i + n - 1] for i in range(len(row) - n + 1) if tuple(row[i : i + n - 1]) == prefix}


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("length", [0, 1, 2, 5, 9])
def test_the_banned_tokens_are_those_that_would_repeat_an_ngram(n, length):
    history = torch.randint(0, 4, (6, length), generator=torch.Generator().manual_seed(length))
    banned = repeated_ngrams(history, n, vocab=5)
    for row, flags in zip(history.tolist(), banned.tolist(), strict=True):
        assert {token for token, flag in enumerate(flags) if flag} == naive_banned(row, n, 5)


def ngrams(tokens: list[int], n: int) -> list[tuple[int, ...]]:
    return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


@pytest.fixture
def looping_model(tiny_config):
    """An untrained model with no taste for eos: it loops over a few tokens until the limit."""
    model = eos_biased_model(tiny_config)
    with torch.no_grad():
        model.output_layer.bias[EOS] = -10.0
    return model


def source():
    src = torch.randint(4, 50, (5, 6), generator=torch.Generator().manual_seed(2))
    return src, torch.tensor([6, 4, 5, 2, 6]), torch.tensor([20, 14, 18, 9, 20])


@pytest.mark.parametrize("n", [1, 2, 3])
def test_no_search_repeats_an_ngram_and_beam_1_is_still_greedy(looping_model, n):
    src, lengths, limits = source()
    plain = greedy_search(looping_model, src, lengths, BOS, EOS, limits)
    assert any(len(set(ngrams(h.tokens, n))) < len(ngrams(h.tokens, n)) for h in plain)
    greedy = greedy_search(looping_model, src, lengths, BOS, EOS, limits, no_repeat_ngram=n)
    beam = beam_search(
        looping_model, src, lengths, BOS, EOS, limits, 4, 0.6, nbest=2, no_repeat_ngram=n
    )
    one = beam_search(looping_model, src, lengths, BOS, EOS, limits, 1, 0.6, no_repeat_ngram=n)
    drawn = sample_search(
        looping_model,
        src,
        lengths,
        BOS,
        EOS,
        limits,
        2,
        seeds=range(len(src)),
        no_repeat_ngram=n,
    )
    for hypothesis in itertools.chain(greedy, *beam, *drawn):
        assert len(set(ngrams(hypothesis.tokens, n))) == len(ngrams(hypothesis.tokens, n))
    for expected, (found,) in zip(greedy, one, strict=True):
        assert found.tokens == expected.tokens and found.score == expected.score


def test_scores_stay_the_models_log_probabilities(looping_model):
    src, lengths, limits = source()
    for hypothesis, i in zip(
        greedy_search(looping_model, src, lengths, BOS, EOS, limits, no_repeat_ngram=2),
        range(5),
        strict=True,
    ):
        ended = hypothesis.ended
        target = torch.tensor([[BOS, *hypothesis.tokens, *([EOS] if ended else [])]])
        logits = looping_model.teacher_forcing(
            src[i : i + 1, : lengths[i]], lengths[i : i + 1], target[:, :-1]
        )[0]
        expected = logits.log_softmax(-1).gather(2, target[:, 1:, None]).sum().item()
        assert hypothesis.score == pytest.approx(expected, abs=1e-4)


@pytest.mark.parametrize("n", [1, 2])
def test_a_forced_prefix_is_written_even_where_it_repeats_an_ngram(looping_model, n):
    """The prefix [7, 7, 9, 7, 7, 9] repeats 1- and 2-grams: blocking gives way to it, and
    only after it bans the repeats (id 0 in the middle or an empty beam was the bug)."""
    src, lengths, limits = source()
    prefix = (7, 7, 9, 7, 7, 9)
    constraints = [Constraints(prefix=prefix)] * 5
    greedy = greedy_search(
        looping_model, src, lengths, BOS, EOS, limits, no_repeat_ngram=n, constraints=constraints
    )
    beam = beam_search(
        looping_model,
        src,
        lengths,
        BOS,
        EOS,
        limits,
        3,
        0.6,
        nbest=2,
        no_repeat_ngram=n,
        constraints=constraints,
    )
    for hypothesis in itertools.chain(greedy, *beam):
        assert tuple(hypothesis.tokens[: len(prefix)]) == prefix
        rest = list(prefix[-(n - 1) :] if n > 1 else ()) + hypothesis.tokens[len(prefix) :]
        seen = set(ngrams(list(prefix), n))
        assert not seen & set(ngrams(rest, n)) and len(set(ngrams(rest, n))) == len(ngrams(rest, n))
    assert all(len(hypotheses) == 2 for hypotheses in beam)


def test_a_row_left_with_no_token_to_write_is_an_error_not_token_0():
    everything = torch.ones(2, 5, dtype=torch.bool)
    with pytest.raises(ValueError, match="no token left"):
        merged_bans(everything, torch.zeros(2, 0, dtype=torch.long), 0, 5)
