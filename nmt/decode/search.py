"""Decoding, written only against encode / init_state / step / state.select.

Greedy search and sampling share one loop that picks one token per row and step (argmax or a
draw); beam search (nmt/decode/beam.py) keeps several hypotheses per sentence. None of them
asks what kind of model it drives: a Seq2Seq and an Ensemble answer the same calls.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import torch


class SearchModel(Protocol):
    """What search needs. The state may be anything with `select(indices)` (rows on dim 0)."""

    def encode(self, src: torch.Tensor, src_lengths: torch.Tensor) -> Any: ...

    def init_state(self, encoded: Any) -> Any: ...

    def step(self, state: Any, prev_tokens: torch.Tensor) -> tuple[torch.Tensor, Any, torch.Tensor]:
        """prev_tokens [B] -> logits [B, V], next state, attention weights [B, H, S]."""
        ...


@dataclass
class Hypothesis:
    tokens: list[int]  # without bos and eos
    score: float  # sum of token log-probabilities, eos included when produced
    attention: torch.Tensor  # [steps, H, S_real]: one row per output token, eos included

    def normalised_score(self, alpha: float) -> float:
        """What beam search ranks finished hypotheses by: score / length_penalty(steps)."""
        return self.score / length_penalty(self.attention.size(0), alpha)


def length_penalty(steps: Any, alpha: float) -> Any:
    """GNMT (Wu et al. 2016): ((5 + steps) / 6) ** alpha; >= 1, growing with steps if alpha >= 0.

    Works on ints and on tensors of step counts alike.
    """
    return ((5 + steps) / 6) ** alpha


def max_lengths(src_lengths: torch.Tensor, ratio: float, extra: int) -> torch.Tensor:
    """Output length limit per sentence, relative to its source length. [B] -> [B]."""
    return (src_lengths.double() * ratio).ceil().long() + extra


def log_probabilities(logits: torch.Tensor) -> torch.Tensor:
    """log_softmax, as logits - logsumexp: beam search normalises its best logits alone in
    the same way, so a beam of 1 scores exactly as greedy search does."""
    logits = logits.float()
    return logits - logits.logsumexp(-1, keepdim=True)


Choose = Callable[[torch.Tensor], torch.Tensor]  # log-probabilities [B, V] -> tokens [B]


@torch.no_grad()
def greedy_search(
    model: SearchModel,
    src: torch.Tensor,
    src_lengths: torch.Tensor,
    bos_id: int,
    eos_id: int,
    limits: torch.Tensor,
) -> list[Hypothesis]:
    """Batched argmax decoding; each sentence stops at eos or at its own length limit."""
    return step_by_step_search(
        model, src, src_lengths, bos_id, eos_id, limits, lambda log_probs: log_probs.argmax(-1)
    )


@torch.no_grad()
def step_by_step_search(
    model: SearchModel,
    src: torch.Tensor,
    src_lengths: torch.Tensor,
    bos_id: int,
    eos_id: int,
    limits: torch.Tensor,
    choose: Choose,
    copies: int = 1,
) -> list[Hypothesis]:
    """Extends each row by the token `choose` picks, until eos or the row's limit.

    `copies` rows decode each sentence (several samples of it); the result is sentence-major,
    copies of one sentence side by side. Scores are the model's own log-probabilities of the
    tokens picked, whatever `choose` did to pick them.
    """
    device = src.device
    state = model.init_state(model.encode(src, src_lengths))
    if copies > 1:
        state = state.select(torch.arange(src.size(0), device=device).repeat_interleave(copies))
    src_lengths = src_lengths.repeat_interleave(copies)
    limits = limits.to(device).repeat_interleave(copies)
    rows = limits.numel()
    active = torch.arange(rows, device=device)  # the rows still decoding, as the state holds them
    prev = torch.full((rows,), bos_id, dtype=torch.long, device=device)
    scores = torch.zeros(rows, device=device)
    tokens, weights = [], []
    for t in range(int(limits.max())):
        logits, state, weight = model.step(state, prev)  # only the active rows run
        log_probs = log_probabilities(logits)  # [A, V]
        chosen = choose(log_probs)
        scores[active] += log_probs.gather(1, chosen[:, None]).squeeze(1)
        # finished rows read eos and zero attention from here on; their hypotheses end before
        tokens.append(chosen.new_full((rows,), eos_id).index_copy_(0, active, chosen))
        weights.append(weight.new_zeros(rows, *weight.shape[1:]).index_copy_(0, active, weight))
        going = ((chosen != eos_id) & (t + 1 < limits[active])).nonzero().squeeze(1)
        if going.numel() == 0:
            break
        if going.numel() < active.numel():
            active, state = active[going], state.select(going)
        prev = chosen[going]
    return hypotheses_from_rows(
        torch.stack(tokens, 1), scores, torch.stack(weights, 1), src_lengths, eos_id, limits
    )


def hypotheses_from_rows(
    tokens: torch.Tensor,
    scores: torch.Tensor,
    weights: torch.Tensor,
    src_lengths: torch.Tensor,
    eos_id: int,
    limits: torch.Tensor,
) -> list[Hypothesis]:
    """tokens [N, T], scores [N], weights [N, T, H, S] -> one Hypothesis per row, cut at eos."""
    result = []
    for row, score, limit, length in zip(
        tokens.tolist(), scores.tolist(), limits.tolist(), src_lengths.tolist(), strict=True
    ):
        end = row.index(eos_id) if eos_id in row[:limit] else min(limit, len(row))
        steps = min(end + 1, len(row), limit)
        result.append(Hypothesis(row[:end], score, weights[len(result), :steps, :, :length].cpu()))
    return result
