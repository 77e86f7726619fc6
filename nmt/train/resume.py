"""The run directory across invocations: starting afresh, stopping cleanly, resuming exactly.

`last.pt` carries, beside the weights, everything the next update depends on: optimizer and
grad-scaler state, the step, the data position (epoch and batch index: batch order is a
pure function of (seed, epoch)), the best validation value and plateau count, every random
number generator, the unlogged loss window and how many lines metrics.jsonl had. Resuming
restores all of it, so a run cut in two ends with the same parameters as one run straight
through (on the same device and with the same number of processes).

This module checks that a run can be resumed with the config given, and puts a Trainer back
where last.pt left it (the RNG streams are nmt/train/rng.py's, the stop request
nmt/train/signals.py's).
"""

from __future__ import annotations

from pathlib import Path

import torch

from nmt.checkpoint import load_checkpoint, remove_temporaries, weights_checked
from nmt.config import Experiment, checkpoint_config, config_differences, config_to_dict
from nmt.errors import UserError
from nmt.model.adapters import load_trained_state
from nmt.outputs import write_atomically
from nmt.train.optim import lr_at
from nmt.train.progress import Progress
from nmt.train.report import LossWindow
from nmt.train.rng import set_rng_state

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


# what train.precision auto resolves to somewhere: a run of auto resumes on any device
# (nmt/train/precision.py, run_precision)
AUTO_PRECISIONS = ("fp32", "bf16")


def check_resumable(payload: dict, config: Experiment, path: Path) -> None:
    """A UserError unless `config` continues the run whose last.pt is `payload`."""
    if "training" not in payload:
        raise UserError(f"{path} holds no training state (it is not a last.pt); cannot resume.")
    stored = checkpoint_config(payload["config"])  # keys added since: at their defaults
    _check_schedule_end(stored, config, payload["step"], path)
    ignored = RESUMABLE_KEYS | _not_yet_in_effect(stored, config, payload["step"])
    if config.train.precision == "auto" and stored.train.precision in AUTO_PRECISIONS:
        ignored |= {"train.precision"}  # which one it continues in: run_precision
    differences = config_differences(config_to_dict(stored), config_to_dict(config), ignored)
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


def _check_schedule_end(stored: Experiment, config: Experiment, step: int, path: Path) -> None:
    """A cosine schedule ends at train.max_steps: moving it would move every later learning
    rate, so such a run resumes only to its own end, and trains further as a new run."""
    if stored.train.schedule != "cosine" or config.train.schedule != "cosine":
        return  # another schedule: the config check names the difference
    further = f"start a new run from its weights (--set train.init_from={path.parent / 'best.pt'})"
    if config.train.max_steps != stored.train.max_steps:
        raise UserError(
            f"the run in {path.parent} follows a cosine schedule that ends at train.max_steps="
            f"{stored.train.max_steps}; with {config.train.max_steps} its learning rate would "
            f"jump from {lr_at(step, stored.train):.3g} to {lr_at(step, config.train):.3g} at "
            f"step {step}. Resume with train.max_steps={stored.train.max_steps}, or {further}."
        )
    if step >= config.train.max_steps:
        raise UserError(
            f"the run in {path.parent} already reached step {step}, where its cosine schedule "
            f"ends. To train further, {further}."
        )


def _not_yet_in_effect(stored: Experiment, config: Experiment, steps: int) -> frozenset[str]:
    """Online back-translation's keys when neither config back-translated any of the `steps`
    updates done: the run so far is then what either config makes, so it may be resumed
    with back-translation switched on, off or moved to a later update."""
    started = [
        train.online_backtranslation > 0 and train.online_backtranslation_after < steps
        for train in (stored.train, config.train)
    ]
    if any(started):
        return frozenset()
    return frozenset({"train.online_backtranslation", "train.online_backtranslation_after"})


def trim_metrics(path: Path, lines: int) -> None:
    """Keeps the first `lines` lines: what was written when the resumed checkpoint was saved."""
    if not path.exists():
        return
    kept = path.read_text(encoding="utf-8").splitlines(keepends=True)[:lines]
    write_atomically(path, "".join(kept).encode("utf-8"))  # a kill midway keeps them all


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


def restore_training(trainer, payload: dict) -> None:
    """Continues `trainer` (a Trainer) from `payload`, its last.pt: weights (an adapter
    run's adapters), optimizer, scaler, progress, loss window, RNG streams."""
    training = payload["training"]
    with weights_checked(trainer.run_dir / "last.pt"):  # a file altered or mixed up
        load_trained_state(trainer.model, payload["model"])
        if trainer.ema is not None:
            weights = {"weights": payload["ema"], "updates": training["ema_updates"]}
            trainer.ema.load_state_dict(weights)
        trainer.optimizer.load_state_dict(training["optimizer"])
    trainer.precision.scaler.load_state_dict(training["scaler"])
    trainer.progress = Progress(**training["progress"])
    trainer.window = LossWindow(**training["window"])
    generators, ranks = training["rng"], trainer.ranks
    if len(generators) == ranks.world:
        set_rng_state(generators[ranks.rank])
    else:  # another number of processes: the data position holds, the streams cannot
        set_rng_state(generators[0])
        torch.manual_seed(trainer.config.train.seed + 1_000 * trainer.progress.step + ranks.rank)
