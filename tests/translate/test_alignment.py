import torch

from nmt.translate.alignment import pharaoh, word_alignment, word_indices


def test_pieces_starting_with_the_word_marker_begin_words():
    assert word_indices(["▁the", "▁ca", "t", ".", "▁sle", "eps"]) == [0, 1, 1, 1, 2, 2]
    assert word_indices(["ab", "▁c"]) == [0, 1]
    assert word_indices(["▁", "▁x", "▁", "y"]) == [None, 0, None, 1]  # a lone ▁ has no text


def test_each_target_word_aligns_to_the_source_word_it_attends_to_most():
    src = ["▁der", "▁Hu", "nd", "▁schläft"]
    tgt = ["▁the", "▁dog", "▁sle", "eps"]
    attention = torch.zeros(5, 2, 4)  # [steps (eos included), heads, source]
    for step, piece in enumerate([0, 2, 3, 3, 3]):
        attention[step, 0, piece] = 0.8
        attention[step, 1, (piece + 1) % 4] = 0.6  # the other head disagrees, more weakly
    pairs = word_alignment(attention, src, tgt)
    assert pairs == [(0, 0), (1, 1), (2, 2)]
    assert pharaoh(pairs) == "0-0 1-1 2-2"


def test_a_words_punctuation_piece_does_not_tie_it_to_the_sources_punctuation():
    src = ["▁the", "▁dog", ".", "▁sleeps", "."]
    tgt = ["▁der", "▁Hund", "▁schläft", ".", "▁."]
    attention = torch.zeros(6, 1, 5)
    for step, piece in enumerate([0, 1, 3, 4, 4, 4]):  # "." of "schläft." and "." attend "."
        attention[step, 0, piece] = 1.0
    # "schläft." aligns by "schläft" alone; the lone "." word by its punctuation
    assert word_alignment(attention, src, tgt) == [(0, 0), (1, 1), (2, 2), (2, 3)]
