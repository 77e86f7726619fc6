"""Which device a model runs on: `auto` is CUDA when torch sees one, else the CPU."""

from __future__ import annotations

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
    (ModelConfig.width)."""
    if name != "auto":
        return name
    if width < BF16_MIN_WIDTH:
        return "fp32"
    if device.type == "cuda":
        return "bf16" if torch.cuda.is_bf16_supported() else "fp32"
    return "bf16" if cpu_has_fast_bf16() else "fp32"


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
