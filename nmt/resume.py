"""The run directory across invocations: starting afresh, stopping cleanly, resuming exactly.

`last.pt` carries, beside the weights, everything the next update depends on: optimizer and
grad-scaler state, the step, the data position (epoch and batch index: batch order is a
pure function of (seed, epoch)), the best validation value and plateau count, every random
number generator, the unlogged loss window and how many lines metrics.jsonl had. Resuming
restores all of it, so a run cut in two ends with the same parameters as one run straight
through (on the same device and with the same number of processes).

SIGINT or SIGTERM ask training to stop after the current step, save last.pt and exit 0;
a second SIGINT stops at once.
"""

from __future__ import annotations

import contextlib
import random
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import torch

from nmt.checkpoint import load_checkpoint, remove_temporaries
from nmt.config import Experiment, config_to_dict
from nmt.errors import UserError

# Keys that may change when a run is resumed: budgets, and settings that leave the
# trained function and the data order alone.
RESUMABLE_KEYS = frozenset(
    {
        "name",
        "train.max_steps",
        "train.max_minutes",
        "train.patience",
        "train.threads",
        "train.device",
        "train.tensorboard",
        "train.log_every",
        "data.num_proc",
        "data.cache_dir",
    }
)


def config_differences(old: dict, new: dict, ignore: frozenset[str] = frozenset()) -> list[str]:
    """'dotted.key: old -> new' for every leaf value that differs, except the ignored keys."""
    differences = []
    for key in sorted(set(_flatten(old)) | set(_flatten(new))):
        before, after = _flatten(old).get(key, "<absent>"), _flatten(new).get(key, "<absent>")
        if before != after and key not in ignore:
            differences.append(f"{key}: {before!r} -> {after!r}")
    return differences


def _flatten(raw: dict, prefix: str = "") -> dict:
    flat = {}
    for key, value in raw.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def check_resumable(payload: dict, config: Experiment, path: Path) -> None:
    """A UserError unless `config` continues the run whose last.pt is `payload`."""
    if "training" not in payload:
        raise UserError(f"{path} holds no training state (it is not a last.pt); cannot resume.")
    differences = config_differences(payload["config"], config_to_dict(config), RESUMABLE_KEYS)
    if differences:
        shown = "; ".join(differences[:6]) + ("; ..." if len(differences) > 6 else "")
        raise UserError(
            f"{path.parent} holds a run of a different config ({shown}). Resume with the "
            "config it was started with (only train.max_steps, train.max_minutes, "
            "train.patience and settings such as train.threads may change), or choose "
            "another --run-dir."
        )
    if payload["step"] >= config.train.max_steps:
        raise UserError(
            f"the run in {path.parent} already reached step {payload['step']}, and "
            f"train.max_steps is {config.train.max_steps}. Raise it (e.g. --set "
            f"train.max_steps={2 * payload['step']}) to train further."
        )


def rng_state() -> dict:
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else []
    return {"python": random.getstate(), "torch": torch.get_rng_state(), "cuda": cuda}


def set_rng_state(state: dict) -> None:
    random.setstate(_as_tuple(state["python"]))
    torch.set_rng_state(state["torch"])
    if state["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _as_tuple(value):
    """random.setstate needs tuples where a round trip may have left lists."""
    return tuple(_as_tuple(v) for v in value) if isinstance(value, list | tuple) else value


@contextlib.contextmanager
def rng_preserved() -> Iterator[None]:
    """Whatever the block draws, the generators continue afterwards as if it never ran."""
    state = rng_state()
    try:
        yield
    finally:
        set_rng_state(state)


def trim_metrics(path: Path, lines: int) -> None:
    """Keeps the first `lines` lines: what was written when the resumed checkpoint was saved."""
    if not path.exists():
        return
    kept = path.read_text(encoding="utf-8").splitlines(keepends=True)[:lines]
    path.write_text("".join(kept), encoding="utf-8")


class StopRequest:
    """Within `with StopRequest() as stop:`, SIGINT/SIGTERM set `stop.requested` instead of
    killing the process; a second SIGINT raises KeyboardInterrupt at once."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.requested = False
        self._previous: dict = {}

    def __enter__(self) -> StopRequest:
        if threading.current_thread() is threading.main_thread():
            for number in self.SIGNALS:
                self._previous[number] = signal.signal(number, self._handle)
        return self

    def __exit__(self, *exc_info) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)

    def _handle(self, number: int, frame) -> None:
        if self.requested and number == signal.SIGINT:
            raise KeyboardInterrupt
        self.requested = True
        name = signal.Signals(number).name
        print(
            f"\n{name}: stopping after this step and saving last.pt (Ctrl-C again: stop now)",
            file=sys.stderr,
            flush=True,
        )


def step_checkpoints(run_dir: Path) -> list[Path]:
    """RUN/step-NNNNNN.pt files, oldest first."""
    return sorted(run_dir.glob("step-*.pt"), key=lambda p: int(p.stem.removeprefix("step-")))


def resume_point(run_dir: Path, config: Experiment) -> dict:
    """last.pt of the run in `run_dir`, checked against `config`."""
    path = run_dir / "last.pt"
    if not path.exists():
        raise UserError(
            f"--resume: {run_dir} holds no run to resume (no last.pt). Drop --resume to start one."
        )
    payload = load_checkpoint(path)
    check_resumable(payload, config, path)
    remove_temporaries(run_dir)
    return payload
