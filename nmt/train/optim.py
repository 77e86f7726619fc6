"""The optimizer, and the learning rate as a pure function of the step.

`lr_at(step, train, reductions)` is the whole schedule: the trainer sets its value on every
param group before each update, so the schedule has no state of its own beyond the count
of plateau reductions, which the trainer keeps (and checkpoints) with its progress.

Steps count updates already done: `lr_at(0, ...)` is the rate of the first update. Every
schedule first warms up linearly over `warmup_steps` updates, from lr / warmup_steps to lr
(inverse_sqrt is the exception only in that it then keeps decaying); after warmup:

- constant:      lr
- plateau:       lr * plateau_factor ** reductions (one reduction per `plateau_patience`
                 validations in a row without improvement), never below min_lr
- inverse_sqrt:  lr * sqrt(w / (step + 1)) with w = max(warmup_steps, 1), never below min_lr
- cosine:        from lr down to min_lr over the updates left until train.max_steps
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import torch

from nmt.config import TrainConfig

FUSED_ADAM_DEVICES = ("cpu", "cuda")


def build_optimizer(parameters: Iterable[torch.nn.Parameter], train: TrainConfig):
    """Adam; the fused kernel (one pass over all parameters) where the device has one, which
    on a CPU makes the update several times faster than the per-tensor loop."""
    parameters = list(parameters)
    fused = all(p.device.type in FUSED_ADAM_DEVICES for p in parameters) or None
    return torch.optim.Adam(parameters, lr=lr_at(0, train), fused=fused)


def lr_at(step: int, train: TrainConfig, reductions: int = 0) -> float:
    """The learning rate of update number step + 1."""
    done, warmup = step + 1, train.warmup_steps
    if train.schedule == "inverse_sqrt":
        scale = max(warmup, 1)
        return max(train.lr * min(done / scale, math.sqrt(scale / done)), _floor(done, train))
    if done < warmup:
        return train.lr * done / warmup
    if train.schedule == "plateau":
        return max(train.lr * train.plateau_factor**reductions, train.min_lr)
    if train.schedule == "cosine":
        progress = min(1.0, (done - warmup) / max(train.max_steps - warmup, 1))
        return train.min_lr + (train.lr - train.min_lr) * 0.5 * (1 + math.cos(math.pi * progress))
    return train.lr


def _floor(done: int, train: TrainConfig) -> float:
    """min_lr applies once warmup is over; warming up may start below it."""
    return train.min_lr if done >= train.warmup_steps else 0.0


def reduces_on_plateau(validations_since_best: int, patience: int) -> bool:
    """True after each run of `patience` validations in a row without a new best."""
    return validations_since_best > 0 and validations_since_best % patience == 0


def set_lr(optimizer: torch.optim.Optimizer, lr: float) -> None:
    for group in optimizer.param_groups:
        group["lr"] = lr
