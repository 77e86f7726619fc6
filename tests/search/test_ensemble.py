import pytest
import torch
from toy_models import BOS, EOS, MarkovModel, eos_biased_model, source

from conftest import tiny_model
from nmt.search import greedy_search
from nmt.search.beam import beam_search
from nmt.search.ensemble import Ensemble


def test_an_ensemble_of_a_model_with_itself_decodes_like_the_model(tiny_config):
    model = eos_biased_model(tiny_config)
    pair = Ensemble([model, model]).eval()
    src, lengths = source([6, 3, 8])
    limits = torch.tensor([8, 5, 10])
    for search in (
        lambda m: [[h] for h in greedy_search(m, src, lengths, BOS, EOS, limits)],
        lambda m: beam_search(m, src, lengths, BOS, EOS, limits, beam=4, alpha=0.6, nbest=2),
    ):
        for alone, together in zip(search(model), search(pair), strict=True):
            assert [h.tokens for h in together] == [h.tokens for h in alone]
            for a, b in zip(alone, together, strict=True):
                assert b.score == pytest.approx(a.score, abs=1e-4)
                assert torch.allclose(b.attention, a.attention)


def test_ensemble_averages_log_probabilities_and_head_averaged_attention(tiny_config):
    first, second = tiny_model(tiny_config, seed=1).eval(), tiny_model(tiny_config, seed=2).eval()
    src, lengths = source([6, 3])
    prev = torch.tensor([BOS, BOS])
    ensemble = Ensemble([first, second])
    log_probs, state, weights = ensemble.step(
        ensemble.init_state(ensemble.encode(src, lengths)), prev
    )
    expected = [
        m.step(m.init_state(m.encode(src, lengths)), prev)[0].log_softmax(-1)
        for m in (first, second)
    ]
    assert torch.allclose(log_probs, (expected[0] + expected[1]) / 2, atol=1e-6)
    assert weights.shape == (2, 1, 6)
    assert torch.allclose(weights.sum(-1), torch.ones(2, 1))
    assert (weights[1, 0, 3:] == 0).all()
    assert len(state.select(torch.tensor([1, 1, 0])).members) == 2


def test_members_with_different_head_counts_give_one_averaged_head():
    table = torch.rand(6, 6).softmax(-1)
    ensemble = Ensemble([MarkovModel(table, heads=1), MarkovModel(table, heads=4)])
    src, lengths = source([5, 2])
    (hypothesis, _) = greedy_search(ensemble, src, lengths, BOS, EOS, torch.tensor([3, 3]))
    assert hypothesis.attention.shape[1:] == (1, 5)
