"""Decoding batches side by side, one torch thread each.

A search is many small operations per target step, which parallelise poorly inside torch: two
single-threaded searches on two cores translate more sentences per second than one search on
both. `nmt translate`, `nmt eval` and the server's micro-batcher decode that way.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")


def available_cores() -> int:
    """The cores this process may run on (its affinity where the OS has one, as Linux does;
    macOS has none, so there: all of them)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def one_torch_thread() -> None:
    """Runs on each decoding thread: torch's thread count is set per thread under OpenMP."""
    import torch

    torch.set_num_threads(1)


def parallel_map(
    function: Callable[[Item], Result], items: Sequence[Item], workers: int
) -> list[Result]:
    """[function(item) for item in items], `workers` at a time, each on one torch thread; in
    order. One item, or one worker, runs on the calling thread with its torch threads."""
    if workers <= 1 or len(items) <= 1:
        return [function(item) for item in items]
    with ThreadPoolExecutor(
        min(workers, len(items)), "nmt-decode", initializer=one_torch_thread
    ) as pool:
        return list(pool.map(function, items))
