"""How spread out a model's attention is over the source: the mean entropy of its attention
rows and the mean number of source positions given a non-zero weight, per target token. These
two numbers tell softmax (dense), sparsemax and entmax (a few positions) and hard attention
(exactly one) apart on a whole test set, where a plot shows one sentence."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import torch

from nmt.search import Hypothesis


@dataclass(frozen=True)
class AttentionStats:
    entropy: float  # nats; 0 for one-hot rows, log(n) for a uniform row over n positions
    nonzero: float  # source positions with a weight > 0
    tokens: int  # target tokens (eos steps included) the means are taken over


def attention_stats(hypotheses: Iterable[Hypothesis]) -> AttentionStats | None:
    """Means over every target token of the hypotheses (heads averaged within a token); None
    when there is no token at all (only blank lines)."""
    entropy, nonzero, tokens = 0.0, 0.0, 0
    for hypothesis in hypotheses:
        if hypothesis.attention is None:  # nothing reported it (CTranslate2)
            continue
        weights = hypothesis.attention.double()  # [steps, H, S_real]: padding is not in it
        if weights.numel() == 0:
            continue
        entropy -= torch.special.xlogy(weights, weights).sum(-1).mean(-1).sum().item()
        nonzero += (weights > 0).sum(-1).double().mean(-1).sum().item()
        tokens += weights.size(0)
    if tokens == 0:
        return None
    return AttentionStats(entropy / tokens, nonzero / tokens, tokens)
