"""Which device a model runs on: `auto` is CUDA when torch sees one, else the CPU."""

from __future__ import annotations

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
