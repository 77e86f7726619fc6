"""How many cores this process may use: one answer for training, SentencePiece and decoding."""

from __future__ import annotations

import os


def available_cores() -> int:
    """The cores this process may run on: its affinity where the OS has one, as Linux does (a
    container limited by a cpuset sees its own cores, not the machine's); elsewhere, as on
    macOS, all of them."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
