"""Where training runs and in which precision.

fp32: everything in float32. bf16, as mixed-precision training is done (Micikevicius et
al. 2018, with bfloat16's range there is no loss scaling): a bfloat16 copy of the model
computes the forward and backward passes, activations included, so matrix products run on
the bf16 units and the elementwise work moves half the bytes; its gradients are copied to
the float32 master weights, which the optimizer (its state float32) steps, and the copy
takes them back. Both copies live in one flat buffer each, so those copies are one each
per step. Float32 stays where sums of many small terms need it: the loss (its softmax and
sums, nmt/model/loss.py), and the statistics of layer norm and softmax, which torch's
bf16 kernels keep in float32. fp16 (CUDA only) keeps autocast with a gradient scaler.

`auto` is bf16 where the device multiplies bf16 natively (a CUDA GPU that supports it, a
CPU with AMX or AVX-512 BF16), the model is wide enough to be a candidate
(nmt/model/device.py) and, on a CPU, a probe of its own training step finds bf16 faster
(nmt/translate/auto_precision.py); fp32 elsewhere. A run resumed under `auto` on another
device keeps the precision it trained in where that device computes it natively
(`run_precision`).
"""

from __future__ import annotations

import contextlib
import copy
import logging
from collections.abc import Callable

import torch
from torch import nn

from nmt.errors import UserError
from nmt.model.device import cpu_has_fast_bf16, native_bf16, resolve_precision
from nmt.model.master_weights import MasterWeights

log = logging.getLogger("nmt")

DTYPES = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}


def run_precision(
    asked: str, device: torch.device, trained: str | None, auto: Callable[[], str]
) -> str:
    """The precision a run trains in on `device`: train.precision (`asked`), with `auto()`
    (nmt/translate/auto_precision.py) where it is auto. Resumed under auto from a run that
    trained in `trained`, it keeps that where the device computes it natively (fp32
    everywhere), and otherwise continues in what auto makes of this device, with a notice:
    the master weights and the optimizer's state are float32 in every precision, so only
    the arithmetic changes."""
    if asked != "auto":
        return asked
    if trained == "fp32" or trained == "bf16" and native_bf16(device):
        return trained
    chosen = auto()
    if trained is None or trained == chosen:
        return chosen
    log.info(
        "notice: this run trained in %s under train.precision auto, which %s does not compute "
        "natively; it continues in %s (the master weights are float32 in both).",
        trained,
        "this CPU" if device.type == "cpu" else "this GPU",
        chosen,
    )
    return chosen


class Precision:
    """The model that computes (a bf16 copy, or the model itself), and what turns its
    gradients into an update of the master weights (`scaler`: GradScaler's calls)."""

    def __init__(self, name: str, device: torch.device, width: int):
        name = resolve_precision(name, device, width)
        if name == "fp16" and device.type != "cuda":
            raise UserError(
                "train.precision fp16 needs a CUDA device (it relies on a GradScaler and fast "
                "half-precision kernels); on the CPU use bf16 or fp32."
            )
        if name == "bf16" and device.type == "cpu" and not cpu_has_fast_bf16():
            log.warning(
                "warning: train.precision bf16 on a CPU without AMX or AVX-512 BF16: its bf16 "
                "matrix products are emulated and can be hundreds of times slower than fp32. "
                "Use train.precision: fp32 (or auto) here."
            )
        if name == "bf16" and device.type == "cuda" and not torch.cuda.is_bf16_supported():
            raise UserError("train.precision bf16: this GPU does not support bfloat16; use fp16.")
        self.name = name
        self.device = device
        self.dtype = DTYPES[name]
        self.scaler: torch.amp.GradScaler | MasterWeights = torch.amp.GradScaler(
            device.type, enabled=name == "fp16"
        )

    def computing(self, model: nn.Module) -> nn.Module:
        """The model whose forward and backward passes train `model` (the master)."""
        if self.name != "bf16":
            return model
        self.scaler = MasterWeights(model, self.dtype)
        return self.scaler.compute

    def inference(self, model: nn.Module) -> nn.Module:
        """`model` (the master, or a moving average of it) as it translates in this
        precision: the bf16 copy that trains, or a bf16 copy of the average."""
        if not isinstance(self.scaler, MasterWeights):
            return model
        if model is self.scaler.master:
            return self.scaler.compute
        return copy.deepcopy(model).to(self.dtype)

    def autocast(self) -> contextlib.AbstractContextManager:
        if self.name != "fp16":
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=self.dtype)
