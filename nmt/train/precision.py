"""Where training runs and in which precision: the device, autocast and fp16's grad scaler.

fp32 is the default everywhere. bf16 runs the forward pass under autocast on CPU or CUDA
(parameters, optimizer state and the loss stay fp32); fp16 adds a GradScaler and is CUDA-only.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path

import torch

from nmt.errors import UserError

log = logging.getLogger("nmt")

DTYPES = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}


class Precision:
    """Autocast for the forward pass and a grad scaler (a no-op unless fp16)."""

    def __init__(self, name: str, device: torch.device):
        if name == "fp16" and device.type != "cuda":
            raise UserError(
                "train.precision fp16 needs a CUDA device (it relies on a GradScaler and fast "
                "half-precision kernels); on the CPU use bf16 or fp32."
            )
        if name == "bf16" and device.type == "cpu" and not cpu_has_fast_bf16():
            log.warning(
                "warning: train.precision bf16 on a CPU without AMX or AVX-512 BF16: its bf16 "
                "matrix products are emulated and can be hundreds of times slower than fp32. "
                "Use train.precision: fp32 here."
            )
        if name == "bf16" and device.type == "cuda" and not torch.cuda.is_bf16_supported():
            raise UserError("train.precision bf16: this GPU does not support bfloat16; use fp16.")
        self.name = name
        self.device = device
        self.dtype = DTYPES[name]
        self.scaler = torch.amp.GradScaler(device.type, enabled=name == "fp16")

    def autocast(self) -> contextlib.AbstractContextManager:
        if self.dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=self.dtype)


def cpu_has_fast_bf16(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """True when the CPU has native bf16 matrix instructions (AMX or AVX-512 BF16).

    torch.backends.cpu.get_cpu_capability() reports the vector ISA (e.g. AVX2, AVX512) but
    not bf16 support, so the kernel's CPU flags decide; without /proc/cpuinfo, say no.
    """
    try:
        text = cpuinfo.read_text()
    except OSError:
        return False
    flags = set()
    for line in text.splitlines():
        if line.startswith("flags"):
            flags.update(line.partition(":")[2].split())
    return bool(flags & {"amx_bf16", "avx512_bf16"})
