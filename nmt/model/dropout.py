"""Dropout whose mask on a CPU costs a third of torch's.

A CPU spends most of a dropout drawing the random numbers: `nn.Dropout`'s `bernoulli_`
draws one 32-bit number per element, `rand_like` as well. Here one 64-bit draw gives the
16-bit random numbers of four elements, and an element is kept when its number is at least
p · 2^16: p is rounded to a multiple of 2^-16 (0.1 becomes 0.100006), and the kept elements
are scaled by 1 / (1 - that p), so the expectation stays exactly x. Masks come from torch's
global generator, so seeds and resumed runs repeat them. Other devices keep torch's kernel,
as does code under torch.compile, which cannot trace the 64-bit draw and generates a mask
inside its own fused kernel.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

LEVELS = 1 << 16  # a 16-bit random number per element


class Dropout(nn.Module):
    def __init__(self, p: float):
        super().__init__()
        self.p = p  # in [0, 1): the config checks it

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0:
            return x
        if x.device.type != "cpu" or torch.compiler.is_compiling():
            return F.dropout(x, self.p, training=True)  # compiled: inductor fuses its mask
        return x * keep_mask(x, self.p)

    def extra_repr(self) -> str:
        return f"p={self.p}"


def keep_mask(x: torch.Tensor, p: float) -> torch.Tensor:
    """0 or 1 / (1 - p') per element of x, 0 with probability p' = round(p · 2^16) / 2^16."""
    count = x.numel()
    words = torch.empty((count + 3) // 4, dtype=torch.int64, device=x.device)
    words.random_(-(1 << 63), (1 << 63) - 1)  # every bit random (the top value aside)
    numbers = words.view(torch.int16)[:count].view(x.shape)  # uniform over [-2^15, 2^15)
    dropped = round(p * LEVELS)
    return (numbers >= dropped - LEVELS // 2).to(x.dtype).mul_(LEVELS / (LEVELS - dropped))
