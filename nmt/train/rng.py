"""Every random number generator's state: saved into last.pt, restored on resume, and kept
untouched by work (validation) that must not shift the training streams."""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator

import torch


def rng_state() -> dict:
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else []
    return {"python": random.getstate(), "torch": torch.get_rng_state(), "cuda": cuda}


def set_rng_state(state: dict) -> None:
    random.setstate(_as_tuple(state["python"]))
    torch.set_rng_state(state["torch"])
    if state["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _as_tuple(value):
    """random.setstate needs tuples where a round trip may have left lists."""
    return tuple(_as_tuple(v) for v in value) if isinstance(value, list | tuple) else value


@contextlib.contextmanager
def rng_preserved() -> Iterator[None]:
    """Whatever the block draws, the generators continue afterwards as if it never ran."""
    state = rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
