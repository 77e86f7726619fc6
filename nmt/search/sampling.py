"""Sampling (for back-translation and diverse outputs): greedy search's loop, with a draw
from the temperature-scaled, top-k / top-p truncated distribution instead of the argmax.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from nmt.search.constraints import Constraints
from nmt.search.greedy import Choose, step_by_step_search
from nmt.search.hypothesis import Columns, Hypothesis, SearchModel

_PRIME = 1_000_003  # mixes a sentence's seed with the number of its draw


def truncate(log_probs: torch.Tensor, temperature: float, top_k: int, top_p: float) -> torch.Tensor:
    """log_probs [B, V] -> scores [B, V] to draw from; -inf outside the top-k and the top-p.

    top_k 0 means no limit. The top-p nucleus is the smallest set of most likely tokens whose
    probabilities add up to at least top_p; it always holds the most likely token.
    """
    scores = log_probs / temperature
    if top_k:
        kth_best = scores.topk(min(top_k, scores.size(-1)), dim=-1).values[:, -1:]  # [B, 1]
        scores = scores.masked_fill(scores < kth_best, float("-inf"))
    if top_p < 1:
        ordered, order = scores.sort(dim=-1, descending=True)
        probs = ordered.softmax(-1)
        mass_before = probs.cumsum(-1) - probs  # [B, V] probability of the better tokens
        outside = torch.zeros_like(scores, dtype=torch.bool).scatter(1, order, mass_before >= top_p)
        scores = scores.masked_fill(outside, float("-inf"))
    return scores


def sampler(
    temperature: float, top_k: int, top_p: float, generators: Sequence[torch.Generator]
) -> Choose:
    """Draws each row's token with the row's own generator (`generators[row]`), so what a
    row draws does not depend on which other rows share its batch."""

    def draw(log_probs: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        probs = truncate(log_probs, temperature, top_k, top_p).softmax(-1)  # [A, V]
        uniform = torch.stack([torch.rand((), generator=generators[row]) for row in rows.tolist()])
        # inverse transform sampling: the first token whose cumulative probability reaches
        # 1 - u, in (0, 1], so a token of probability 0 is never the first to reach it
        cumulative = probs.cumsum(-1)
        reach = (1 - uniform).to(probs) * cumulative[:, -1]
        return (cumulative < reach[:, None]).sum(-1).clamp_(max=probs.size(-1) - 1)

    return draw


@torch.no_grad()
def sample_search(
    model: SearchModel,
    src: torch.Tensor,
    src_lengths: torch.Tensor,
    start: int,
    eos_id: int,
    limits: torch.Tensor,
    samples: int,
    temperature: float = 1.0,
    top_k: int = 0,
    top_p: float = 1.0,
    seeds: Sequence[int] | None = None,
    no_repeat_ngram: int = 0,
    constraints: Sequence[Constraints | None] | None = None,
    attention: bool = True,
    shortlist: Columns | None = None,
    unwritable: Sequence[int] = (),
) -> list[list[Hypothesis]]:
    """`samples` independent draws per sentence. Each draw has a generator of its own, seeded
    by its sentence's seed in `seeds` (None: seeds from torch's global generator) and its
    number, so a sentence draws the same with the same seed whatever batch it is in.
    `constraints`: prefixes and excluded phrases only (included ones need beam search).
    `attention`, `shortlist` and `unwritable` as in `step_by_step_search`."""
    if seeds is None:
        seeds = torch.randint(2**62, (src.size(0),)).tolist()
    generators = [
        torch.Generator().manual_seed((seed * _PRIME + draw) % 2**63)
        for seed in seeds
        for draw in range(samples)
    ]
    draw = sampler(temperature, top_k, top_p, generators)
    rows = step_by_step_search(
        model,
        src,
        src_lengths,
        start,
        eos_id,
        limits,
        draw,
        samples,
        no_repeat_ngram,
        constraints,
        attention,
        shortlist,
        unwritable,
    )
    return [rows[start : start + samples] for start in range(0, len(rows), samples)]
