"""The whole `nmt train` command: run directory, corpus and model set up once, then the Trainer.

The run directory is checked before any work and written only once the corpus has loaded, so
a bad config or corpus leaves an old run as it was.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import random
from collections.abc import Sequence
from pathlib import Path

import torch

from nmt.checkpoint import adapter_base, checkpoint_tokenizer
from nmt.config import Experiment, config_to_dict, load_config, resolve_config
from nmt.cores import available_cores
from nmt.data.corpus import prepare_corpus
from nmt.errors import UserError
from nmt.extras import require_extra
from nmt.model.device import resolve_device, resolve_precision
from nmt.model.seq2seq import build_model
from nmt.train.distributed import local_rank, start_ranks, stop_ranks
from nmt.train.precision import run_precision
from nmt.train.progress import Outcome
from nmt.train.resume import resume_point, trim_metrics
from nmt.train.rundir import RunLog, check_run_dir, save_config, start_run
from nmt.train.trainer import Trainer
from nmt.train.transfer import load_parent_weights, parent_checkpoint, with_adapters
from nmt.translate.auto_precision import auto_precision

log = logging.getLogger("nmt")


def seed_everything(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)


def train_run(
    config: str | os.PathLike | Experiment,
    overrides: Sequence[str] = (),
    run_dir: str | os.PathLike | None = None,
    overwrite: bool = False,
    resume: bool = False,
) -> Outcome:
    """What `nmt train` does: trains `config` (a YAML file, or an Experiment) amended by
    `overrides` ("train.max_steps=500", as --set takes them) into `run_dir` (default
    runs/<config name>), then scores the best checkpoint on the test split. The Outcome says
    why it stopped, at which step, the test scores and the run directory."""
    if isinstance(overrides, str):
        raise UserError("overrides must be a list of KEY=VALUE strings, not one string.")
    if isinstance(config, Experiment):
        experiment = resolve_config(config_to_dict(config), overrides, "the given Experiment")
    elif isinstance(config, (str, os.PathLike)):
        experiment = load_config(config, overrides)
    else:
        raise UserError(
            f"train_run expects a config file path or an nmt.config.Experiment, got "
            f"{type(config).__name__}."
        )
    directory = Path(run_dir) if run_dir is not None else Path("runs") / experiment.name
    return train_experiment(experiment, directory, overwrite=overwrite, resume=resume)


def train_experiment(
    config: Experiment, run_dir: Path, overwrite: bool = False, resume: bool = False
) -> Outcome:
    """The whole `nmt train` command, in this process's role under torchrun (if any)."""
    if resume and overwrite:
        raise UserError("--resume and --overwrite contradict each other; pass one of them.")
    if config.train.tensorboard:
        require_extra("tensorboard", "train.tensorboard: true")
    device = resolve_device(config.train.device, local_rank())
    payload = resume_point(run_dir, config) if resume else None
    ranks = start_ranks(device)
    try:
        return _train(config, run_dir, payload, overwrite, device, ranks)
    finally:
        stop_ranks(ranks)


def _train(config, run_dir, payload, overwrite, device, ranks) -> Outcome:
    """Checks the run directory before any work and writes it only once the corpus has
    loaded, so a bad config or corpus leaves an old run as it was."""
    if payload is None and ranks.is_main:
        check_run_dir(run_dir, overwrite)
    with RunLog(active=ranks.is_main) as run_log:
        threads = config.train.threads or max(1, available_cores() // ranks.local_world)
        torch.set_num_threads(threads)
        seed_everything(config.train.seed)
        tokenizer = parent = resumed_base = None
        if payload is not None:  # an adapter run's base: read once, for vocabularies and weights
            last = run_dir / "last.pt"
            resumed_base = adapter_base(payload, last) if "base" in payload else None
            tokenizer = checkpoint_tokenizer(payload, last, resumed_base)
        elif config.train.init_from:
            parent, tokenizer = parent_checkpoint(config)
        with ranks.main_first():
            corpus = prepare_corpus(config, run_dir, tokenizer)
        vocab = corpus.tokenizer
        config = _in_run_precision(config, device, payload, vocab, ranks.distributed)
        model = build_model(config.model, vocab.src, vocab.tgt)
        if parent is not None:  # before the run directory is written: a misfit leaves none
            load_parent_weights(model, parent, config.train.init_from, config)
        base = with_adapters(model, config, parent or resumed_base, payload)
        if ranks.is_main:
            if payload is None:
                start_run(run_dir, config, corpus.tokenizer)
            else:
                trim_metrics(run_dir / "metrics.jsonl", payload["training"]["metrics_lines"])
                save_config(run_dir, config)
            run_log.attach(run_dir)
        ranks.barrier()
        if ranks.distributed:  # same initial weights everywhere, different dropout per rank
            torch.manual_seed(config.train.seed + ranks.rank)
        trainer = Trainer(config, run_dir, corpus, model, device, ranks, payload, base)
        _log_start(config, corpus, model, run_dir, device, ranks, payload)
        try:
            with trainer.stop:
                return trainer.fit()
        finally:
            trainer.report.close()


def _in_run_precision(config, device, payload, tokenizer, distributed) -> Experiment:
    """`config` with the precision the run trains in, which config.yaml and the checkpoints
    record (a resumed run's: nmt/train/precision.py, run_precision); auto measured where it
    is a question, but presumed in a distributed run, whose ranks must agree."""
    trained = payload["config"]["train"]["precision"] if payload else None

    def auto() -> str:
        if distributed:
            return resolve_precision("auto", device, config.model.width)
        return auto_precision(config, tokenizer, device)

    precision = run_precision(config.train.precision, device, trained, auto)
    return dataclasses.replace(config, train=dataclasses.replace(config.train, precision=precision))


def _log_start(config, corpus, model, run_dir, device, ranks, payload) -> None:
    parameters = sum(p.numel() for p in model.parameters())
    learning = sum(p.numel() for p in model.parameters() if p.requires_grad)
    shown = f"{parameters / 1e6:.2f}M parameters"
    if learning < parameters:
        share = 100 * learning / (parameters - learning)
        shown += f" ({learning / 1e6:.3f}M learning, {share:.2f}% of the base's)"
    log.info(
        "%s: %s, vocab %d/%d, %s, %s%s, %s, run dir %s",
        config.name,
        corpus.train.description,
        corpus.tokenizer.src.size,
        corpus.tokenizer.tgt.size,
        shown,
        device,
        f" x {ranks.world} processes" if ranks.distributed else "",
        config.train.precision,
        run_dir,
    )
    if payload is not None:
        log.info("resuming at step %d", payload["step"])
