"""Label-smoothed cross-entropy over real target tokens (padding contributes nothing)."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def token_loss(
    logits: torch.Tensor, targets: torch.Tensor, pad_id: int, label_smoothing: float = 0.0
) -> torch.Tensor:
    """Summed loss. logits [B, T, V], targets [B, T]; divide by the real token count yourself."""
    return F.cross_entropy(
        logits.flatten(0, 1),
        targets.flatten(),
        ignore_index=pad_id,
        label_smoothing=label_smoothing,
        reduction="sum",
    )
