"""data.markup_augment: a share of the training pairs gets the same placeholder tags around
phrases that translate each other on both sides; the tokenizer keeps each tag one piece."""

import random
import re

import pytest

from conftest import tiny_experiment
from nmt.config import ConfigError
from nmt.data.corpus import prepare_corpus
from nmt.data.demo import NOUNS, generate_pairs
from nmt.data.markup_augment import SYMBOLS, consistent_phrases, tagged, with_markup
from nmt.errors import UserError


def test_a_share_of_the_pairs_gets_the_same_tags_on_both_sides_around_translations():
    pairs = generate_pairs(3000, seed=9)
    src, tgt = with_markup([e for e, _ in pairs], [d for _, d in pairs], 0.1, seed=1)
    tagged_pairs = [(s, t) for s, t in zip(src, tgt, strict=True) if "<t" in s or "<t" in t]
    assert 240 <= len(tagged_pairs) <= 360  # about a tenth
    lexicon = {n.en: {n.de} for n in NOUNS} | {
        n.en_plural: {n.de_plural, n.de_plural + "n"} for n in NOUNS
    }
    nouns = right = 0
    for source, target in tagged_pairs:
        assert sorted(w for w in source.split() if w in SYMBOLS) == sorted(
            w for w in target.split() if w in SYMBOLS
        )
        inside = source.split("<t1>")[1].split("</t1>")[0].split() if "<t1>" in source else []
        there = target.split("<t1>")[1].split("</t1>")[0].split() if "<t1>" in target else []
        for word in inside:
            if word.strip(".,") in lexicon:
                nouns += 1
                right += any(w.strip(".,") in lexicon[word.strip(".,")] for w in there)
    assert nouns > 50 and right / nouns > 0.95, (right, nouns)
    untouched = [(s, t) for s, t in zip(src, tgt, strict=True) if "<t" not in s]
    assert set(untouched) <= set(pairs)


def test_only_consistent_phrases_are_tagged():
    links = [(0, 1), (1, 0), (2, 2)]  # "a b c" -> "B A C"
    phrases = consistent_phrases(links, 3, 3)
    assert ((0, 1), (1, 2)) in phrases and ((0, 2), (0, 2)) in phrases
    assert all(src != (1, 3) or tgt == (0, 3) for src, tgt in phrases)  # b c spans A..C
    source, target = tagged(["a", "b", "c"], ["B", "A", "C"], links, random.Random(3))
    assert sorted(source.split()) == sorted([*"abc", *(w for w in source.split() if w in SYMBOLS)])
    assert (
        target.replace(" ", "")
        .replace("<t1>", "")
        .replace("</t1>", "")
        .replace("<t2>", "")
        .replace("</t2>", "")
        .replace("<t0/>", "")
        == "BAC"
    )


def test_the_trained_tokenizer_keeps_each_tag_one_piece(corpus_dir, tmp_path):
    config = tiny_experiment(corpus_dir, "data.markup_augment=0.2")
    corpus = prepare_corpus(config, tmp_path)
    for symbol in SYMBOLS:
        assert (
            corpus.tokenizer.src.encode([f"a {symbol} b"])[0].count(
                corpus.tokenizer.src.processor.piece_to_id(symbol)
            )
            == 1
        )
    plain = prepare_corpus(tiny_experiment(corpus_dir), tmp_path / "plain").tokenizer
    with pytest.raises(UserError, match="has no piece of its own for </t1>"):
        prepare_corpus(config, tmp_path / "again", plain)


@pytest.mark.parametrize(
    "setting, message",
    [
        ("data.markup_augment=1.0", "must be a share in [0, 1), got 1.0"),
        ("data.markup_augment=-0.1", "must be a share in [0, 1), got -0.1"),
    ],
)
def test_a_share_outside_0_1_is_refused(corpus_dir, setting, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        tiny_experiment(corpus_dir, setting)
