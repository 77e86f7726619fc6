"""What search computes per step: a sentence is searched the same alone or in a batch whose
other sentences end sooner or later (finished rows leave the batch), attention weights that
nobody keeps change nothing, and a shortlist of target ids confines the output to them."""

import pytest
import torch
from test_transformer_search import sources, transformer_config
from toy_models import BOS, EOS, eos_biased_model

from nmt.search import greedy_search
from nmt.search.beam import beam_search
from nmt.search.constraints import Constraints
from nmt.search.ensemble import Ensemble
from nmt.search.hypothesis import Columns
from nmt.search.sampling import sample_search


@pytest.fixture(params=["rnnsearch", "transformer", "ensemble"])
def model(request, tiny_config):
    transformer = eos_biased_model(transformer_config(tiny_config), seed=1)
    if request.param == "transformer":
        return transformer
    rnnsearch = eos_biased_model(tiny_config, seed=2)
    return rnnsearch if request.param == "rnnsearch" else Ensemble([rnnsearch, transformer]).eval()


def search(model, src, lengths, limits, beam, **options):
    """The n-best lists of beam search (beam > 1) or greedy search (beam 1)."""
    if beam == 1:
        found = greedy_search(model, src, lengths, BOS, EOS, limits, **options)
        return [[hypothesis] for hypothesis in found]
    return beam_search(model, src, lengths, BOS, EOS, limits, beam, 1.0, nbest=2, **options)


def same(found, expected):
    for mine, theirs in zip(found, expected, strict=True):
        assert [h.tokens for h in mine] == [h.tokens for h in theirs]
        assert [h.steps for h in mine] == [h.steps for h in theirs]
        assert [h.score for h in mine] == pytest.approx([h.score for h in theirs], abs=1e-5)


@pytest.mark.parametrize("beam", [1, 4])
def test_a_batch_searches_each_sentence_as_it_would_alone(model, beam):
    src, lengths, limits = sources()
    batched = search(model, src, lengths, limits, beam)
    steps = sorted({h.steps for hypotheses in batched for h in hypotheses})
    assert len(steps) > 2  # sentences end at different steps, some before others
    for row in range(src.size(0)):
        alone = search(
            model,
            src[row : row + 1, : lengths[row]],
            lengths[row : row + 1],
            limits[row : row + 1],
            beam,
        )
        same([batched[row]], alone)


@pytest.mark.parametrize("beam", [1, 4])
def test_unkept_attention_changes_no_output(model, beam):
    src, lengths, limits = sources()
    kept = search(model, src, lengths, limits, beam)
    unkept = search(model, src, lengths, limits, beam, attention=False)
    same(unkept, kept)
    assert all(h.attention is not None for hypotheses in kept for h in hypotheses)
    assert all(h.attention is None for hypotheses in unkept for h in hypotheses)


@pytest.mark.parametrize("beam", [1, 4])
def test_a_shortlist_confines_the_output_and_a_full_one_changes_nothing(model, beam):
    src, lengths, limits = sources()
    everything = Columns(torch.arange(50), 50)
    same(
        search(model, src, lengths, limits, beam, shortlist=everything),
        search(model, src, lengths, limits, beam),
    )
    allowed = Columns(torch.tensor([EOS, 5, 9, 17, 30, 41]), 50)
    found = search(model, src, lengths, limits, beam, shortlist=allowed)
    written = {token for hypotheses in found for h in hypotheses for token in h.tokens}
    assert written and written <= set(allowed.ids.tolist())


def test_samples_stay_in_the_shortlist(tiny_config):
    model = eos_biased_model(tiny_config)
    src, lengths, limits = sources()
    allowed = Columns(torch.tensor([EOS, 6, 7, 8]), 50)
    found = sample_search(
        model, src, lengths, BOS, EOS, limits, 3, seeds=range(len(src)), shortlist=allowed
    )
    assert {t for draws in found for h in draws for t in h.tokens} <= {6, 7, 8}


@pytest.mark.parametrize("beam", [1, 4])
def test_constraints_and_blocking_hold_within_a_shortlist(model, beam):
    """Prefixes and excluded phrases widen the shortlisted logits to every id; n-gram
    blocking narrows its bans to the shortlist's columns."""
    src, lengths, limits = sources()
    allowed = Columns(torch.tensor([EOS, 5, 9, 17, 30, 41]), 50)
    guides = [Constraints(prefix=(9, 17)), Constraints(exclude=((5,),)), None, None]
    found = search(model, src, lengths, limits, beam, shortlist=allowed, constraints=guides)
    assert all(h.tokens[:2] == [9, 17] for h in found[0])
    assert all(5 not in h.tokens for h in found[1])
    assert {t for hypotheses in found for h in hypotheses for t in h.tokens} <= {5, 9, 17, 30, 41}
    blocked = search(model, src, lengths, limits, beam, shortlist=allowed, no_repeat_ngram=1)
    for hypotheses in blocked:
        assert all(len(set(h.tokens)) == len(h.tokens) for h in hypotheses)
