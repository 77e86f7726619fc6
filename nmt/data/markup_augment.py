"""Tags in training pairs (`data.markup_augment: P`), as OpusTrainer puts them into a share of
Mozilla's training data: in a share P of the pairs, one or two phrases that translate each
other (by the light aligner, nmt/data/aligner.py) are wrapped in the same placeholder tags on
both sides, and sometimes a void tag stands before two words that translate each other, so
that a model learns to carry tags to their place itself. Tags are words of their own
(`<t1> der Hund </t1>`): a tag glued to a word would change how the word is cut into
subwords."""

from __future__ import annotations

import random
from collections.abc import Sequence

from nmt.data.aligner import align

PAIRED = (("<t1>", "</t1>"), ("<t2>", "</t2>"))
VOID = "<t0/>"
SYMBOLS = (*(tag for pair in PAIRED for tag in pair), VOID)  # SentencePiece's own pieces
ALIGNED_SAMPLE = 20_000  # pairs the aligner learns from, besides those it tags
Links = Sequence[tuple[int, int]]


def with_markup(
    src: Sequence[str], tgt: Sequence[str], share: float, seed: int
) -> tuple[list[str], list[str]]:
    """The pairs, a share `share` of them (drawn by `seed`) with tags on both sides."""
    rng = random.Random(seed)
    chosen = [index for index in range(len(src)) if rng.random() < share]
    src, tgt = list(src), list(tgt)
    if not chosen:
        return src, tgt
    others = rng.sample(range(len(src)), min(ALIGNED_SAMPLE, len(src)))
    learned = sorted(set(chosen) | set(others))
    links = dict(
        zip(learned, align([(src[i].split(), tgt[i].split()) for i in learned]), strict=True)
    )
    for index in chosen:
        src[index], tgt[index] = tagged(src[index].split(), tgt[index].split(), links[index], rng)
    return src, tgt


def tagged(
    source: list[str], target: list[str], links: Links, rng: random.Random
) -> tuple[str, str]:
    """The pair with one or two of its consistent phrases in tags, and sometimes a void tag;
    as it was where no phrase is consistent."""
    phrases = consistent_phrases(links, len(source), len(target))
    rng.shuffle(phrases)
    picked: list[tuple[tuple[int, int], tuple[int, int]]] = []
    for phrase in phrases:
        if len(picked) == rng.randint(1, len(PAIRED)):
            break
        if all(_apart(phrase[0], other[0]) and _apart(phrase[1], other[1]) for other in picked):
            picked.append(phrase)
    opens_src: dict[int, list[str]] = {}
    closes_src: dict[int, list[str]] = {}
    opens_tgt: dict[int, list[str]] = {}
    closes_tgt: dict[int, list[str]] = {}
    for (open_tag, close_tag), ((a, b), (c, d)) in zip(PAIRED, sorted(picked), strict=False):
        opens_src.setdefault(a, []).append(open_tag)
        closes_src.setdefault(b, []).insert(0, close_tag)
        opens_tgt.setdefault(c, []).append(open_tag)
        closes_tgt.setdefault(d, []).insert(0, close_tag)
    if links and rng.random() < 0.3:  # a void tag before a linked pair of words
        i, j = rng.choice(list(links))
        if not any(a < i < b for (a, b), _ in picked) and not any(
            c < j < d for _, (c, d) in picked
        ):
            opens_src.setdefault(i, []).insert(0, VOID)
            opens_tgt.setdefault(j, []).insert(0, VOID)
    return _written(source, opens_src, closes_src), _written(target, opens_tgt, closes_tgt)


def consistent_phrases(
    links: Links, sources: int, targets: int
) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Source spans of one to three words and the target span their links cover, where no
    link from outside the source span reaches into the target span (Och & Ney's phrase
    consistency)."""
    found = []
    for start in range(sources):
        for end in range(start + 1, min(sources, start + 3) + 1):
            inside = [j for i, j in links if start <= i < end]
            if not inside:
                continue
            first, last = min(inside), max(inside) + 1
            if all(start <= i < end for i, j in links if first <= j < last):
                found.append(((start, end), (first, last)))
    return found


def _apart(one: tuple[int, int], other: tuple[int, int]) -> bool:
    return one[1] <= other[0] or other[1] <= one[0]


def _written(words: list[str], opens: dict[int, list[str]], closes: dict[int, list[str]]) -> str:
    out: list[str] = []
    for index, word in enumerate(words):
        out += closes.get(index, []) + opens.get(index, []) + [word]
    out += closes.get(len(words), [])
    return " ".join(out)
