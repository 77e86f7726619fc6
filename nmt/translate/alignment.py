"""Hard word alignments from attention: each target subword points at the source subword it
attends to most, and both are merged back into whitespace-separated words.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from nmt.data.tokenizer import Vocab
from nmt.search import Hypothesis

WORD_START = "\u2581"  # SentencePiece's '▁': a piece starting with it begins a word


def word_indices(pieces: Sequence[str]) -> list[int | None]:
    """The 0-based whitespace-separated word that each piece's text begins in.

    A piece starting with '▁' begins a new word; any other piece continues the current one.
    A piece with no visible text (a lone '▁') belongs to no word: None.
    """
    indices, word, in_word = [], -1, False
    for piece in pieces:
        index = None
        for char in piece.replace(WORD_START, " "):
            if char.isspace():
                in_word = False
                continue
            if not in_word:
                word, in_word = word + 1, True
            index = word if index is None else index
        indices.append(index)
    return indices


def word_alignment(
    attention: torch.Tensor, src_pieces: Sequence[str], tgt_pieces: Sequence[str]
) -> list[tuple[int, int]]:
    """attention [steps, H, S] -> sorted (source word, target word) pairs.

    Heads are averaged; rows beyond the target pieces (the eos step) are ignored, and so
    are punctuation pieces of a word that has others ("." of "hat."), which would tie the
    word to the source word whose punctuation they attend to.
    """
    src_words, tgt_words = word_indices(src_pieces), word_indices(tgt_pieces)
    strongest = attention[: len(tgt_pieces)].mean(1).argmax(-1).tolist()  # [T] source piece
    lettered = {tgt_words[i] for i, piece in enumerate(tgt_pieces) if not _punctuation(piece)}
    pairs = {
        (src_words[j], tgt_words[i])
        for i, j in enumerate(strongest)
        if not (_punctuation(tgt_pieces[i]) and tgt_words[i] in lettered)
    }
    return sorted((i, j) for i, j in pairs if i is not None and j is not None)


def _punctuation(piece: str) -> bool:
    """A piece of punctuation alone ("." of "dog."): its word's other pieces align it; on
    its own it attends to the source's punctuation, which would tie the word there."""
    text = piece.replace(WORD_START, "")
    return bool(text) and not any(char.isalnum() for char in text)


def pharaoh(pairs: Sequence[tuple[int, int]]) -> str:
    """'0-0 1-2 ...': source index - target index, the format of Moses and fast_align."""
    return " ".join(f"{i}-{j}" for i, j in pairs)


def hypothesis_alignment(hypothesis: Hypothesis, src_pieces: list[str], tgt: Vocab) -> str:
    """Pharaoh word alignment of the tokens that appear in the text (pad and bos decode to
    nothing), as `nmt translate --alignments` and the server's `align` give it."""
    specials = {tgt.pad_id, tgt.bos_id, tgt.eos_id}
    rows = [i for i, token in enumerate(hypothesis.tokens) if token not in specials]
    tgt_pieces = tgt.pieces([hypothesis.tokens[i] for i in rows], src_pieces)
    return pharaoh(word_alignment(hypothesis.attention[rows], src_pieces, tgt_pieces))


def step_labels(hypothesis: Hypothesis, tgt: Vocab, src_pieces: list[str]) -> list[str]:
    """One target label per attention row: the subwords (a copied one is its source piece),
    then '</s>' for the eos step."""
    pieces = tgt.pieces(hypothesis.tokens, src_pieces)
    return pieces + ["</s>"] * (hypothesis.attention.size(0) - len(pieces))
