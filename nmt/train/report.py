"""Where training reports go: metrics.jsonl, TensorBoard, train.log and the progress bar.

Only rank 0 reports; the other ranks get a `Reporter` with `active=False`, which drops
everything, so the training loop never asks which rank it is on.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import torch

from nmt.terminal import clear_line, show_line

log = logging.getLogger("nmt")


class Reporter:
    """Appends records to RUN/metrics.jsonl (and TensorBoard) and logs them as one line."""

    def __init__(self, run_dir: Path, tensorboard: bool, active: bool = True, first_step: int = 0):
        self.active = active
        self.lines = 0
        self.metrics_file = None
        self.writer = None
        if not active:
            return
        path = run_dir / "metrics.jsonl"
        self.lines = len(path.read_text("utf-8").splitlines()) if path.exists() else 0
        self.metrics_file = path.open("a", encoding="utf-8")
        if tensorboard:
            self.writer = _summary_writer(run_dir, purge_step=first_step + 1)

    def record(self, record: dict) -> None:
        if not self.active:
            return
        self.metrics_file.write(json.dumps(record) + "\n")
        self.metrics_file.flush()
        self.lines += 1
        if self.writer is not None:
            for key, value in record.items():
                if isinstance(value, int | float) and key != "step":
                    self.writer.add_scalar(_tag(key), value, record["step"])
            self.writer.flush()
        clear_line()
        log.info(" ".join(f"{k}={v}" for k, v in record.items() if "signature" not in k))

    def close(self) -> None:
        if self.metrics_file is not None:
            self.metrics_file.close()
        if self.writer is not None:
            self.writer.close()


def _summary_writer(run_dir: Path, purge_step: int):
    from torch.utils.tensorboard import SummaryWriter  # checked by train_experiment

    # purge_step drops events a resumed run is about to write again.
    return SummaryWriter(log_dir=str(run_dir), purge_step=purge_step)


def _tag(key: str) -> str:
    """valid_bleu -> valid/bleu, test_chrf -> test/chrf, loss -> train/loss."""
    for prefix in ("valid", "test"):
        if key.startswith(prefix + "_"):
            return f"{prefix}/{key[len(prefix) + 1 :]}"
    return f"train/{key}"


class LossWindow:
    """Loss and throughput since the last log line; the loss stays a tensor on its device
    until the log line is written, so adding to it never waits for the GPU."""

    def __init__(self, loss: float = 0.0, tokens: int = 0):
        self.reset(loss, tokens)

    def reset(self, loss: float = 0.0, tokens: int = 0) -> None:
        self.loss: torch.Tensor | float = loss  # a tensor once a step is added
        self.tokens = tokens
        self.all_tokens = 0
        self.started = time.monotonic()

    def add(self, loss: torch.Tensor, tokens: int, all_tokens: int) -> None:
        """`tokens` of this rank (they make `loss`), `all_tokens` over all ranks (throughput)."""
        self.loss = self.loss + loss.detach()
        self.tokens += tokens
        self.all_tokens += all_tokens

    def rate(self) -> float:
        return self.all_tokens / max(time.monotonic() - self.started, 1e-9)

    def state(self) -> dict:
        """What a checkpoint keeps, so a resumed run logs the same losses."""
        return {"loss": float(self.loss), "tokens": self.tokens}

    def flush(self, step: int, epoch: int, lr: float, minutes: float) -> dict:
        record = {
            "step": step,
            "epoch": epoch,
            "loss": round(float(self.loss) / max(self.tokens, 1), 4),
            "lr": lr,
            "tgt_tokens_per_s": round(self.rate()),
            "minutes": round(minutes, 2),
        }
        self.reset()
        return record


def show_progress(step: int, fraction: float, minutes: float, rate: float) -> None:
    eta = minutes * (1 / max(fraction, 1e-9) - 1)
    bar = "#" * int(20 * fraction)
    show_line(f"[{bar:<20}] step {step} {rate:.0f} tok/s eta {int(eta)}:{int(eta * 60 % 60):02d}  ")
