"""Several directions in one model: the sampling formula, the draws that follow it, the
balanced text SentencePiece learns from, and the tags."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest

from nmt.data.batching import TokenBatcher
from nmt.data.directions import balanced_lines, draw_order, sampling_probabilities
from nmt.data.tokenizer import Tokenizer, Vocab
from nmt.errors import UserError


def test_sampling_probabilities_follow_the_temperature_formula():
    sizes = [29_000, 5_000]
    assert sampling_probabilities(sizes, 1.0) == pytest.approx([29 / 34, 5 / 34])
    by_hand = [29_000**0.2, 5_000**0.2]
    assert sampling_probabilities(sizes, 5.0) == pytest.approx([w / sum(by_hand) for w in by_hand])
    assert sampling_probabilities(sizes, 1e9) == pytest.approx([0.5, 0.5])
    assert sum(sampling_probabilities([3, 1, 7], 2.0)) == pytest.approx(1.0)


def test_batches_draw_each_direction_as_often_as_the_formula_says():
    """Over 30 epochs (102,000 draws) each direction's share lies within 4 standard
    deviations of its probability, at T = 1, 2 and 5."""
    sizes = [2_900, 500]
    lengths = [5] * sum(sizes)
    for temperature in (1.0, 2.0, 5.0):
        probabilities = sampling_probabilities(sizes, temperature)
        batcher = TokenBatcher(lengths, lengths, 60, 3, groups=sizes, probabilities=probabilities)
        drawn = [index for epoch in range(30) for b in batcher.epoch(epoch) for index in b]
        small = sum(index >= sizes[0] for index in drawn) / len(drawn)
        sigma = math.sqrt(probabilities[1] * (1 - probabilities[1]) / len(drawn))
        assert abs(small - probabilities[1]) < 4 * sigma, (temperature, small, probabilities)


def test_a_direction_repeats_no_pair_before_it_has_drawn_every_one():
    sizes = [50, 7]
    order = draw_order(sizes, [0.2, 0.8], random.Random(0))
    assert len(order) == 57
    small = Counter(index for index in order if index >= 50)
    large = Counter(index for index in order if index < 50)
    assert max(small.values()) - min(small.values()) <= 1 and len(small) == 7
    assert max(large.values()) == 1  # drawn less often than its size: no repeats


def test_the_epochs_of_several_directions_are_a_pure_function_of_seed_and_epoch():
    sizes, lengths = [40, 10], [3 + i % 5 for i in range(50)]
    probabilities = sampling_probabilities(sizes, 5.0)

    def batcher(seed):
        return TokenBatcher(lengths, lengths, 30, seed, groups=sizes, probabilities=probabilities)

    assert batcher(1).epoch(2) == batcher(1).epoch(2)
    assert batcher(1).epoch(2) != batcher(1).epoch(3)
    assert batcher(1).epoch(2) != batcher(2).epoch(2)


def test_sentencepiece_learns_from_a_temperature_balanced_sample_of_the_languages():
    lines = {"de": [f"d{i}" for i in range(900)], "cs": [f"c{i}" for i in range(100)]}
    sample = balanced_lines(lines, 5.0, seed=0)
    shares = sampling_probabilities([100, 900], 5.0)  # languages in sorted order: cs, de
    assert len(sample) == pytest.approx(1000, abs=1)
    assert sum(line.startswith("c") for line in sample) == round(1000 * shares[0])
    cs = Counter(line for line in sample if line.startswith("c"))
    assert len(cs) == 100 and max(cs.values()) - min(cs.values()) <= 1  # once through, again
    assert sample == balanced_lines(lines, 5.0, seed=0)


def test_tags_get_ids_after_the_pieces_and_never_come_out_of_text(tokenizer):
    proto = tokenizer.src.model_proto
    plain, tagged = Vocab(proto), Vocab(proto, ["de", "en"])
    assert tagged.tags == {"de": plain.size, "en": plain.size + 1}
    assert tagged.size == plain.size + 2
    towards_de = tagged.towards("de")
    line = "the dog sees <2de> the cat."
    ids = towards_de.encode([line])[0]
    assert ids[0] == tagged.tags["de"] and ids[1:] == plain.encode([line])[0]
    assert tagged.tags["de"] not in ids[1:]  # the tag's spelling in text is just text
    assert tagged.encode([line]) == plain.encode([line])  # untagged without towards
    assert tagged.decode(ids) == plain.decode(plain.encode([line])[0])
    assert tagged.pieces(ids[:1]) == ["<2de>"]
    with pytest.raises(UserError, match="no tag for 'fr'.*de, en"):
        tagged.towards("fr")


def test_a_tokenizer_keeps_its_tags_through_its_state_and_its_files(tokenizer, tmp_path):
    vocab = Vocab(tokenizer.src.model_proto, ["cs", "en"])
    tagged = Tokenizer(vocab, vocab)
    restored = Tokenizer.from_state(tagged.to_state())
    assert restored.tags == ["cs", "en"] and restored.joint
    assert restored.towards("en").src.encode(["a"]) == tagged.towards("en").src.encode(["a"])
    tagged.save(tmp_path)
    assert Tokenizer.load(tmp_path).tags == ["cs", "en"]
    old_state = {key: value for key, value in tokenizer.to_state().items() if key != "tags"}
    assert Tokenizer.from_state(old_state).tags == []  # checkpoints from before tags
    assert tokenizer.towards("de") is tokenizer  # no tags: sources stay as they are
