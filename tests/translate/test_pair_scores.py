"""Forced scoring gives back the score search reported for its own translations, from their
token ids, also where text cannot say it (a copy model's copied pieces, a hypothesis cut at
its length limit); text that copies whole source words is read as copying writes it."""

from __future__ import annotations

import dataclasses

import pytest

from conftest import copy_model, make_translator, tiny_experiment
from nmt.translate.translator import Translator

SENTENCES = [
    "the dog sees the cat.",
    "a very small bird has slept because we sleep.",
    "we sleep.",
    "the small dog sees a bird.",
]


def search_scores(translator: Translator, **options) -> list[tuple[str, list[int], float, bool]]:
    return [
        (source, h.tokens, h.score, h.ended)
        for source, translation in zip(
            SENTENCES, translator.translate(SENTENCES, **options), strict=True
        )
        for h in translation.hypotheses
    ]


def check_scores_of_own_translations(translator: Translator, **options) -> set[bool]:
    """Scores each hypothesis from its ids; returns which endings (eos or the limit) it saw."""
    found = search_scores(translator, **options)
    pairs = translator.score([s for s, _, _, _ in found], [tokens for _, tokens, _, _ in found])
    for (_, tokens, score, ended), pair in zip(found, pairs, strict=True):
        assert pair.total == pytest.approx(score, abs=1e-4)
        assert pair.ended == ended and len(pair.tokens) == len(tokens) + ended
        assert (pair.tokens[-1] == "</s>") == ended
    return {ended for _, _, _, ended in found}


@pytest.mark.parametrize("settings", [{"beam": 1}, {"beam": 3, "nbest": 3}])
def test_a_copy_models_own_translations_score_as_search_scored_them(
    corpus_dir, separate_tokenizer, settings
):
    """Separate vocabularies: the copied pieces German lacks have ids of their own, which a
    re-encoding of the text would turn into <unk> (scores hundreds of nats off)."""
    config = tiny_experiment(corpus_dir, "model.copy=true")
    model = copy_model(corpus_dir, separate_tokenizer, gate=-2.0)
    decode = dataclasses.replace(config.decode, max_len_ratio=1.0, max_len_extra=2, **settings)
    translator = Translator(model, separate_tokenizer, config, decode)
    check_scores_of_own_translations(translator)
    copied = [t for _, tokens, _, _ in search_scores(translator) for t in tokens]
    assert any(t >= separate_tokenizer.tgt.size for t in copied)


@pytest.mark.parametrize("settings", [{"beam": 1}, {"beam": 3, "nbest": 2}])
def test_hypotheses_cut_at_their_length_limit_score_without_eos(tiny_config, tokenizer, settings):
    """An untrained model rarely writes eos: with a short limit most hypotheses end there,
    which forced scoring must not end with an eos search never wrote."""
    translator = make_translator(
        tiny_config, tokenizer, max_len_ratio=0.5, max_len_extra=1, **settings
    )
    assert False in check_scores_of_own_translations(translator)


def test_text_that_copies_a_source_word_is_scored_as_copying_writes_it(
    corpus_dir, separate_tokenizer
):
    tokenizer = separate_tokenizer
    config = tiny_experiment(corpus_dir, "model.copy=true")
    translator = Translator(copy_model(corpus_dir, tokenizer), tokenizer, config)
    source = "the dog sees yay."  # y: an English letter German lacks
    src_ids = tokenizer.src.encode([source])[0]
    pieces = tokenizer.src.pieces(src_ids)
    word = pieces.index(next(p for p in pieces if p == "▁y"))
    run = [word] + [i for i in range(word + 1, len(pieces)) if not pieces[i].startswith("▁")]
    target = "der Hund sieht yay."
    known = tokenizer.tgt.encode(["der Hund sieht"])[0]
    copied = []
    for position in run:  # as search writes a copied piece: its target id, or V + position
        own = tokenizer.tgt.processor.piece_to_id(pieces[position])
        first = src_ids.index(src_ids[position])
        copied.append(own if own != tokenizer.tgt.unk_id else tokenizer.tgt.size + first)
    assert any(t >= tokenizer.tgt.size for t in copied)  # German lacks the name's pieces
    by_text, by_ids = translator.score([source] * 2, [target, known + copied])
    assert by_text.unknown == 0 and by_text.tokens == by_ids.tokens
    assert by_text.log_probs == pytest.approx(by_ids.log_probs, abs=1e-5)
    plain = dataclasses.replace(config, model=dataclasses.replace(config.model, copy=False))
    model = Translator(copy_model(corpus_dir, tokenizer), tokenizer, plain)
    model.model.copy = None  # the same network without copying: the name is <unk> to it
    assert model.score([source], [target])[0].unknown > 0
