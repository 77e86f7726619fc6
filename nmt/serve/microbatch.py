"""Requests that arrive together are decoded together, on worker threads that own torch.

A search costs about the same for 1 sentence as for 30 (each step is a handful of matrix
products whose width is the batch), so many small concurrent requests are only fast when
they share batches. Each request becomes a job in a queue. Once free, a worker waits for
companions until the queue holds its share of the items the workers' previous batches had
(a busy server's clients come back together), but no longer than `window` seconds after the
oldest job arrived, or a tenth of its previous batch's decoding time after it became free (clients
answered together come back over a few milliseconds each: waiting for them merges two
half-full batches into one, and never costs more than a tenth of the throughput). A lone
client therefore waits for nothing. It then takes its share of the queue (all of it when the
other workers are busy), at most `max_batch` items, and decodes them grouped by key
(a model and its decode settings), on the worker's own thread: the event loop stays free to
accept and answer requests meanwhile.

With several workers (one per core, each search on one torch thread), batches are decoded
side by side: a search's many small per-step operations parallelise poorly inside torch, so
two single-threaded searches on two cores translate up to 40% more sentences per second
than one search on both.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from nmt.errors import UserError

log = logging.getLogger(__name__)

MAX_PATIENCE = 0.1  # seconds: the longest a free worker waits for a previous batch's clients
Run = Callable[[Hashable, list[Any]], Sequence[Any]]  # (key, items) -> one result per item


@dataclass
class _Job:
    key: Hashable
    items: list[Any]
    future: asyncio.Future
    arrived: float  # loop time


@dataclass
class MicroBatcher:
    run: Run  # called on a worker thread, never on the event loop
    window: float = 0.01  # the longest a job waits for companions
    max_batch: int = 64  # items per batch; a larger job is still run whole
    workers: int = 1  # batches decoded at once, each on its own thread
    setup: Callable[[], None] | None = None  # runs once on each worker thread (torch threads)
    _queue: deque[_Job] = field(default_factory=deque, init=False)
    _queued: int = field(default=0, init=False)  # items in the queue
    _arrival: asyncio.Event = field(default_factory=asyncio.Event, init=False)
    _last_sizes: list[int] = field(default_factory=list, init=False)  # each worker's last batch
    _idle: int = field(default=0, init=False)  # workers waiting for companions
    _tasks: list[asyncio.Task] = field(default_factory=list, init=False)
    _executor: ThreadPoolExecutor | None = field(default=None, init=False)

    def start(self) -> None:
        """Starts the workers; call from the running event loop."""
        self._executor = ThreadPoolExecutor(self.workers, "nmt-decode", initializer=self.setup)
        loop = asyncio.get_running_loop()
        self._last_sizes = [1] * self.workers
        self._tasks = [loop.create_task(self._work(number)) for number in range(self.workers)]

    async def stop(self) -> None:
        """Stops after the current batches; jobs still queued are cancelled."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        while self._queue:
            self._queue.popleft().future.cancel()
        if self._executor is not None:
            self._executor.shutdown(wait=True)

    async def submit(self, key: Hashable, items: list[Any]) -> list[Any]:
        """The results of `items`, in order, once a batch holding them has run."""
        if not items:
            return []
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._queue.append(_Job(key, items, future, loop.time()))
        self._queued += len(items)
        self._arrival.set()
        return await future

    async def _work(self, number: int) -> None:
        last_seconds = 0.0  # how long this worker's previous batch took to decode
        while True:
            self._idle += 1
            try:
                await self._companions(last_seconds)
            finally:
                self._idle -= 1
            # Workers that are free split the queue between them; a busy one gets no share.
            share = min(self.max_batch, -(-self._queued // (self._idle + 1)))
            jobs = [self._queue.popleft()]
            size = len(jobs[0].items)
            while self._queue and size + len(self._queue[0].items) <= share:
                jobs.append(self._queue.popleft())
                size += len(jobs[-1].items)
            self._queued -= size
            started = asyncio.get_running_loop().time()
            await self._run_batch([job for job in jobs if not job.future.done()])
            self._last_sizes[number] = size
            last_seconds = asyncio.get_running_loop().time() - started

    async def _companions(self, last_seconds: float) -> None:
        """Returns once the queue holds this worker's share of the items the workers' last
        batches had, or has waited long enough."""
        loop = asyncio.get_running_loop()
        target = min(-(-sum(self._last_sizes) // self.workers), self.max_batch)
        patience = loop.time() + min(last_seconds / 10, MAX_PATIENCE)
        while not self._queue or self._queued < target:
            remaining = None
            if self._queue:
                deadline = max(self._queue[0].arrived + self.window, patience)
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return
            self._arrival.clear()
            with contextlib.suppress(TimeoutError, asyncio.TimeoutError):
                await asyncio.wait_for(self._arrival.wait(), remaining)

    async def _run_batch(self, jobs: list[_Job]) -> None:
        groups: dict[Hashable, list[_Job]] = {}
        for job in jobs:
            groups.setdefault(job.key, []).append(job)
        for key, group in groups.items():
            try:
                await self._run_group(key, group)
            except Exception as error:  # one bad job must not fail its neighbours: retry alone
                if len(group) == 1:
                    _settle(group[0].future, error=error)
                    continue
                for job in group:
                    try:
                        await self._run_group(key, [job])
                    except Exception as alone:
                        _settle(job.future, error=alone)

    async def _run_group(self, key: Hashable, group: list[_Job]) -> None:
        items = [item for job in group for item in job.items]
        loop = asyncio.get_running_loop()
        results = await loop.run_in_executor(self._executor, self.run, key, items)
        start = 0
        for job in group:
            _settle(job.future, result=list(results[start : start + len(job.items)]))
            start += len(job.items)


def _settle(future: asyncio.Future, result: Any = None, error: Exception | None = None) -> None:
    """Answers a job unless its request has gone (client disconnected: future cancelled).
    A UserError is the request's own (answered with a 4xx): one line, no traceback."""
    if future.done():
        return
    if isinstance(error, UserError):
        log.info("request refused: %s", error)
        future.set_exception(error)
    elif error is not None:
        log.error("decoding failed: %r", error, exc_info=error)
        future.set_exception(error)
    else:
        future.set_result(result)
