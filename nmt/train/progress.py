"""Where training stands (saved into last.pt, shared across ranks) and how it ended."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field


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

    def state(self) -> dict:
        state = dataclasses.asdict(self)
        del state["started"]
        state["earlier_minutes"] = self.minutes()
        return state


@dataclass
class Outcome:
    reason: str  # max_steps, max_minutes, early_stop or interrupted
    step: int
    scores: dict  # test scores of the best checkpoint (rank 0, not interrupted)
    is_main: bool = True
