"""An exponential moving average of the weights (`train.ema_decay`), as OpenNMT-py and fairseq
keep one: validation, best.pt, the step checkpoints and the final test use the average, which
smooths the last steps' noise; last.pt keeps the raw weights to resume from beside it.

The decay warms up as in TensorFlow's ExponentialMovingAverage, min(decay, (1 + n) / (10 + n))
after n updates, so the random initial weights fade at once instead of weighing decay ** n.
One average is kept, on the process that validates and saves.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from nmt.model.adapters import load_trained_state, trained_state


def ema_decay_at(decay: float, updates: int) -> float:
    """The decay the `updates`-th update (counting from 1) uses."""
    return min(decay, (1 + updates) / (10 + updates))


class WeightAverage:
    """average <- d * average + (1 - d) * weights after each update; buffers are copied."""

    def __init__(self, model: nn.Module, decay: float, updates: int = 0):
        self.decay = decay
        self.updates = updates
        self.model = copy.deepcopy(model).eval().requires_grad_(False)

    @torch.no_grad()
    def update(self, model: nn.Module) -> None:
        self.updates += 1
        weight = 1 - ema_decay_at(self.decay, self.updates)
        averaged = dict(self.model.named_parameters())
        learning = [(name, v) for name, v in model.named_parameters() if v.requires_grad]
        pairs = [(averaged[name], value) for name, value in learning]
        floating = [(a, v) for a, v in pairs if a.is_floating_point()]
        if floating:
            torch._foreach_lerp_([a for a, _ in floating], [v for _, v in floating], weight)
        for mine, theirs in zip(self.model.buffers(), model.buffers(), strict=True):
            mine.copy_(theirs)

    def state_dict(self) -> dict:
        return {"weights": trained_state(self.model), "updates": self.updates}

    def load_state_dict(self, state: dict) -> None:
        load_trained_state(self.model, state["weights"])
        self.updates = state["updates"]
