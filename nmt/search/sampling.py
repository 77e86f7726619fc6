"""Sampling (for back-translation and diverse outputs): greedy search's loop, with a draw
from the temperature-scaled, top-k / top-p truncated distribution instead of the argmax.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from nmt.search.constraints import Constraints
from nmt.search.greedy import Choose, step_by_step_search
from nmt.search.hypothesis import Columns, Hypothesis, SearchModel


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


def sampler(temperature: float, top_k: int, top_p: float, generator: torch.Generator) -> Choose:
    def draw(log_probs: torch.Tensor) -> torch.Tensor:
        probs = truncate(log_probs, temperature, top_k, top_p).softmax(-1)
        return torch.multinomial(probs, 1, generator=generator).squeeze(1)

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
    generator: torch.Generator | None = None,
    no_repeat_ngram: int = 0,
    constraints: Sequence[Constraints | None] | None = None,
    attention: bool = True,
    shortlist: Columns | None = None,
) -> list[list[Hypothesis]]:
    """`samples` independent draws per sentence; the same generator state gives the same draws.
    `constraints`: prefixes and excluded phrases only (included ones need beam search).
    `attention` and `shortlist` as in `step_by_step_search`."""
    draw = sampler(temperature, top_k, top_p, generator)
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
    )
    return [rows[start : start + samples] for start in range(0, len(rows), samples)]
