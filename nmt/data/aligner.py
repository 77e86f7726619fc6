"""Word alignments of a parallel corpus without a translation model: IBM Model 1 (Brown et
al. 1993) trained by EM in both directions, each target word linked to the source word it
is likeliest a translation of, and the two directions symmetrised by grow-diag (Koehn et
al. 2003: their intersection, grown by neighbouring links of their union between words
neither links yet). What
`data.markup_augment` places tags by, before any model of the corpus exists."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

Pair = tuple[Sequence[str], Sequence[str]]  # (source words, target words)
NULL = -1  # the empty word a target word may come from


def align(pairs: Sequence[Pair], iterations: int = 5) -> list[list[tuple[int, int]]]:
    """(source word, target word) links of each pair, sorted."""
    src = [[word.lower() for word in s] for s, _ in pairs]
    tgt = [[word.lower() for word in t] for _, t in pairs]
    forward = _directed(src, tgt, iterations)
    backward = _directed(tgt, src, iterations)
    return [
        _grow_diag(one, {(i, j) for j, i in other}, len(s), len(t))
        for one, other, s, t in zip(forward, backward, src, tgt, strict=True)
    ]


def _directed(
    sources: list[list[str]], targets: list[list[str]], iterations: int
) -> list[set[tuple[int, int]]]:
    """IBM Model 1 from sources to targets: each target word's likeliest source word."""
    source_ids, target_ids = _numbered(sources), _numbered(targets)
    probability: dict[tuple[int, int], float] = defaultdict(lambda: 1.0)  # uniform at first
    for _ in range(iterations):
        counts: dict[tuple[int, int], float] = defaultdict(float)
        totals: dict[int, float] = defaultdict(float)
        for source, target in zip(source_ids, target_ids, strict=True):
            heads = [NULL, *source]
            for word in target:
                weights = [probability[(head, word)] for head in heads]
                norm = sum(weights)
                for head, weight in zip(heads, weights, strict=True):
                    share = weight / norm
                    counts[(head, word)] += share
                    totals[head] += share
        probability = defaultdict(
            float, {(head, word): c / totals[head] for (head, word), c in counts.items()}
        )
    links = []
    for source, target in zip(source_ids, target_ids, strict=True):
        found = set()
        for j, word in enumerate(target):
            best, best_i = probability[(NULL, word)], None
            for i, head in enumerate(source):
                if probability[(head, word)] >= best:  # a tie goes to a word, not NULL
                    best, best_i = probability[(head, word)], i
            if best_i is not None:
                found.add((best_i, j))
        links.append(found)
    return links


def _numbered(lines: list[list[str]]) -> list[list[int]]:
    ids: dict[str, int] = {}
    return [[ids.setdefault(word, len(ids)) for word in line] for line in lines]


def _grow_diag(
    forward: set[tuple[int, int]], backward: set[tuple[int, int]], sources: int, targets: int
) -> list[tuple[int, int]]:
    """The intersection, grown by links of the union next to one it holds (diagonals too)
    whose source and target words are both not linked yet (precision first: a tag placed by
    a wrong link teaches the model a wrong place)."""
    links = forward & backward
    union = forward | backward
    grown = True
    while grown:
        grown = False
        for i, j in sorted(links):
            for di in (-1, 0, 1):
                for dj in (-1, 0, 1):
                    link = (i + di, j + dj)
                    if link in union and link not in links:
                        free = all(s != link[0] for s, _ in links) and all(
                            t != link[1] for _, t in links
                        )
                        if free and 0 <= link[0] < sources and 0 <= link[1] < targets:
                            links.add(link)
                            grown = True
    return sorted(links)
