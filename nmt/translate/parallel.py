"""Decoding batches side by side, one torch thread each.

A search is many small operations per target step, which parallelise poorly inside torch: two
single-threaded searches on two cores translate more sentences per second than one search on
both. `nmt translate`, `nmt eval` and the server's micro-batcher decode that way.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import torch

Item = TypeVar("Item")
Result = TypeVar("Result")
AUTOCAST_DEVICES = ("cpu", "cuda")


def one_torch_thread() -> None:
    """Runs on each decoding thread. torch's thread count is the process's, whichever thread
    sets it: whoever calls this restores the count when its threads are done."""
    torch.set_num_threads(1)


def callers_autocast() -> Callable[[], contextlib.AbstractContextManager]:
    """The calling thread's autocast (it is per thread, so a worker thread starts without it),
    as a context to enter in another thread."""
    active = [
        (device, torch.get_autocast_dtype(device))
        for device in AUTOCAST_DEVICES
        if torch.is_autocast_enabled(device)
    ]

    def enter() -> contextlib.AbstractContextManager:
        stack = contextlib.ExitStack()
        for device, dtype in active:
            stack.enter_context(torch.autocast(device, dtype=dtype))
        return stack

    return enter


def parallel_map(
    function: Callable[[Item], Result], items: Sequence[Item], workers: int
) -> list[Result]:
    """[function(item) for item in items], `workers` at a time, each on one torch thread and
    under the caller's autocast; in order. One item, or one worker, runs on the calling
    thread with its torch threads. The process's torch thread count is left as it was."""
    if workers <= 1 or len(items) <= 1:
        return [function(item) for item in items]
    autocast = callers_autocast()

    def run(item: Item) -> Result:
        with autocast():
            return function(item)

    threads = torch.get_num_threads()
    try:
        with ThreadPoolExecutor(
            min(workers, len(items)), "nmt-decode", initializer=one_torch_thread
        ) as pool:
            return list(pool.map(run, items))
    finally:
        torch.set_num_threads(threads)
