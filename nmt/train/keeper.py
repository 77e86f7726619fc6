"""Checkpoint keeping: best.pt on a new best of `train.best_metric`, a step checkpoint at
every validation (the last `train.keep_last` of them kept), and last.pt for resuming.

A validation's verdict (the best value so far, validations since, plateau reductions) is
kept in Progress, not here: it goes into last.pt and every rank must share it.
"""

from __future__ import annotations

import logging
from pathlib import Path

from nmt.checkpoint import checkpoint_payload, save_checkpoint
from nmt.config import Experiment, TrainConfig
from nmt.data.tokenizer import Tokenizer
from nmt.model.adapters import trained_state
from nmt.model.seq2seq import Seq2Seq
from nmt.train.optim import reduces_on_plateau
from nmt.train.progress import Progress
from nmt.train.rundir import step_checkpoints

log = logging.getLogger("nmt")


def judge(record: dict, progress: Progress, train: TrainConfig) -> bool:
    """Counts one validation record into `progress`; True on a new best of
    `train.best_metric`. Otherwise the patience count grows, and under the plateau schedule
    every `train.plateau_patience`-th validation in a row without one reduces the rate."""
    if train.best_metric == "bleu":
        value = record["valid_bleu"]
        improved = progress.best is None or value > progress.best
    else:
        value = record["valid_loss"]
        improved = progress.best is None or value < progress.best
    if improved:
        progress.best, progress.since_best = value, 0
        return True
    progress.since_best += 1
    if train.schedule == "plateau" and reduces_on_plateau(
        progress.since_best, train.plateau_patience
    ):
        progress.lr_reductions += 1
        log.info("no better valid %s for a while: lr reduced", train.best_metric)
    return False


class CheckpointKeeper:
    """Writes one run's checkpoints of one model into its run directory."""

    def __init__(
        self,
        run_dir: Path,
        model: Seq2Seq,
        config: Experiment,
        tokenizer: Tokenizer,
        averaged: Seq2Seq | None = None,
        base: dict | None = None,
    ):
        self.run_dir = run_dir
        self.model = model
        self.averaged = averaged  # the moving average of the weights (train.ema_decay)
        self.config = config
        self.tokenizer = tokenizer
        self.base = base  # an adapter run's base_reference

    def keep(self, record: dict, progress: Progress) -> None:
        """After a validation: best.pt on a new best, then the step checkpoint."""
        if judge(record, progress, self.config.train):
            self.save("best.pt", progress.step, record)
        keep_last = self.config.train.keep_last
        if keep_last:
            self.save(f"step-{progress.step:06d}.pt", progress.step, record)
            for old in step_checkpoints(self.run_dir)[:-keep_last]:
                old.unlink(missing_ok=True)

    def save_last(self, step: int, metrics: dict | None, training: dict) -> None:
        """last.pt: the weights plus `training`, everything resuming needs; with a moving
        average, the raw weights to resume from and the average ("ema") to translate with."""
        metrics = metrics or {"step": step}
        payload = checkpoint_payload(
            self.model, self.config, self.tokenizer, step, metrics, self.base, resumable=True
        )
        payload["training"] = training
        if self.averaged is not None:
            payload["ema"] = trained_state(self.averaged)
        save_checkpoint(self.run_dir / "last.pt", payload)

    def save(self, name: str, step: int, metrics: dict) -> None:
        """A checkpoint to translate with: the moving average where one is kept."""
        model = self.averaged if self.averaged is not None else self.model
        payload = checkpoint_payload(model, self.config, self.tokenizer, step, metrics, self.base)
        save_checkpoint(self.run_dir / name, payload)
