"""Several translation directions in one model: how often each is drawn, and the text its
SentencePiece model learns from.

A direction with n_d training pairs is drawn with probability p_d = n_d^(1/T) / sum_e
n_e^(1/T) (Arivazhagan et al. 2019): T = 1 draws pairs in proportion to the data, larger T
flattens towards uniform, so a small direction is seen more often than its share. The
joint SentencePiece model learns from a sample of each language's sentences balanced the
same way, so a small language still gets pieces of its own.
"""

from __future__ import annotations

import random
from collections.abc import Sequence


def direction_name(source: str, target: str) -> str:
    return f"{source}-{target}"


def sampling_probabilities(sizes: Sequence[int], temperature: float) -> list[float]:
    """p_d proportional to sizes[d] ** (1 / temperature)."""
    weights = [size ** (1 / temperature) for size in sizes]
    total = sum(weights)
    return [weight / total for weight in weights]


def draw_order(
    sizes: Sequence[int], probabilities: Sequence[float], rng: random.Random
) -> list[int]:
    """One epoch of pair indices over groups laid end to end (group d holds indices
    sum(sizes[:d]) ... + sizes[d] - 1): as many draws as there are pairs, each from group d
    with probability p_d, a group's pairs taken in a fresh random order each time round, so
    a group drawn less often than its size sees different pairs every epoch and one drawn
    more often repeats each pair before any twice. The order comes shuffled."""
    draws = rng.choices(range(len(sizes)), weights=probabilities, k=sum(sizes))
    order: list[int] = []
    start = 0
    for group, size in enumerate(sizes):
        wanted = draws.count(group)
        while wanted > 0:
            indices = list(range(start, start + size))
            rng.shuffle(indices)
            order.extend(indices[:wanted])
            wanted -= size
        start += size
    rng.shuffle(order)
    return order


def balanced_lines(lines: dict[str, Sequence[str]], temperature: float, seed: int) -> list[str]:
    """Sentences of every language for SentencePiece to learn from: as many as there are in
    all, language l's share proportional to (its sentences) ** (1 / temperature), drawn
    without repeats while it has enough (with them, once through, when it has fewer)."""
    languages = sorted(lines)
    sizes = [len(lines[language]) for language in languages]
    probabilities = sampling_probabilities(sizes, temperature)
    total = sum(sizes)
    rng = random.Random(seed)
    sample: list[str] = []
    for language, probability in zip(languages, probabilities, strict=True):
        wanted, pool = round(total * probability), list(lines[language])
        while wanted > 0:
            rng.shuffle(pool)
            sample.extend(pool[:wanted])
            wanted -= len(pool)
    return sample
