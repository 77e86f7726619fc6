"""The Transformer under every search: its cached state follows beam back-pointers, sampling
and n-best run unchanged, and it ensembles with an RNNsearch sharing its vocabulary."""

import dataclasses

import torch

from conftest import tiny_model
from nmt.config import AttentionConfig, DecoderConfig, EncoderConfig
from nmt.data.batching import pad
from nmt.search import greedy_search
from nmt.search.beam import beam_search
from nmt.search.ensemble import Ensemble
from nmt.search.sampling import sample_search

BOS, EOS = 2, 3


def transformer_config(tiny_config):
    model = dataclasses.replace(
        tiny_config.model,
        encoder=EncoderConfig(type="self_attention", emb_dim=16, layers=2, heads=2, ff_dim=32),
        decoder=DecoderConfig(type="transformer", emb_dim=16, layers=2, heads=2, ff_dim=32),
        attention=AttentionConfig(type="multihead", attn_dim=16, heads=2, kv="separate"),
    )
    return dataclasses.replace(tiny_config, model=model)


def confident(model):
    """Larger output weights and a taste for eos: sentences end at different lengths."""
    with torch.no_grad():
        model.output_layer.weight *= 5
        model.output_layer.bias[EOS] = 0.9
    return model.eval()


def sources():
    generator = torch.Generator().manual_seed(7)
    lengths = [7, 3, 5, 1]
    rows = [torch.randint(4, 50, (n,), generator=generator).tolist() for n in lengths]
    return pad(rows, 0), torch.tensor(lengths), torch.tensor([9, 4, 7, 3])


def rescored(model, src, lengths, tokens, ended: bool) -> float:
    """The log-probability of tokens (and eos if `ended`) after bos, teacher-forced."""
    target = torch.tensor([[BOS, *tokens, *([EOS] if ended else [])]])
    logits = model.teacher_forcing(src, lengths, target[:, :-1])[0]
    return logits.log_softmax(-1).gather(2, target[:, 1:, None]).sum().item()


def test_beam_hypotheses_score_what_teacher_forcing_gives_them(tiny_config):
    model = confident(tiny_model(transformer_config(tiny_config)))
    src, lengths, limits = sources()
    nbest = beam_search(model, src, lengths, BOS, EOS, limits, beam=4, alpha=0.6, nbest=3)
    ended = 0
    for row, hypotheses in enumerate(nbest):
        assert len({tuple(h.tokens) for h in hypotheses}) == 3
        one = slice(row, row + 1)
        for hypothesis in hypotheses:
            by_eos = len(hypothesis.tokens) < limits[row]  # else cut at the limit, eos unscored
            expected = rescored(
                model, src[one, : lengths[row]], lengths[one], hypothesis.tokens, by_eos
            )
            assert abs(hypothesis.score - expected) < 1e-4
            ended += by_eos
    assert ended >= 1


def test_beam_of_one_and_top_1_sampling_are_greedy(tiny_config):
    model = confident(tiny_model(transformer_config(tiny_config)))
    src, lengths, limits = sources()
    greedy = greedy_search(model, src, lengths, BOS, EOS, limits)
    beam = beam_search(model, src, lengths, BOS, EOS, limits, beam=1, alpha=0.6)
    samples = sample_search(model, src, lengths, BOS, EOS, limits, 2, top_k=1, seeds=[0] * len(src))
    assert len({len(h.tokens) for h in greedy}) >= 2
    for expected, (found,), drawn in zip(greedy, beam, samples, strict=True):
        assert found.tokens == expected.tokens and torch.equal(found.attention, expected.attention)
        assert [h.tokens for h in drawn] == [expected.tokens] * 2


def test_a_transformer_and_an_rnnsearch_ensemble(tiny_config):
    transformer = confident(tiny_model(transformer_config(tiny_config), seed=1))
    rnnsearch = confident(tiny_model(tiny_config, seed=2))
    ensemble = Ensemble([transformer, rnnsearch]).eval()
    src, lengths, limits = sources()
    for hypotheses in beam_search(ensemble, src, lengths, BOS, EOS, limits, 3, 0.6, nbest=2):
        for hypothesis in hypotheses:
            assert hypothesis.attention.shape[1] == 1  # one head: the members' head averages
            assert torch.allclose(hypothesis.attention.sum(-1), torch.ones(1))
    # the ensemble's step is the normalised mean of the members' log-probabilities
    state = ensemble.init_state(ensemble.encode(src, lengths))
    log_probs = ensemble.step(state, torch.full((4,), BOS))[0].log_softmax(-1)
    members = [
        m.step(m.init_state(m.encode(src, lengths)), torch.full((4,), BOS))[0].log_softmax(-1)
        for m in (transformer, rnnsearch)
    ]
    assert torch.allclose(log_probs, ((members[0] + members[1]) / 2).log_softmax(-1), atol=1e-5)
