"""The training loop: exact resume, accumulation, early stopping, plateau, checkpoints."""

import json

import pytest
import torch

from conftest import ROOT, TINY_OVERRIDES
from nmt.checkpoint import load_checkpoint
from nmt.config import load_config
from nmt.data.batching import make_batch
from nmt.data.corpus import Corpus
from nmt.errors import UserError
from nmt.model.seq2seq import build_model
from nmt.train.experiment import train_experiment
from nmt.train.trainer import Trainer


def experiment(corpus_dir, *overrides):
    """The tiny config, on one thread (two threads on a busy 2-core machine crawl)."""
    return load_config(
        ROOT / "configs" / "demo.yaml",
        [
            f"data.path={corpus_dir}",
            "data.demo=false",
            *TINY_OVERRIDES,
            "train.threads=1",
            *overrides,
        ],
    )


def records(run_dir):
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def without_timing(run_dir):
    timing = {"minutes", "tgt_tokens_per_s"}
    return [{k: v for k, v in r.items() if k not in timing} for r in records(run_dir)]


def test_resume_is_bit_identical_to_a_straight_run(tmp_path, corpus_dir):
    """40 steps straight == 20 steps, stop, resume, 20 steps: same parameters, same log.
    Dropout is on and the 40 steps cross an epoch boundary (~22 batches per epoch)."""
    keys = ["train.valid_every=10", "train.log_every=5", "train.batch_tokens=400"]
    keys += ["model.encoder.dropout=0.3", "model.decoder.dropout=0.3"]
    straight, split = tmp_path / "straight", tmp_path / "split"
    train_experiment(experiment(corpus_dir, *keys, "train.max_steps=40"), straight)
    first = train_experiment(experiment(corpus_dir, *keys, "train.max_steps=20"), split)
    assert first.step == 20 and "test_bleu" in records(split)[-1]
    second = train_experiment(
        experiment(corpus_dir, *keys, "train.max_steps=40"), split, resume=True
    )
    assert second.step == 40
    a, b = load_checkpoint(straight / "last.pt"), load_checkpoint(split / "last.pt")
    assert a["training"]["progress"]["epoch"] == 1  # the data position crossed an epoch
    assert a["model"].keys() == b["model"].keys()
    assert all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])
    assert without_timing(straight) == without_timing(split)  # the first test line is gone
    losses = [r["loss"] for r in records(split) if "loss" in r]
    assert len(losses) == 8 and len(set(losses)) > 1


def test_resume_refuses_another_config_and_finished_runs(tmp_path, corpus_dir):
    run = tmp_path / "run"
    with pytest.raises(UserError, match="no run to resume"):
        train_experiment(experiment(corpus_dir), run, resume=True)
    train_experiment(experiment(corpus_dir, "train.max_steps=3"), run)
    with pytest.raises(UserError, match=r"different config \(model.decoder.hidden_dim: 24 -> 32"):
        train_experiment(
            experiment(corpus_dir, "train.max_steps=6", "model.decoder.hidden_dim=32"),
            run,
            resume=True,
        )
    with pytest.raises(UserError, match="already reached step 3.*train.max_steps=6"):
        train_experiment(experiment(corpus_dir, "train.max_steps=3"), run, resume=True)
    with pytest.raises(UserError, match="--resume"):
        train_experiment(experiment(corpus_dir), run)


def tiny_trainer(config, tokenizer, tmp_path):
    torch.manual_seed(0)
    model = build_model(config.model, tokenizer.src, tokenizer.tgt)
    return Trainer(config, tmp_path, Corpus(tokenizer, None, None, None), model)


def test_accumulating_two_batches_equals_one_batch_of_both(tmp_path, corpus_dir, tokenizer):
    """Gradients of the loss per target token: 2 x B accumulated == 2B at once (fp32, no
    dropout, the same tokens; the batches have different token counts and padding)."""
    keys = ["model.encoder.dropout=0", "model.decoder.dropout=0", "train.clip_norm=0"]
    lines = (corpus_dir / "train.en").read_text().splitlines()[:7]
    refs = (corpus_dir / "train.de").read_text().splitlines()[:7]
    src, tgt = tokenizer.src.encode(lines), tokenizer.tgt.encode(refs)

    def batch(rows):
        return make_batch([src[i] for i in rows], [tgt[i] for i in rows], tokenizer.tgt, 0)

    accumulated = tiny_trainer(
        experiment(corpus_dir, *keys, "train.accum_steps=2"), tokenizer, tmp_path
    )
    whole = tiny_trainer(experiment(corpus_dir, *keys), tokenizer, tmp_path)
    loss_a, tokens_a, _ = accumulated.train_step([batch([0, 1, 2]), batch([3, 4, 5, 6])])
    loss_b, tokens_b, _ = whole.train_step([batch(range(7))])
    assert tokens_a == tokens_b and torch.allclose(loss_a, loss_b, rtol=1e-6)
    for (name, a), b in zip(
        accumulated.model.named_parameters(), whole.model.parameters(), strict=True
    ):
        assert torch.allclose(a.grad, b.grad, rtol=1e-5, atol=1e-8), name
    # the normalisation is per token: summing per-batch means instead would differ
    assert not torch.allclose(loss_a / 2, loss_b)


def test_plateau_early_stopping_and_step_checkpoints(tmp_path, corpus_dir):
    """With a learning rate too small to change greedy output or the rounded valid loss,
    no validation after the first improves: the plateau schedule halves the rate after
    each, and patience 3 stops the run at the fourth validation."""
    config = experiment(
        corpus_dir,
        "train.lr=1.0e-9",
        "train.schedule=plateau",
        "train.plateau_patience=1",
        "train.patience=3",
        "train.best_metric=loss",
        "train.max_steps=1000",
        "train.valid_every=2",
        "train.log_every=1",
        "train.keep_last=2",
        "train.tensorboard=true",
    )
    outcome = train_experiment(config, tmp_path)
    assert (outcome.reason, outcome.step) == ("early_stop", 8)
    lrs = {r["step"]: r["lr"] for r in records(tmp_path) if "lr" in r}
    # validations at steps 2 (the best), 4, 6, 8: each later one halves the next update's rate
    assert [lrs[s] / 1e-9 for s in range(1, 9)] == pytest.approx([1, 1, 1, 1, 0.5, 0.5, 0.25, 0.25])
    assert sorted(p.name for p in tmp_path.glob("step-*.pt")) == [
        "step-000006.pt",
        "step-000008.pt",
    ]
    assert load_checkpoint(tmp_path / "best.pt")["step"] == 2
    assert "training" not in load_checkpoint(tmp_path / "best.pt")
    assert "training" not in load_checkpoint(tmp_path / "step-000008.pt")
    assert list(tmp_path.glob("events.out.tfevents.*"))  # TensorBoard beside metrics.jsonl


def test_missing_tensorboard_is_a_clear_error(tmp_path, corpus_dir, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "torch.utils.tensorboard", None)
    with pytest.raises(UserError, match=r"pip install 'nmt\[tensorboard\]'"):
        train_experiment(experiment(corpus_dir, "train.tensorboard=true"), tmp_path)
