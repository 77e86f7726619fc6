"""Several processes, one model: torchrun's environment, DDP and the small rank helpers.

Under `torchrun --nproc_per_node N -m nmt train ...` every process trains on its own share
of each epoch's batches (rank r takes batches r, r + N, ... of the deterministic batch list,
the same number per rank), DistributedDataParallel averages the gradients, and only rank 0
validates and writes logs, metrics and checkpoints. Outside torchrun `Ranks()` stands for
one process, and every helper below is a no-op.

Agreement between ranks (stop now? how many tokens in this update?) goes through a gloo
group on the CPU, so it never waits for the GPU.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import torch
import torch.distributed as dist
from torch import nn

T = TypeVar("T")


@dataclass
class Ranks:
    rank: int = 0
    world: int = 1
    local_world: int = 1
    control: Any = None  # gloo process group for small CPU-side collectives

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world > 1

    def wrap(self, model: nn.Module, device: torch.device) -> nn.Module:
        """The module that computes gradients: DDP around `model`, or `model` itself."""
        if not self.distributed:
            return model
        from torch.nn.parallel import DistributedDataParallel

        device_ids = [device.index] if device.type == "cuda" else None
        return DistributedDataParallel(model, device_ids=device_ids)

    def shard(self, batches: Iterable[T]) -> Iterator[T]:
        """This rank's batches r, r + N, ...; a last incomplete group of N is dropped."""
        if not self.distributed:
            yield from batches
            return
        group: list[T] = []
        for batch in batches:
            group.append(batch)
            if len(group) == self.world:
                yield group[self.rank]
                group = []

    def gradient_sync(self, network: nn.Module, last: bool) -> contextlib.AbstractContextManager:
        """DDP all-reduces gradients only on the last micro-batch of an accumulated update."""
        if self.distributed and not last:
            return network.no_sync()
        return contextlib.nullcontext()

    def total(self, value: int) -> int:
        """Sum of an integer over all ranks."""
        return int(self._all_reduce(value, dist.ReduceOp.SUM))

    def most(self, value: int) -> int:
        """Maximum of an integer over all ranks."""
        return int(self._all_reduce(value, dist.ReduceOp.MAX))

    def _all_reduce(self, value: int, op) -> int:
        if not self.distributed:
            return value
        tensor = torch.tensor([value], dtype=torch.long)
        dist.all_reduce(tensor, op=op, group=self.control)
        return int(tensor)

    def broadcast(self, value: T) -> T:
        """Rank 0's value, on every rank."""
        if not self.distributed:
            return value
        box = [value]
        dist.broadcast_object_list(box, src=0, group=self.control)
        return box[0]

    def gather(self, value: T) -> list[T]:
        """Every rank's value, in rank order (on every rank)."""
        if not self.distributed:
            return [value]
        values: list[Any] = [None] * self.world
        dist.all_gather_object(values, value, group=self.control)
        return values

    def barrier(self) -> None:
        if self.distributed:
            dist.barrier(group=self.control)

    @contextlib.contextmanager
    def main_first(self) -> Iterator[None]:
        """Rank 0 runs the block first (e.g. to fill a cache); the others then reuse its work."""
        if not self.is_main:
            self.barrier()
        try:
            yield
        finally:
            if self.is_main:
                self.barrier()


def start_ranks(device: torch.device) -> Ranks:
    """Joins the process group torchrun describes in the environment (gloo on CPU, nccl on CUDA)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world == 1:
        return Ranks()
    backend = "nccl" if device.type == "cuda" else "gloo"
    if device.type == "cuda":
        torch.cuda.set_device(device)
    if not dist.is_initialized():
        dist.init_process_group(backend)
    control = dist.new_group(backend="gloo") if backend != "gloo" else None
    return Ranks(
        rank=dist.get_rank(),
        world=dist.get_world_size(),
        local_world=int(os.environ.get("LOCAL_WORLD_SIZE", world)),
        control=control,
    )


def local_rank() -> int:
    return int(os.environ.get("LOCAL_RANK", "0"))


def stop_ranks(ranks: Ranks) -> None:
    if ranks.distributed and dist.is_initialized():
        dist.destroy_process_group()
