"""Forced decoding: the log-probability a model gives each token of a given target, step by step
through the same `encode` / `init_state` / `step` calls as search, so a translation's forced
score is exactly the score search would give it (an ensemble's included)."""

from __future__ import annotations

import torch

from nmt.search.hypothesis import SearchModel, log_probabilities


@torch.no_grad()
def forced_log_probs(
    model: SearchModel,
    src: torch.Tensor,
    src_lengths: torch.Tensor,
    targets: torch.Tensor,
    start: int,
) -> torch.Tensor:
    """targets [B, T] (each row its tokens and eos, then any padding) -> [B, T]: the
    log-probability of each target token given the source and the tokens before it. Padding
    positions get whatever the model says; mask them yourself."""
    state = model.init_state(model.encode(src, src_lengths), need_weights=False)
    prev = torch.full((src.size(0),), start, dtype=torch.long, device=src.device)
    columns = []
    for step in range(targets.size(1)):
        logits, state, _ = model.step(state, prev)
        token = targets[:, step]
        columns.append(log_probabilities(logits).gather(1, token[:, None]).squeeze(1))
        prev = token
    return (
        torch.stack(columns, 1) if columns else targets.new_zeros(targets.shape, dtype=torch.float)
    )
