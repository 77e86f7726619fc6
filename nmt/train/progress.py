"""Where training stands (saved into last.pt, shared across ranks) and how it ended."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path

from nmt.config import TrainConfig


@dataclass
class Progress:
    """Where training stands; all of it goes into last.pt."""

    step: int = 0
    epoch: int = 0
    batch_in_epoch: int = 0  # batches of the epoch used so far, over all ranks
    best: float | None = None  # best validation value of train.best_metric
    since_best: int = 0  # validations in a row without a new best
    lr_reductions: int = 0  # plateau schedule
    saved_step: int | None = None  # of last.pt
    bad_in_a_row: int = 0  # batches skipped for a non-finite loss or gradient
    earlier_minutes: float = 0.0  # training time before the last resume
    started: float = field(default_factory=time.monotonic)

    def minutes(self) -> float:
        return self.earlier_minutes + (time.monotonic() - self.started) / 60

    def fraction_done(self, train: TrainConfig) -> float:
        """How far the run is toward its end: train.max_steps or train.max_minutes,
        whichever is nearer."""
        fraction = self.step / train.max_steps
        if train.max_minutes:
            fraction = max(fraction, self.minutes() / train.max_minutes)
        return fraction

    def state(self) -> dict:
        state = dataclasses.asdict(self)
        del state["started"]
        state["earlier_minutes"] = self.minutes()
        return state


@dataclass
class Outcome:
    """How a training run ended: what `nmt.train_run` returns."""

    reason: str  # max_steps, max_minutes, early_stop or interrupted
    step: int
    scores: dict  # test scores of the best checkpoint (rank 0, not interrupted)
    is_main: bool = True
    summary: str = ""  # one line naming what ended the run
    run_dir: Path | None = None


def ending(reason: str, step: int, minutes: float, train: TrainConfig, signal: str | None) -> str:
    """One line naming what ended a run, e.g. 'stopped at step 2685: train.max_minutes (30)
    reached, after 30.0 minutes of training'."""
    if reason == "max_steps":
        why = f"train.max_steps ({train.max_steps}) reached"
    elif reason == "max_minutes":
        why = f"train.max_minutes ({train.max_minutes:g}) reached"
    elif reason == "early_stop":
        why = (
            f"early stopping, {train.patience} validations without a better valid "
            f"{train.best_metric} (train.patience)"
        )
    else:
        why = f"interrupted by {signal or 'a signal'}"
    return f"stopped at step {step}: {why}, after {minutes:.1f} minutes of training"
