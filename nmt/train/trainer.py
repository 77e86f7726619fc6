"""Training: data and model set up once, then the loop step, log, validate, save.

Training stops at `train.max_steps`, `train.max_minutes`, after `train.patience`
validations without a new best, or on SIGINT/SIGTERM. Except when interrupted it ends with
a validation, so `best.pt` exists even for a run cut short by its budget, then scores the
best checkpoint on the test split. Resuming (`resume=True`) continues a run exactly where
its last.pt left it (see nmt/train/resume.py).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import torch

from nmt.checkpoint import checkpoint_payload, save_checkpoint
from nmt.config import Experiment
from nmt.data.batching import Batch, make_batch
from nmt.data.corpus import Corpus
from nmt.decode.evaluation import evaluate
from nmt.decode.translator import Translator, load_translator
from nmt.errors import UserError
from nmt.model.seq2seq import Seq2Seq
from nmt.scoring import score
from nmt.train.distributed import Ranks
from nmt.train.optim import build_optimizer, lr_at, reduces_on_plateau, set_lr
from nmt.train.precision import Precision
from nmt.train.report import LossWindow, Reporter, clear_progress, show_progress
from nmt.train.rng import rng_preserved, rng_state, set_rng_state
from nmt.train.rundir import step_checkpoints
from nmt.train.signals import StopRequest

log = logging.getLogger("nmt")


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


class Trainer:
    def __init__(
        self,
        config: Experiment,
        run_dir: Path,
        corpus: Corpus,
        model: Seq2Seq,
        device: torch.device | None = None,
        ranks: Ranks | None = None,
        resume_from: dict | None = None,
    ):
        self.config = config
        self.run_dir = run_dir
        self.corpus = corpus
        self.device = device or torch.device("cpu")
        self.ranks = ranks or Ranks()
        self.precision = Precision(config.train.precision, self.device)
        self.model = model.to(self.device)  # what is saved: never the DDP wrapper
        self.network = self.ranks.wrap(self.model, self.device)  # what computes gradients
        self.optimizer = build_optimizer(self.model.parameters(), config.train)
        self.progress = Progress()
        self.window = LossWindow()
        self.stop = StopRequest()
        if resume_from is not None:
            self.restore(resume_from)
        self.report = Reporter(
            run_dir, config.train.tensorboard, self.ranks.is_main, first_step=self.progress.step
        )

    def fit(self) -> Outcome:
        train, progress = self.config.train, self.progress
        batches = self._batches()
        while (reason := self._stop_reason()) is None:
            set_lr(self.optimizer, lr_at(progress.step, train, progress.lr_reductions))
            step = [next(batches) for _ in range(train.accum_steps)]
            result = self.train_step(step)
            if result is None:
                self._skip_bad_batch()
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
            return Outcome(reason, progress.step, {}, self.ranks.is_main)
        if progress.step % train.valid_every != 0:
            self.validate()
        scores = self.test() if self.ranks.is_main else {}
        self.ranks.barrier()
        return Outcome(reason, progress.step, scores, self.ranks.is_main)

    def _batches(self) -> Iterator[Batch]:
        """This rank's batches from the saved data position on, moved to the device; the
        position advances as they are drawn."""
        progress, pad_id = self.progress, self.corpus.tokenizer.src.pad_id
        while True:
            drawn = 0
            start = progress.batch_in_epoch
            for src, tgt in self.corpus.train.batches(progress.epoch, start, self.ranks.shard):
                progress.batch_in_epoch += self.ranks.world
                drawn += 1
                yield make_batch(src, tgt, self.corpus.tokenizer.tgt, pad_id).to(self.device)
            if drawn == 0 and start == 0:
                raise UserError(
                    f"the train split gives fewer batches than the {self.ranks.world} "
                    "processes that share them; use fewer processes or a larger corpus."
                )
            progress.epoch += 1
            progress.batch_in_epoch = 0

    def _stop_reason(self) -> str | None:
        """Every rank gets the same answer: budgets in time or interruptions may reach the
        ranks at different steps, so they agree on the most urgent one."""
        progress, train = self.progress, self.config.train
        if progress.step >= train.max_steps:
            return "max_steps"
        if train.patience is not None and progress.since_best >= train.patience:
            return "early_stop"
        out_of_time = train.max_minutes is not None and progress.minutes() >= train.max_minutes
        urgency = self.ranks.most(2 if self.stop.requested else 1 if out_of_time else 0)
        return {0: None, 1: "max_minutes", 2: "interrupted"}[urgency]

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
                    )
                scaler.scale(loss / (all_tokens / self.ranks.world)).backward()
            total += loss.detach()
        scaler.unscale_(self.optimizer)
        finite = torch.isfinite(total)
        if train.clip_norm > 0:
            norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), train.clip_norm)
            finite &= torch.isfinite(norm) | scaler.is_enabled()  # fp16 overflow: scaler's job
        if self.ranks.most(int(not bool(finite))):
            self.optimizer.zero_grad(set_to_none=True)
            scaler.update()
            return None
        scaler.step(self.optimizer)
        scaler.update()
        return total, tokens, all_tokens

    def _skip_bad_batch(self) -> None:
        """Warns about a skipped batch; train.max_bad_steps of them in a row end the run."""
        progress, limit = self.progress, self.config.train.max_bad_steps
        progress.bad_in_a_row += 1
        clear_progress()
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
            f"{self.run_dir / 'last.pt'} (step {progress.saved_step}) and best.pt are untouched"
            if progress.saved_step is not None
            else "no checkpoint had been written yet"
        )
        raise UserError(
            f"training diverged: {limit} batches in a row gave a non-finite loss or gradient "
            f"(train.max_bad_steps={limit}) after step {progress.step}; {kept}. Lower "
            "train.lr, keep train.clip_norm above 0, or look for broken pairs in the data."
        )

    def validate(self) -> None:
        """Rank 0 validates and saves (the RNG streams untouched); the others wait for it and
        then take its verdict, which drives early stopping and the plateau schedule."""
        if self.ranks.is_main:
            with rng_preserved():
                record = self._validation_record()
            self.report.record(record)
            self._keep_best(record)
        verdict = (self.progress.best, self.progress.since_best, self.progress.lr_reductions)
        verdict = self.ranks.broadcast(verdict)
        self.progress.best, self.progress.since_best, self.progress.lr_reductions = verdict
        self._save_last(record if self.ranks.is_main else {})

    @torch.no_grad()
    def _validation_record(self) -> dict:
        valid = self.corpus.valid
        limit = self.config.train.valid_max_sentences
        src, refs = valid.src[:limit], valid.tgt[:limit]
        with self.precision.autocast():
            greedy = self.config.decode.greedy()
            translator = Translator(self.model, self.corpus.tokenizer, greedy)
            hypotheses = [t.text for t in translator.translate(src)]
            valid_loss = self._valid_loss(src, refs)
        scores = score(hypotheses, refs)
        return {
            "step": self.progress.step,
            "valid_loss": round(valid_loss, 4),
            "valid_ppl": round(math.exp(min(valid_loss, 50)), 2),
            "valid_bleu": scores.bleu,
            "valid_chrf": scores.chrf,
            "minutes": round(self.progress.minutes(), 2),
        }

    def _valid_loss(self, src: list[str], refs: list[str]) -> float:
        """Teacher-forced cross-entropy per target token (no label smoothing)."""
        tokenizer = self.corpus.tokenizer
        src_ids, tgt_ids = tokenizer.src.encode(src), tokenizer.tgt.encode(refs)
        order = sorted(range(len(src_ids)), key=lambda i: len(tgt_ids[i]))
        total = tokens = 0.0
        self.model.eval()
        for start in range(0, len(order), self.config.decode.batch_size):
            chunk = order[start : start + self.config.decode.batch_size]
            batch = make_batch(
                [src_ids[i] for i in chunk],
                [tgt_ids[i] for i in chunk],
                tokenizer.tgt,
                tokenizer.src.pad_id,
            ).to(self.device)
            total += float(self.model(batch.src, batch.src_lengths, batch.tgt_in, batch.tgt_out))
            tokens += batch.num_tgt_tokens
        return total / max(tokens, 1)

    def _keep_best(self, record: dict) -> None:
        """best.pt on a new best of train.best_metric; otherwise count towards patience and
        the plateau schedule. Step checkpoints (train.keep_last) at every validation."""
        train, progress = self.config.train, self.progress
        if train.best_metric == "bleu":
            value = record["valid_bleu"]
            improved = progress.best is None or value > progress.best
        else:
            value = record["valid_loss"]
            improved = progress.best is None or value < progress.best
        if improved:
            progress.best, progress.since_best = value, 0
            self._save("best.pt", record)
        else:
            progress.since_best += 1
            if train.schedule == "plateau" and reduces_on_plateau(
                progress.since_best, train.plateau_patience
            ):
                progress.lr_reductions += 1
                log.info("no better valid %s for a while: lr reduced", train.best_metric)
        if train.keep_last:
            self._save(f"step-{progress.step:06d}.pt", record)
            for old in step_checkpoints(self.run_dir)[: -train.keep_last]:
                old.unlink(missing_ok=True)

    def test(self) -> dict:
        """Scores the best checkpoint's translations of the test split (decode settings), as
        `nmt eval` does."""
        if self.corpus.test is None:
            return {}
        translator, config = load_translator(self.run_dir / "best.pt", self.device)
        with self.precision.autocast():
            result = evaluate(translator, self.corpus.test)
        hypotheses, scores = result.hypotheses, result.scores
        (self.run_dir / "test.hyp").write_text("".join(h + "\n" for h in hypotheses), "utf-8")
        self.report.record(
            {
                "step": self.progress.step,
                "test_bleu": scores.bleu,
                "test_chrf": scores.chrf,
                "test_bleu_signature": scores.bleu_signature,
                "test_chrf_signature": scores.chrf_signature,
            }
        )
        log.info(
            "test (%s, best checkpoint, beam %d):\n%s",
            self.corpus.test.origin,
            config.decode.beam,
            scores.summary(),
        )
        return scores.as_dict()

    def _save(self, name: str, metrics: dict, training: dict | None = None) -> None:
        payload = checkpoint_payload(
            self.model, self.config, self.corpus.tokenizer, self.progress.step, metrics
        )
        if training is not None:
            payload["training"] = training
        save_checkpoint(self.run_dir / name, payload)

    def _save_last(self, metrics: dict | None = None) -> None:
        """last.pt: the weights plus everything resuming needs (every rank's RNG streams)."""
        generators = self.ranks.gather(rng_state())
        if self.ranks.is_main:
            metrics = metrics or {"step": self.progress.step}
            self._save("last.pt", metrics, self.training_state(generators))
            self.progress.saved_step = self.progress.step

    def training_state(self, generators: list[dict]) -> dict:
        return {
            "optimizer": self.optimizer.state_dict(),
            "scaler": self.precision.scaler.state_dict(),
            "progress": self.progress.state(),
            "window": self.window.state(),
            "rng": generators,
            "metrics_lines": self.report.lines,
            "world": self.ranks.world,
        }

    def restore(self, payload: dict) -> None:
        """Continues from last.pt: weights, optimizer, scaler, progress, loss window, RNG."""
        training = payload["training"]
        self.model.load_state_dict(payload["model"])
        self.optimizer.load_state_dict(training["optimizer"])
        self.precision.scaler.load_state_dict(training["scaler"])
        self.progress = Progress(**training["progress"])
        self.window = LossWindow(**training["window"])
        generators = training["rng"]
        if len(generators) == self.ranks.world:
            set_rng_state(generators[self.ranks.rank])
        else:  # another number of processes: the data position holds, the streams cannot
            set_rng_state(generators[0])
            torch.manual_seed(self.config.train.seed + 1_000 * self.progress.step + self.ranks.rank)

    def _log(self) -> None:
        progress = self.progress
        lr = self.optimizer.param_groups[0]["lr"]
        self.report.record(self.window.flush(progress.step, progress.epoch, lr, progress.minutes()))

    def _show_progress(self) -> None:
        if not self.ranks.is_main:
            return
        train, progress = self.config.train, self.progress
        fraction = progress.step / train.max_steps
        if train.max_minutes:
            fraction = max(fraction, progress.minutes() / train.max_minutes)
        show_progress(progress.step, fraction, progress.minutes(), self.window.rate())
