"""A bf16 model behind float32 master weights, as mixed-precision training keeps them: the
bf16 copy computes the forward and backward passes, its gradients step the float32 weights
(an optimizer's state float32 too), and the copy takes them back. Each side lives in one
flat buffer, so each of those copies is one. Training (nmt/train/precision.py) and the
probe that times bf16 against fp32 (nmt/translate/auto_precision.py) step through it.
"""

from __future__ import annotations

import copy

import torch
from torch import nn


class MasterWeights:
    """Float32 master weights behind a bf16 model, with GradScaler's interface so that the
    training step reads the same in every precision: `unscale_` brings the bf16 gradients
    to the master weights, `step` steps them and copies them back to the bf16 model."""

    def __init__(self, master: nn.Module, dtype: torch.dtype):
        self.master, self.compute = master, copy.deepcopy(master).to(dtype)
        # a frozen base (train.adapters) keeps no master copy: only what learns is stepped
        masters = [p for p in master.parameters() if p.requires_grad]
        computes = [p for p in self.compute.parameters() if p.requires_grad]
        self.master_data, self.master_grad = _flattened(masters)
        self.compute_data, self.compute_grad = _flattened(computes)
        self.master_params = masters

    def scale(self, loss: torch.Tensor) -> torch.Tensor:
        return loss

    def unscale_(self, optimizer: torch.optim.Optimizer) -> None:
        """The bf16 gradients, as float32, become the master weights' (one copy); the
        bf16 ones are zeroed for the next step."""
        self.master_grad.copy_(self.compute_grad)
        self.compute_grad.zero_()
        views = _views(self.master_grad, self.master_params)
        for parameter, grad in zip(self.master_params, views, strict=True):
            parameter.grad = grad

    def step(self, optimizer: torch.optim.Optimizer) -> None:
        optimizer.step()
        self.sync()

    def sync(self) -> None:
        """The bf16 model takes the master weights (one copy)."""
        with torch.no_grad():
            self.compute_data.copy_(self.master_data)

    def update(self) -> None:
        pass

    def is_enabled(self) -> bool:
        return False

    def get_scale(self) -> float:
        return 1.0

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        """Called on resume once the master weights are restored: the bf16 model takes
        them."""
        self.sync()


def _flattened(parameters: list[nn.Parameter]) -> tuple[torch.Tensor, torch.Tensor]:
    """Moves the parameters' data into one flat buffer, and gives each a gradient that is
    a view of another; the two buffers."""
    first = parameters[0]
    total = sum(p.numel() for p in parameters)
    data = first.new_empty(total)
    grad = first.new_zeros(total)
    views = _views(data, parameters)
    with torch.no_grad():
        for parameter, view in zip(parameters, views, strict=True):
            view.copy_(parameter)
            parameter.data = view
    for parameter, view in zip(parameters, _views(grad, parameters), strict=True):
        parameter.grad = view
    return data, grad


def _views(flat: torch.Tensor, parameters: list[nn.Parameter]) -> list[torch.Tensor]:
    """Each parameter's shape as a view of its stretch of `flat`."""
    views, start = [], 0
    for parameter in parameters:
        views.append(flat[start : start + parameter.numel()].view_as(parameter))
        start += parameter.numel()
    return views
