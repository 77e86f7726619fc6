"""Training: data and model set up once, then the loop step, log, validate, save.

Training stops at `train.max_steps`, `train.max_minutes`, after `train.patience`
validations without a new best, or on SIGINT/SIGTERM. Except when interrupted it ends with
a validation, so `best.pt` exists even for a run cut short by its budget, then scores the
best checkpoint on the test split. Resuming (`resume=True`) continues a run exactly where
its last.pt left it (see nmt/train/resume.py).

What a validation measures is nmt/train/validation.py; which checkpoints it leaves behind,
nmt/train/keeper.py; where training stands, nmt/train/progress.py.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import torch

from nmt.config import Experiment, TrainConfig
from nmt.data.batching import Batch, make_batch
from nmt.data.corpus import Corpus
from nmt.errors import UserError
from nmt.model.normalisers import anneal_hard_attention
from nmt.model.seq2seq import Seq2Seq
from nmt.terminal import clear_line
from nmt.train.backtranslation import OnlineBacktranslation
from nmt.train.distributed import Ranks
from nmt.train.ema import WeightAverage
from nmt.train.final_scores import test_scores
from nmt.train.keeper import CheckpointKeeper
from nmt.train.optim import build_optimizer, lr_at, set_lr
from nmt.train.precision import Precision
from nmt.train.progress import Outcome, Progress, ending
from nmt.train.report import LossWindow, Reporter, show_progress
from nmt.train.resume import restore_training
from nmt.train.rng import rng_state
from nmt.train.signals import StopRequest
from nmt.train.validation import Validator

log = logging.getLogger("nmt")


class Trainer:
    """Trains one model on one corpus, writing into one run directory."""

    def __init__(
        self,
        config: Experiment,
        run_dir: Path,
        corpus: Corpus,
        model: Seq2Seq,
        device: torch.device | None = None,
        ranks: Ranks | None = None,
        resume_from: dict | None = None,
        base: dict | None = None,  # an adapter run's base_reference (nmt/checkpoint.py)
    ):
        self.config = config
        self.run_dir = run_dir
        self.corpus = corpus
        self.device = device or torch.device("cpu")
        self.ranks = ranks or Ranks()
        self.precision = Precision(config.train.precision, self.device, config.model.width)
        self.model = model.to(self.device)  # what is saved: never the DDP wrapper
        computing = self.precision.computing(self.model)  # the model, or its bf16 copy
        self.network = self.ranks.wrap(computing, self.device)  # what computes gradients
        self.learning = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = build_optimizer(self.learning, config.train)
        decay = config.train.ema_decay
        # one moving average, on the process that validates and saves
        self.ema = WeightAverage(self.model, decay) if decay and self.ranks.is_main else None
        averaged = self.ema.model if self.ema is not None else None
        evaluated = averaged or self.model
        self.validator = Validator(evaluated, corpus, config, self.precision, self.device)
        self.keeper = CheckpointKeeper(
            run_dir, self.model, config, corpus.tokenizer, averaged, base
        )
        self.backtranslation = OnlineBacktranslation(config, corpus.tokenizer, self.ranks.rank)
        self.progress, self.window, self.stop = Progress(), LossWindow(), StopRequest()
        if resume_from is not None:
            restore_training(self, resume_from)
        self.report = Reporter(
            run_dir, config.train.tensorboard, self.ranks.is_main, first_step=self.progress.step
        )

    def fit(self) -> Outcome:
        train, progress = self.config.train, self.progress
        batches = self.batches()
        while (reason := stop_reason(progress, train, self.ranks, self.stop)) is None:
            set_lr(self.optimizer, lr_at(progress.step, train, progress.lr_reductions))
            # the network that computes: under bf16 a copy the master's attributes never reach
            anneal_hard_attention(self.network, self.config.model.attention, progress.step)
            drawn = [next(batches) for _ in range(train.accum_steps)]
            result = self.update(drawn, progress.step)
            if result is None:
                skip_bad_batch(progress, train.max_bad_steps, self.run_dir)
                continue
            progress.bad_in_a_row = 0
            self.window.add(*result)
            progress.step += 1
            if progress.step % train.log_every == 0:
                self._log()
            if progress.step % train.valid_every == 0:
                self.validate()
            self._show_progress()
        if reason == "interrupted":
            self._save_last()
            return self._outcome(reason, {})
        if progress.step == 0 or progress.step % train.valid_every != 0:
            self.validate()  # so best.pt exists, even when time ran out before a first step
        minutes = progress.minutes()  # of training: the test below is not
        scores = self.test() if self.ranks.is_main else {}
        self.ranks.barrier()
        return self._outcome(reason, scores, minutes)

    def _outcome(self, reason: str, scores: dict, minutes: float | None = None) -> Outcome:
        step, train = self.progress.step, self.config.train
        minutes = self.progress.minutes() if minutes is None else minutes
        summary = ending(reason, step, minutes, train, self.stop.signal)
        return Outcome(reason, step, scores, self.ranks.is_main, summary, self.run_dir)

    def batches(self) -> Iterator[Batch]:
        """This rank's batches from the data position on; see `train_batches`."""
        return train_batches(self.corpus, self.progress, self.ranks, self.device)

    def update(self, drawn: list[Batch], step: int) -> tuple[torch.Tensor, int, int] | None:
        """Update `step` on `drawn`, back-translated first where that applies (fit, bench)."""
        translator = self.precision.inference(self.model)  # in the training precision
        return self.train_step(self.backtranslation.update(translator, drawn, step))

    def train_step(self, batches: list[Batch]) -> tuple[torch.Tensor, int, int] | None:
        """One update from `train.accum_steps` micro-batches. Returns this rank's summed loss
        (a tensor), its target tokens, and the tokens over all ranks; or None when the loss or
        the gradient was not finite and every rank skipped the update (one host sync a step).

        The gradient is that of the mean loss per target token over every micro-batch of
        every rank (DDP averages over ranks, hence the divisor all_tokens / world).
        """
        train = self.config.train
        self.network.train()
        tokens = sum(batch.num_tgt_tokens for batch in batches)
        all_tokens = self.ranks.total(tokens)
        scaler = self.precision.scaler
        self.optimizer.zero_grad(set_to_none=True)
        total = torch.zeros((), device=self.device)
        for index, batch in enumerate(batches):
            with self.ranks.gradient_sync(self.network, last=index == len(batches) - 1):
                with self.precision.autocast():
                    loss = self.network(
                        batch.src,
                        batch.src_lengths,
                        batch.tgt_in,
                        batch.tgt_out,
                        train.label_smoothing,
                        train.coverage_loss,
                    )
                scaler.scale(loss / (all_tokens / self.ranks.world)).backward()
            total += loss.detach()
        scaler.unscale_(self.optimizer)
        finite = torch.isfinite(total)
        if train.clip_norm > 0:
            norm = torch.nn.utils.clip_grad_norm_(self.learning, train.clip_norm)
            finite &= torch.isfinite(norm) | scaler.is_enabled()  # fp16 overflow: scaler's job
        if self.ranks.most(int(not bool(finite))):
            self.optimizer.zero_grad(set_to_none=True)
            scaler.update()
            return None
        scale = scaler.get_scale() if scaler.is_enabled() else None
        scaler.step(self.optimizer)
        scaler.update()
        # fp16: the scaler skips a step whose gradients overflowed, and lowers its scale
        stepped = scale is None or scaler.get_scale() >= scale
        if self.ema is not None and stepped:
            self.ema.update(self.model)
        return total, tokens, all_tokens

    def validate(self) -> None:
        """Rank 0 validates and keeps checkpoints; the others wait for it and then take its
        verdict, which drives early stopping and the plateau schedule."""
        record = {}
        if self.ranks.is_main:
            record = self.validator.record(self.progress)
            self.report.record(record)
            self.keeper.keep(record, self.progress)
        verdict = (self.progress.best, self.progress.since_best, self.progress.lr_reductions)
        verdict = self.ranks.broadcast(verdict)
        self.progress.best, self.progress.since_best, self.progress.lr_reductions = verdict
        self._save_last(record)

    def test(self) -> dict:
        """The best checkpoint's test scores, recorded (nmt/train/final_scores.py)."""
        scores, record = test_scores(self.run_dir, self.corpus, self.precision, self.device)
        if record:
            self.report.record({"step": self.progress.step, **record})
        return scores

    def _save_last(self, metrics: dict | None = None) -> None:
        """last.pt on rank 0, with every rank's RNG streams."""
        generators = self.ranks.gather(rng_state())
        if self.ranks.is_main:
            progress, before = self.progress, self.progress.saved_step
            progress.saved_step = progress.step  # last.pt knows itself: a resumed run says so
            try:
                self.keeper.save_last(progress.step, metrics, self.training_state(generators))
            except BaseException:
                progress.saved_step = before
                raise

    def training_state(self, generators: list[dict]) -> dict:
        """Everything resuming needs besides the weights."""
        return {
            "optimizer": self.optimizer.state_dict(),
            "scaler": self.precision.scaler.state_dict(),
            "progress": self.progress.state(),
            "window": self.window.state(),
            "rng": generators,
            "metrics_lines": self.report.lines,
            "world": self.ranks.world,
            "ema_updates": self.ema.updates if self.ema is not None else 0,
        }

    def _log(self) -> None:
        progress = self.progress
        lr = self.optimizer.param_groups[0]["lr"]
        self.report.record(self.window.flush(progress.step, progress.epoch, lr, progress.minutes()))

    def _show_progress(self) -> None:
        if self.ranks.is_main:
            done = self.progress.fraction_done(self.config.train)
            show_progress(self.progress.step, done, self.progress.minutes(), self.window.rate())


def train_batches(
    corpus: Corpus, progress: Progress, ranks: Ranks, device: torch.device
) -> Iterator[Batch]:
    """This rank's batches from `progress`'s data position on, moved to the device; the
    position advances as they are drawn."""
    pad_id = corpus.tokenizer.src.pad_id
    while True:
        drawn = 0
        start = progress.batch_in_epoch
        for src, tgt in corpus.train.batches(progress.epoch, start, ranks.shard):
            progress.batch_in_epoch += ranks.world
            drawn += 1
            yield make_batch(src, tgt, corpus.tokenizer.tgt, pad_id).to(device)
        if drawn == 0 and start == 0:
            raise UserError(
                f"the train split gives fewer batches than the {ranks.world} "
                "processes that share them; use fewer processes or a larger corpus."
            )
        progress.epoch += 1
        progress.batch_in_epoch = 0


def stop_reason(
    progress: Progress, train: TrainConfig, ranks: Ranks, stop: StopRequest
) -> str | None:
    """Why training stops now, if it does. Every rank gets the same answer: budgets in time
    or interruptions may reach the ranks at different steps, so they agree on the most
    urgent one."""
    if progress.step >= train.max_steps:
        return "max_steps"
    if train.patience is not None and progress.since_best >= train.patience:
        return "early_stop"
    out_of_time = train.max_minutes is not None and progress.minutes() >= train.max_minutes
    urgency = ranks.most(2 if stop.requested else 1 if out_of_time else 0)
    return {0: None, 1: "max_minutes", 2: "interrupted"}[urgency]


def skip_bad_batch(progress: Progress, limit: int, run_dir: Path) -> None:
    """Counts and warns about a batch skipped for a non-finite loss or gradient; `limit`
    (train.max_bad_steps) of them in a row end the run."""
    progress.bad_in_a_row += 1
    clear_line()
    log.warning(
        "warning: non-finite loss or gradient after step %d (epoch %d, batch %d): "
        "batch skipped, %d in a row",
        progress.step,
        progress.epoch,
        progress.batch_in_epoch,
        progress.bad_in_a_row,
    )
    if progress.bad_in_a_row < limit:
        return
    kept = (
        f"{run_dir / 'last.pt'} (step {progress.saved_step}) and best.pt are untouched"
        if progress.saved_step is not None
        else "no checkpoint had been written yet"
    )
    raise UserError(
        f"training diverged: {limit} batches in a row gave a non-finite loss or gradient "
        f"(train.max_bad_steps={limit}) after step {progress.step}; {kept}. Lower "
        "train.lr, keep train.clip_norm above 0, or look for broken pairs in the data."
    )
