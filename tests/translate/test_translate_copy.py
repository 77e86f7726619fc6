"""A copy model behind the Translator: its copied pieces come out as source text in every
search, n-best, alignments and attention maps; ensembles with a model that does not copy;
p_gen in scores."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from conftest import copy_model, tiny_experiment
from nmt.data.batching import pad
from nmt.model.seq2seq import Seq2Seq, build_model
from nmt.search.ensemble import Ensemble
from nmt.translate.quantize import quantize
from nmt.translate.translator import Translator

SENTENCES = ["the dog sees the cat.", "a very small bird has slept because we sleep."]


def translator_of(model, corpus_dir, tokenizer, **decode) -> Translator:
    config = tiny_experiment(corpus_dir, "model.copy=true")
    return Translator(model, tokenizer, config, dataclasses.replace(config.decode, **decode))


@pytest.mark.parametrize(
    "decode, int8",
    [({"beam": 1}, False), ({"beam": 3, "nbest": 2}, False), ({"sample": True, "nbest": 2}, False)]
    + [({"beam": 3, "nbest": 2}, True)],
    ids=["greedy", "beam", "sampling", "int8"],
)
def test_a_model_that_only_copies_writes_source_pieces(
    corpus_dir, separate_tokenizer, decode, int8
):
    model = copy_model(corpus_dir, separate_tokenizer, gate=-60.0)
    if int8:
        model = quantize(model)
    translator = translator_of(model, corpus_dir, separate_tokenizer, **decode)
    vocab = separate_tokenizer.tgt.size
    for translation in translator.translate(SENTENCES, alignments=True, attention=True):
        pieces = separate_tokenizer.src.pieces(translation.src_ids)
        copyable = model.copy.source_ids(torch.tensor([translation.src_ids]))[0].tolist()
        assert max(copyable) >= vocab  # English pieces German lacks
        assert len(translation.nbest) == decode.get("nbest", 1)
        for candidate in translation.nbest:
            tokens = candidate.hypothesis.tokens
            assert set(tokens) <= set(copyable)
            labels = candidate.attention.tgt_tokens[: len(tokens)]
            assert set(labels) <= set(pieces)
            # the text is what the source's own SentencePiece model makes of those pieces
            copied = [pieces[copyable.index(token)] for token in tokens]
            assert candidate.text == separate_tokenizer.src.processor.decode_pieces(copied)
            assert candidate.alignment  # Pharaoh pairs over copied words too


def test_an_ensemble_of_a_copy_model_and_a_plain_one_reads_copies_as_unknown(
    corpus_dir, separate_tokenizer
):
    """The plain member reads a copied piece as <unk>, and its <unk> probability is shared
    by <unk> and the pieces the copy model can copy: its distribution over the V + S
    columns still sums to one, and puts nothing where no piece can be copied."""
    tokenizer = separate_tokenizer
    copying = copy_model(corpus_dir, tokenizer)
    torch.manual_seed(1)
    plain = build_model(tiny_experiment(corpus_dir).model, tokenizer.src, tokenizer.tgt).eval()
    ensemble = Ensemble([copying, plain])
    src_ids = tokenizer.src.encode(SENTENCES)
    src, lengths = pad(src_ids, tokenizer.src.pad_id), torch.tensor([len(i) for i in src_ids])
    state = ensemble.init_state(ensemble.encode(src, lengths))
    vocab, unk = tokenizer.tgt.size, tokenizer.tgt.unk_id
    copied = vocab + 1  # a copied piece as the previous token
    prev = torch.tensor([tokenizer.tgt.bos_id, copied])
    scores, _, _ = ensemble.step(state, prev)
    copy_scores, _, _ = copying.step(copying.init_state(copying.encode(src, lengths)), prev)
    plain_scores = plain.step(
        plain.init_state(plain.encode(src, lengths)), torch.tensor([tokenizer.tgt.bos_id, unk])
    )[0].log_softmax(-1)
    # the plain member's share of the mean, where the copy model's is finite (elsewhere the
    # mean is -inf whatever the plain member says)
    finite = copy_scores > -torch.inf
    assert torch.equal(scores > -torch.inf, finite)
    widened = torch.where(finite, 2 * scores - copy_scores, -torch.inf).exp()
    assert torch.allclose(widened.sum(1), torch.ones(2), atol=1e-5)
    ids = copying.copy.source_ids(src)
    for row in range(2):
        copyable = {j for j in range(src.size(1)) if ids[row, j] == vocab + j}
        assert copyable  # English pieces German lacks
        share = plain_scores[row, unk].exp().item() / (1 + len(copyable))
        for j in range(src.size(1)):
            assert widened[row, vocab + j].item() == pytest.approx(
                share if j in copyable else 0, abs=1e-6
            )
            assert bool(finite[row, vocab + j]) == (j in copyable)
        assert widened[row, unk].item() == pytest.approx(share, abs=1e-6)
        others = [i for i in range(vocab) if i != unk]
        torch.testing.assert_close(widened[row, others], plain_scores[row, others].exp())
    translator = translator_of(ensemble, corpus_dir, tokenizer, beam=2)
    assert all(translation.nbest for translation in translator.translate(SENTENCES))


def test_scores_carry_a_copy_models_p_gen_per_token(corpus_dir, separate_tokenizer):
    model = copy_model(corpus_dir, separate_tokenizer)
    translator = translator_of(model, corpus_dir, separate_tokenizer)
    targets = ["der Hund sieht die Katze.", "ein Vogel."]
    pairs = translator.score(SENTENCES, targets)
    for pair, target in zip(pairs, targets, strict=True):
        assert (
            len(pair.p_gen)
            == len(pair.tokens)
            == len(separate_tokenizer.tgt.encode([target])[0]) + 1
        )
        assert all(0 < gate < 1 for gate in pair.p_gen)
    # p_gen is the gate of the teacher-forced features: p_gen 1 for a gate forced open
    opened = copy_model(corpus_dir, separate_tokenizer, gate=60.0)
    assert translator_of(opened, corpus_dir, separate_tokenizer).score(SENTENCES, targets)[
        0
    ].p_gen == [1.0] * len(pairs[0].tokens)
    plain = Seq2Seq(model.encoder, model.decoder, model.tgt_pad_id)
    assert (
        translator_of(plain, corpus_dir, separate_tokenizer).score(SENTENCES, targets)[0].p_gen
        is None
    )
