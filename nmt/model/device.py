"""Which device a model runs on: `auto` is CUDA when torch sees one, else the CPU."""

from __future__ import annotations

import platform
from pathlib import Path

import torch

from nmt.errors import UserError


def resolve_device(name: str, local_rank: int = 0, setting: str = "train.device") -> torch.device:
    """ "auto", "cpu" or "cuda" -> a torch device; `setting` names the option in errors."""
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cpu":
        return torch.device("cpu")
    if name != "cuda":
        raise UserError(f"{setting} {name!r}: choose auto, cpu or cuda.")
    if not torch.cuda.is_available():
        raise UserError(
            f"{setting} is cuda, but this torch build sees no CUDA device "
            f"(torch {torch.__version__}). Set {setting}: cpu, or auto."
        )
    return torch.device("cuda", local_rank % torch.cuda.device_count())


# bf16 gains only where the matrix products are wide enough to outweigh its casts: training
# tokens/s over fp32's on a CPU with AVX-512 BF16, by the model's embedding width: 64 (the
# demo configs) 0.77x for RNNsearch and 1.0x for the Transformer, 128 1.08x and 1.23x, 256
# 1.43x and 1.59x (docs/results.md, "bf16 training").
BF16_MIN_WIDTH = 128


def resolve_precision(name: str, device: torch.device, width: int) -> str:
    """fp32, bf16 or fp16: `auto` made definite for `device` and a model `width` wide
    (ModelConfig.width) as presumed from the device alone: bf16 where it is native and the
    model wide enough to be a candidate. On a CPU, training and search ask a measurement
    instead (nmt/translate/auto_precision.py); CTranslate2's runtime keeps this rule."""
    if name != "auto":
        return name
    return "bf16" if width >= BF16_MIN_WIDTH and native_bf16(device) else "fp32"


def native_bf16(device: torch.device) -> bool:
    """Whether `device` multiplies bf16 natively (a GPU that supports it, a CPU with AMX or
    AVX-512 BF16), where elsewhere it is emulated, hundreds of times slower."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    return cpu_has_fast_bf16()


def cpu_name(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's model name (the same on every core), or the machine's kind without one."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return platform.machine()
    for line in text.splitlines():
        if line.startswith("model name"):
            return line.partition(":")[2].strip()
    return platform.machine()


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
