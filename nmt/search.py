"""Decoding, written only against encode / init_state / step / DecoderState.select."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from nmt.model import Seq2Seq


@dataclass
class Hypothesis:
    tokens: list[int]  # without bos and eos
    score: float  # sum of token log-probabilities, eos included when produced
    attention: torch.Tensor  # [steps, H, S_real]: one row per output token, eos included


def max_lengths(src_lengths: torch.Tensor, ratio: float, extra: int) -> torch.Tensor:
    """Output length limit per sentence, relative to its source length. [B] -> [B]."""
    return (src_lengths.double() * ratio).ceil().long() + extra


@torch.no_grad()
def greedy_search(
    model: Seq2Seq,
    src: torch.Tensor,
    src_lengths: torch.Tensor,
    bos_id: int,
    eos_id: int,
    limits: torch.Tensor,
) -> list[Hypothesis]:
    """Batched argmax decoding; each sentence stops at eos or at its own length limit."""
    batch = src.size(0)
    encoded = model.encode(src, src_lengths)
    state = model.init_state(encoded)
    prev = torch.full((batch,), bos_id, dtype=torch.long, device=src.device)
    finished = torch.zeros(batch, dtype=torch.bool, device=src.device)
    limits = limits.to(src.device)
    tokens, scores, weights = [], [], []
    for t in range(int(limits.max())):
        logits, state, weight = model.step(state, prev)
        log_probs = logits.float().log_softmax(-1)
        best, prev = log_probs.max(-1)
        tokens.append(prev)
        scores.append(best.masked_fill(finished, 0.0))
        weights.append(weight)
        finished |= (prev == eos_id) | (t + 1 >= limits)
        if bool(finished.all()):
            break
    return _hypotheses(
        torch.stack(tokens, 1),
        torch.stack(scores, 1),
        torch.stack(weights, 1),
        src_lengths,
        eos_id,
        limits,
    )


def _hypotheses(
    tokens: torch.Tensor,
    scores: torch.Tensor,
    weights: torch.Tensor,
    src_lengths: torch.Tensor,
    eos_id: int,
    limits: torch.Tensor,
) -> list[Hypothesis]:
    """tokens/scores [B, T], weights [B, T, H, S] -> one Hypothesis per row, cut at eos."""
    result = []
    for row, limit, length in zip(
        tokens.tolist(), limits.tolist(), src_lengths.tolist(), strict=True
    ):
        end = row.index(eos_id) if eos_id in row[:limit] else min(limit, len(row))
        steps = min(end + 1, len(row), limit)
        index = len(result)
        result.append(
            Hypothesis(
                row[:end],
                float(scores[index, :steps].sum()),
                weights[index, :steps, :, :length].cpu(),
            )
        )
    return result
