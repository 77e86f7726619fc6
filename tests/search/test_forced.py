"""Forced decoding scores a target exactly as search scored it: a model's own greedy and beam
outputs, and an ensemble's, get back the scores their search reported."""

import pytest
import torch
from toy_models import BOS, EOS, eos_biased_model

from conftest import tiny_model
from nmt.data.batching import pad
from nmt.search import Ensemble, beam_search, greedy_search
from nmt.search.forced import forced_log_probs


def source():
    src = torch.randint(4, 50, (6, 7), generator=torch.Generator().manual_seed(4))
    return src, torch.tensor([7, 3, 5, 7, 1, 4]), torch.tensor([9, 6, 8, 12, 3, 7])


def forced_totals(model, src, lengths, hypotheses):
    """Each hypothesis's forced score: its tokens, then eos if search ended it with one."""
    targets = [h.tokens + ([EOS] if h.ended else []) for h in hypotheses]
    found = forced_log_probs(model, src, lengths, pad(targets, 0), BOS)
    return [sum(row[: len(t)]) for row, t in zip(found.tolist(), targets, strict=True)]


@pytest.mark.parametrize("members", [1, 2], ids=["one model", "an ensemble of two"])
def test_forced_scores_equal_the_scores_search_reported(tiny_config, members):
    models = [eos_biased_model(tiny_config, seed=seed) for seed in range(members)]
    model = models[0] if members == 1 else Ensemble(models).eval()
    src, lengths, limits = source()
    greedy = greedy_search(model, src, lengths, BOS, EOS, limits)
    assert forced_totals(model, src, lengths, greedy) == pytest.approx(
        [h.score for h in greedy], abs=1e-4
    )
    beam = beam_search(model, src, lengths, BOS, EOS, limits, beam=3, alpha=0.6, nbest=3)
    for rank in range(3):
        rows = [hypotheses[rank] for hypotheses in beam]
        assert forced_totals(model, src, lengths, rows) == pytest.approx(
            [h.score for h in rows], abs=1e-4
        )


def test_an_ensemble_scores_the_normalised_mean_of_its_members(tiny_config):
    first, second = tiny_model(tiny_config, seed=1).eval(), tiny_model(tiny_config, seed=2).eval()
    src, lengths, _ = source()
    targets = torch.randint(4, 50, (6, 5), generator=torch.Generator().manual_seed(9))
    pair = forced_log_probs(Ensemble([first, second]), src, lengths, targets, BOS)
    tgt_in = torch.cat([torch.full((6, 1), BOS), targets[:, :-1]], 1)
    members = [m.teacher_forcing(src, lengths, tgt_in)[0].log_softmax(-1) for m in (first, second)]
    expected = ((members[0] + members[1]) / 2).log_softmax(-1).gather(2, targets[..., None])
    torch.testing.assert_close(pair, expected.squeeze(2), atol=1e-5, rtol=0)
