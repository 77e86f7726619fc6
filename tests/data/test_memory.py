"""A translation memory finds what an exhaustive search finds: the exact match first, else
the entry of the best fuzzy score (word edit distance, rapidfuzz) at or above the threshold,
never an excluded one; it survives a round trip through its file, and a file that is not
one is refused by name. Training reads matches from the rest of the train split, never a
pair's own."""

import dataclasses

import numpy as np
import pytest
from rapidfuzz.distance import Levenshtein

from conftest import nmt, write_parallel
from nmt.config import FuzzyMatchConfig
from nmt.data.demo import generate_pairs
from nmt.data.fuzzy_repair import SEPARATOR, repaired_pairs
from nmt.data.memory import TranslationMemory, band_of, words
from nmt.errors import UserError

THRESHOLD = 0.5


def brute_force(sources, query, threshold, exclude=None):
    """(index, score) of the best entry by exhaustive search, the first among equals."""
    wanted = " ".join(query.split())
    for index, source in enumerate(sources):
        if index != exclude and " ".join(source.split()) == wanted:
            return index, 1.0
    best = (-1, -1.0)
    for index, source in enumerate(sources):
        if index == exclude:
            continue
        score = Levenshtein.normalized_similarity(words(query), words(source))
        if score > best[1]:
            best = (index, score)
    return best if best[1] >= threshold else None


@pytest.fixture(scope="module")
def pairs():
    return generate_pairs(1200, seed=3)


def test_the_best_match_is_the_exhaustive_searchs(pairs):
    sources, targets = [s for s, _ in pairs[:1000]], [t for _, t in pairs[:1000]]
    memory = TranslationMemory.build(sources, targets, "en", "de")
    queries = [s for s, _ in pairs[1000:]] + sources[:40]  # new ones, and exact ones
    found = 0
    for number, query in enumerate(queries):
        exclude = number - 200 if number >= 200 and number % 2 else None  # some excluded
        expected = brute_force(sources, query, THRESHOLD, exclude)
        match = memory.best(query, THRESHOLD, exclude)
        if expected is None:
            assert match is None, query
            continue
        found += 1
        assert (match.index, match.score) == expected, query
        assert match.source == sources[match.index] and match.target == targets[match.index]
        assert match.exact == (match.score == 1.0 and words(query) == words(match.source))
    assert found > 100  # the comparison compared something


def test_an_exact_match_is_found_first_spaces_aside_and_never_an_excluded_one():
    sources = ["the dog sees the cat .", "the dog  sees the cat .", "a bird sleeps ."]
    memory = TranslationMemory.build(sources, ["A", "B", "C"], "en", "de")
    match = memory.best("  the dog sees  the cat . ", THRESHOLD)
    assert (match.index, match.target, match.exact, band_of(match)) == (0, "A", True, "exact")
    assert memory.best("the dog sees the cat .", THRESHOLD, exclude=0).target == "B"
    fuzzy = memory.best("The dog sees the cat .", THRESHOLD)  # case differs: not exact
    assert not fuzzy.exact and fuzzy.score == 1.0 and band_of(fuzzy) == "90-100"
    assert memory.best("nothing alike here", THRESHOLD) is None
    assert memory.best("", THRESHOLD) is None
    blank = TranslationMemory.build(["", "a bird ."], ["Hallo", "ein Vogel ."], "en", "de")
    assert blank.exact("") is blank.exact("  ") is blank.best(" ", THRESHOLD) is None  # no target
    assert blank.exact("a bird .").target == "ein Vogel ."


def test_a_memory_survives_its_file_and_a_file_that_is_not_one_is_refused(tmp_path, pairs):
    sources, targets = [s for s, _ in pairs[:200]], [t for _, t in pairs[:200]]
    memory = TranslationMemory.build(sources, targets, "en", "de")
    memory.save(tmp_path / "tm.npz")
    loaded = TranslationMemory.load(tmp_path / "tm.npz")
    assert (loaded.src_lang, loaded.tgt_lang, len(loaded)) == ("en", "de", 200)
    assert [loaded.target(i) for i in range(200)] == targets
    for query in [s for s, _ in pairs[200:260]]:
        assert loaded.best(query, THRESHOLD) == memory.best(query, THRESHOLD)
    np.savez(tmp_path / "objects.npz", meta=np.array([{"format": "x"}], dtype=object))
    (tmp_path / "text.npz").write_text("not a memory")
    for name in ("objects.npz", "text.npz", "missing.npz"):
        with pytest.raises(UserError, match=f"{name}.*nmt tm build"):
            TranslationMemory.load(tmp_path / name)


def test_training_pairs_read_matches_from_the_others_never_their_own():
    # each source has a near twin; every target is its pair's own
    sources = [f"the dog {n} sees the cat number {n} today ." for n in range(40)]
    sources += [f"the dog {n} sees a cat number {n} today ." for n in range(40)]
    targets = [f"target {n}" for n in range(80)]
    repaired, kept = repaired_pairs(sources, targets, FuzzyMatchConfig(threshold=0.5), seed=1)
    assert kept == targets
    for source, target, read in zip(sources, targets, repaired, strict=True):
        original, separator, appended = read.partition(f" {SEPARATOR} ")
        assert original == source and separator and appended != target
    halved, _ = repaired_pairs(sources, targets, FuzzyMatchConfig(share=0.5), seed=1)
    assert 20 < sum(SEPARATOR in read for read in halved) < 60


def test_keeping_originals_trains_each_pair_as_it_was_and_then_its_augmented_copy():
    sources = [f"the dog {n} sees the cat ." for n in range(6)] + ["nothing alike here"]
    targets = [f"target {n}" for n in range(7)]
    fuzzy = FuzzyMatchConfig(share=0.5, keep_originals=True)
    read, kept = repaired_pairs(sources, targets, fuzzy, seed=3)
    replaced, _ = repaired_pairs(
        sources, targets, dataclasses.replace(fuzzy, keep_originals=False), seed=3
    )
    augmented = [
        i for i, (one, source) in enumerate(zip(replaced, sources, strict=True)) if one != source
    ]
    assert 0 < len(augmented) < 6
    assert read == sources + [replaced[i] for i in augmented]
    assert kept == targets + [targets[i] for i in augmented]


def test_nmt_tm_build_writes_a_memory_of_a_split_and_never_over_its_input(tmp_path, pairs):
    write_parallel(tmp_path / "corpus", "train", pairs[:100])
    out = tmp_path / "tm.npz"
    ran = nmt("tm", "build", "--data", tmp_path / "corpus", "--src-lang", "en",
              "--tgt-lang", "de", "--out", out)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert "100 en-de pairs" in ran.stdout and len(TranslationMemory.load(out)) == 100
    train = tmp_path / "corpus" / "train.en"
    before = train.read_bytes()
    ran = nmt("tm", "build", "--data", tmp_path / "corpus", "--src-lang", "en",
              "--tgt-lang", "de", "--out", train)  # fmt: skip
    assert ran.returncode == 2 and "destroy the input" in ran.stderr
    assert train.read_bytes() == before
