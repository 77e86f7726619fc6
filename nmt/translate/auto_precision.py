"""`precision: auto` made definite by measurement: bf16 only where it trains this model
faster on this machine.

A CPU with AVX-512 BF16 multiplies bf16 at 2.0-2.4x fp32's rate and one with AMX at 6.7-9x,
but a bf16 step also casts, copies and runs elementwise work that fp32 does not, so whether a
model gains depends on its shapes and on the CPU: RNNsearch trained 1.5x faster in bf16 than
in fp32 on an AMD EPYC with AVX-512 BF16 and 16% slower on an Intel Xeon with AMX. So where
bf16 is native and the model wide enough to be a candidate (nmt/model/device.py), `auto`
times the model's own training step (forward, backward and the update, through the master
weights in bf16) on a batch of its training size (train.batch_tokens, random pieces) in both
precisions, alternating, and takes bf16 only
where it is faster by MARGIN. The probe takes seconds; its answer is kept per CPU, torch
version, thread count and model shape (PROBE_FILE in the cache directory), so a rerun, a
resume and search under `--precision auto` reuse it. A CUDA GPU with bf16 takes it without
a probe.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from nmt.config import Experiment, config_to_dict
from nmt.data.splits import cache_dir
from nmt.data.tokenizer import Tokenizer
from nmt.model.device import cpu_name, resolve_precision
from nmt.model.master_weights import MasterWeights
from nmt.model.seq2seq import Seq2Seq, build_model
from nmt.outputs import write_atomically

log = logging.getLogger("nmt")

PROBE_FILE = "precision.json"
MARGIN = 1.05  # bf16 must be this much faster; within it fp32, exact and the smaller
# Pieces a sentence, one length a round, the first round warming up: as in training, each
# step's batch has a shape of its own, so the cost of preparing kernels for a new shape
# (bf16's is the greater) counts as it does there.
LENGTHS = (20, 24, 28, 32, 36)
Batch = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]


@dataclass(frozen=True)
class StepTimes:
    """Median seconds of one forward and backward pass in each precision."""

    fp32: float
    bf16: float

    @property
    def choice(self) -> str:
        return "bf16" if self.fp32 > self.bf16 * MARGIN else "fp32"


Probe = Callable[[Seq2Seq, int, tuple[int, int]], StepTimes]


def auto_precision(
    config: Experiment, tokenizer: Tokenizer, device: torch.device, probe: Probe | None = None
) -> str:
    """fp32 or bf16 for training (and search with) `config`'s model under `auto` on
    `device`: the presumed answer where it is no question (fp32 where bf16 is emulated or
    the model narrow, bf16 on a GPU), else the cached or freshly measured one."""
    presumed = resolve_precision("auto", device, config.model.width)
    if presumed == "fp32" or device.type != "cpu":
        return presumed
    path = cache_dir(config.data) / PROBE_FILE
    key = probe_key(config, tokenizer)
    known = _read(path).get(key)
    if known in ("fp32", "bf16"):
        return known
    with torch.random.fork_rng(devices=[]):  # the run's own weights and dropout as without
        model = build_model(config.model, tokenizer.src, tokenizer.tgt)
        sizes = (tokenizer.src.size, tokenizer.tgt.size)
        times = (probe or time_steps)(model, config.train.batch_tokens, sizes)
    log.info(
        "precision auto: a training step of this model takes %.0f ms in fp32 and %.0f ms in "
        "bf16 on this CPU, so it computes in %s (kept in %s for this CPU and model)",
        times.fp32 * 1000,
        times.bf16 * 1000,
        times.choice,
        path,
    )
    _write(path, key, times.choice)
    return times.choice


def probe_key(config: Experiment, tokenizer: Tokenizer) -> str:
    """What the answer depends on: the CPU, torch, its threads, the model's shape and the
    batch it trains on."""
    shape = {
        "cpu": cpu_name(),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "model": config_to_dict(config)["model"],
        "vocab": [tokenizer.src.size, tokenizer.tgt.size],
        "batch_tokens": config.train.batch_tokens,
    }
    return hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()[:24]


def time_steps(model: Seq2Seq, batch_tokens: int, sizes: tuple[int, int]) -> StepTimes:
    """A training step of `model` on a batch of random pieces (vocabularies of `sizes`,
        source and target) holding `batch_tokens` target pieces, timed as training takes it in
        each precision: forward and backward, then Adam's update (fused, as nmt/train/optim.py
        builds it; a learning rate of 0 leaves the weights as they are), in bf16 through the
        float32 master weights; alternating, so that a change of the machine's pace meets both,
    one batch shape a round (LENGTHS)."""
    generator = torch.Generator().manual_seed(0)
    batches = [_batch(length, batch_tokens, sizes, generator) for length in LENGTHS]
    master = copy.deepcopy(model).train()
    weights = MasterWeights(master, torch.bfloat16)
    adam = {
        "fp32": torch.optim.Adam(model.train().parameters(), lr=0.0, fused=True),
        "bf16": torch.optim.Adam(master.parameters(), lr=0.0, fused=True),
    }

    def fp32(batch: Batch) -> None:
        model(*batch).backward()
        adam["fp32"].step()
        adam["fp32"].zero_grad(set_to_none=True)

    def bf16(batch: Batch) -> None:
        weights.compute(*batch).backward()
        weights.unscale_(adam["bf16"])
        weights.step(adam["bf16"])

    seconds: dict[str, list[float]] = {"fp32": [], "bf16": []}
    for round_, batch in enumerate(batches):
        for name, step in (("fp32", fp32), ("bf16", bf16)):
            started = time.perf_counter()
            step(batch)
            if round_:
                seconds[name].append(time.perf_counter() - started)
    return StepTimes(statistics.median(seconds["fp32"]), statistics.median(seconds["bf16"]))


def _batch(
    length: int, batch_tokens: int, sizes: tuple[int, int], generator: torch.Generator
) -> Batch:
    """(src, src_lengths, tgt_in, tgt_out) of sentences `length` pieces long holding
    `batch_tokens` target pieces."""
    sentences = max(1, batch_tokens // length)
    src = torch.randint(4, sizes[0], (sentences, length), generator=generator)
    tgt = torch.randint(4, sizes[1], (sentences, length + 1), generator=generator)
    return src, torch.full((sentences,), length), tgt[:, :-1], tgt[:, 1:]


def _read(path: Path) -> dict:
    try:
        known = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return known if isinstance(known, dict) else {}


def _write(path: Path, key: str, choice: str) -> None:
    """Kept for the next run; a cache that cannot be written only means another probe."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        known = _read(path)
        known[key] = choice
        write_atomically(path, (json.dumps(known, indent=1) + "\n").encode("utf-8"))
    except OSError as error:
        log.debug("cannot keep the precision probe's answer in %s: %s", path, error)
