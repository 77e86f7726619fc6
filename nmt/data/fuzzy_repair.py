"""Neural Fuzzy Repair (Bulte & Tezcan 2019), `data.fuzzy_matches`: the model reads a
sentence followed by SEPARATOR and the target of its best fuzzy match in a translation
memory, and learns how much of that translation to keep.

Training draws the matches from the train split itself, never a pair's own (`exclude`):
a pair that met its own target would learn to copy. SEPARATOR is one piece of the
tokenizer (a SentencePiece user symbol), so the model can tell the two parts apart.
"""

from __future__ import annotations

import collections
import logging
import random
from collections.abc import Sequence

from nmt.config import FuzzyMatchConfig
from nmt.data.memory import TranslationMemory, band_of

SEPARATOR = "｟fuzzy｠"
SYMBOLS = (SEPARATOR,)

log = logging.getLogger("nmt")


def with_match(source: str, target: str) -> str:
    """What the model reads: `source`, then the separator and a match's target."""
    return f"{source} {SEPARATOR} {target}"


def repaired_pairs(
    sources: Sequence[str], targets: Sequence[str], fuzzy: FuzzyMatchConfig, seed: int
) -> tuple[list[str], list[str]]:
    """The pairs, each source with its best match among the other pairs appended where one
    scores at least fuzzy.threshold, for a share fuzzy.share of them (drawn from `seed`);
    with fuzzy.keep_originals, the pairs as they were followed by the augmented ones."""
    memory = TranslationMemory.build(sources, targets, "", "")
    draw = random.Random(seed)
    augmented, bands = {}, collections.Counter()  # augmented: index -> source with a match
    for index, source in enumerate(sources):
        chosen = draw.random() < fuzzy.share
        match = memory.best(source, fuzzy.threshold, exclude=index) if chosen else None
        bands[band_of(match) if chosen else "not drawn"] += 1
        if match is not None:
            augmented[index] = with_match(source, match.target)
    shown = ", ".join(f"{band} {count}" for band, count in sorted(bands.items()))
    log.info(
        "data.fuzzy_matches: %d of %d sources read a match (%s)",
        len(augmented), len(sources), shown,
    )  # fmt: skip
    if fuzzy.keep_originals:
        return (
            [*sources, *augmented.values()],
            [*targets, *(targets[i] for i in augmented)],
        )
    return [augmented.get(i, source) for i, source in enumerate(sources)], list(targets)
