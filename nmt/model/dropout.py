"""Dropout whose mask on a CPU comes from `rand`, not `bernoulli_`.

Same distribution and the same generator (so seeds and resumed runs repeat it), but the CPU
`bernoulli_` behind `nn.Dropout` is slow: it made dropout about 3% of a training step, this
mask half that. Other devices keep torch's own kernel.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class Dropout(nn.Module):
    def __init__(self, p: float):
        super().__init__()
        self.p = p  # in [0, 1): the config checks it

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0:
            return x
        if x.device.type != "cpu":
            return F.dropout(x, self.p, training=True)
        keep = torch.rand_like(x).ge_(self.p).mul_(1 / (1 - self.p))  # 0 or 1 / (1 - p)
        return x * keep

    def extra_repr(self) -> str:
        return f"p={self.p}"
