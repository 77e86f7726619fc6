"""The training loop: exact resume, accumulation, early stopping, plateau, checkpoints."""

import json
import random

import pytest
import torch

from conftest import tiny_experiment as experiment
from nmt.checkpoint import load_checkpoint
from nmt.data.batching import make_batch
from nmt.data.corpus import Corpus
from nmt.data.splits import ParallelText
from nmt.errors import UserError
from nmt.model.seq2seq import build_model
from nmt.train.experiment import train_experiment
from nmt.train.keeper import CheckpointKeeper, judge
from nmt.train.precision import Precision
from nmt.train.progress import Progress
from nmt.train.trainer import Trainer
from nmt.train.validation import Validator, valid_loss


def records(run_dir):
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def without_timing(run_dir):
    timing = {"minutes", "tgt_tokens_per_s"}
    return [{k: v for k, v in r.items() if k not in timing} for r in records(run_dir)]


TWO_DIRECTIONS = ["data.directions=[en-de,de-en]", "data.max_pairs={en-de: 150, de-en: 150}"]


@pytest.mark.parametrize(
    "sampling",
    [[], ["tokenizer.sample_alpha=0.2"], TWO_DIRECTIONS],
    ids=["best", "sampled", "two-directions"],
)
def test_resume_is_bit_identical_to_a_straight_run(tmp_path, corpus_dir, sampling):
    """40 steps straight == 20 steps, stop, resume, 20 steps: same parameters, same log.
    Dropout is on and the 40 steps cross an epoch boundary (~22 batches per epoch); with
    sampled segmentations too, and with two directions drawn at random."""
    keys = ["train.valid_every=10", "train.log_every=5", "train.batch_tokens=400", *sampling]
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
    payload = load_checkpoint(run / "last.pt")  # weights that do not fit: a mixed-up file
    payload["model"] = {f"renamed.{name}": value for name, value in payload["model"].items()}
    torch.save(payload, run / "last.pt")
    with pytest.raises(UserError, match="last.pt: its weights do not match its own config"):
        train_experiment(experiment(corpus_dir, "train.max_steps=6"), run, resume=True)


def test_a_cosine_run_resumes_only_to_the_end_its_schedule_was_drawn_for(tmp_path, corpus_dir):
    """train.max_steps is where a cosine schedule ends: raising it on resume would jump the
    learning rate back up, so it is refused with the way to train further."""
    run, keys = tmp_path / "run", ("train.schedule=cosine", "train.warmup_steps=1")
    train_experiment(experiment(corpus_dir, *keys, "train.max_steps=3"), run)
    with pytest.raises(UserError, match=r"ends at train.max_steps=3; with 6 .* jump from .* to"):
        train_experiment(experiment(corpus_dir, *keys, "train.max_steps=6"), run, resume=True)
    with pytest.raises(UserError, match="reached step 3, where its cosine .*train.init_from="):
        train_experiment(experiment(corpus_dir, *keys, "train.max_steps=3"), run, resume=True)


def tiny_trainer(config, tokenizer, tmp_path):
    torch.manual_seed(0)
    model = build_model(config.model, tokenizer.src, tokenizer.tgt)
    return Trainer(config, tmp_path, Corpus(tokenizer, None, None, None), model)


def test_accumulating_two_batches_equals_one_batch_of_both(tmp_path, corpus_dir, tokenizer):
    """Gradients of the loss per target token: 2 x B accumulated == 2B at once (fp32, no
    dropout, the same tokens; the batches have different token counts and padding)."""
    keys = ["model.encoder.dropout=0", "model.decoder.dropout=0", "train.clip_norm=0"]
    keys += ["train.precision=fp32"]  # the equality is float32's
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
    mine = tmp_path / "step-avg.pt"  # the user's, not a step checkpoint: rotation leaves it
    mine.write_bytes(b"an average")
    outcome = train_experiment(config, tmp_path)
    assert (outcome.reason, outcome.step) == ("early_stop", 8)
    lrs = {r["step"]: r["lr"] for r in records(tmp_path) if "lr" in r}
    # validations at steps 2 (the best), 4, 6, 8: each later one halves the next update's rate
    assert [lrs[s] / 1e-9 for s in range(1, 9)] == pytest.approx([1, 1, 1, 1, 0.5, 0.5, 0.25, 0.25])
    assert sorted(p.name for p in tmp_path.glob("step-*.pt")) == [
        "step-000006.pt",
        "step-000008.pt",
        "step-avg.pt",
    ]
    assert mine.read_bytes() == b"an average"
    assert load_checkpoint(tmp_path / "best.pt")["step"] == 2
    assert "training" not in load_checkpoint(tmp_path / "best.pt")
    assert "training" not in load_checkpoint(tmp_path / "step-000008.pt")
    assert list(tmp_path.glob("events.out.tfevents.*"))  # TensorBoard beside metrics.jsonl


def test_a_new_run_refuses_an_old_runs_leftovers_and_leaves_other_files(tmp_path, corpus_dir):
    """Step checkpoints, TensorBoard events and test translations are a run's too: without
    --overwrite a new run refuses them (it used to delete them); files of other names stay."""
    for name in ("step-000004.pt", "events.out.tfevents.1.host", "test.en-de.hyp"):
        old = tmp_path / name.replace(".", "-")
        old.mkdir()
        (old / name).write_bytes(b"an old run's")
        with pytest.raises(UserError, match=f"already holds a run \\({name}\\).*--overwrite"):
            train_experiment(experiment(corpus_dir), old)
        assert (old / name).read_bytes() == b"an old run's"
    run = tmp_path / "run"
    run.mkdir()
    (run / "notes.txt").write_text("mine")
    train_experiment(experiment(corpus_dir, "train.max_steps=1"), run)
    train_experiment(experiment(corpus_dir, "train.max_steps=1"), run, overwrite=True)
    assert (run / "notes.txt").read_text() == "mine"


def test_missing_tensorboard_is_a_clear_error_before_any_work(tmp_path, corpus_dir, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "tensorboard", None)
    with pytest.raises(UserError, match=r"pip install 'nmt\[tensorboard\]'"):
        train_experiment(experiment(corpus_dir, "train.tensorboard=true"), tmp_path)
    assert not any(tmp_path.iterdir())


def test_the_keeper_keeps_the_best_counts_patience_and_rotates_step_checkpoints(
    tmp_path, corpus_dir, tokenizer
):
    """Higher BLEU is better; every second validation in a row without a new best reduces
    the rate (plateau_patience 2); only the last two step checkpoints stay."""
    keys = ["train.schedule=plateau", "train.plateau_patience=2", "train.keep_last=2"]
    config = experiment(corpus_dir, *keys)
    keeper = CheckpointKeeper(
        tmp_path, build_model(config.model, tokenizer.src, tokenizer.tgt), config, tokenizer
    )
    progress, verdicts = Progress(), []
    for step, bleu in enumerate([10.0, 12.0, 12.0, 11.0, 9.0, 13.0], start=1):
        progress.step = step
        keeper.keep({"step": step, "valid_bleu": bleu, "valid_loss": 1.0}, progress)
        verdicts.append((progress.best, progress.since_best, progress.lr_reductions))
        if step == 5:
            assert load_checkpoint(tmp_path / "best.pt")["step"] == 2
    assert verdicts == [(10, 0, 0), (12, 0, 0), (12, 1, 0), (12, 2, 1), (12, 3, 1), (13, 0, 1)]
    best = load_checkpoint(tmp_path / "best.pt")
    assert best["step"] == 6 and best["metrics"]["valid_bleu"] == 13.0
    assert sorted(p.name for p in tmp_path.glob("step-*.pt")) == [
        "step-000005.pt",
        "step-000006.pt",
    ]
    keeper.save_last(6, None, {"progress": progress.state()})
    last = load_checkpoint(tmp_path / "last.pt")
    assert last["metrics"] == {"step": 6} and last["training"]["progress"]["best"] == 13.0


def test_a_lower_valid_loss_is_better_and_only_the_plateau_schedule_reduces(corpus_dir):
    train = experiment(corpus_dir, "train.best_metric=loss", "train.keep_last=0").train
    progress = Progress()
    improved = [
        judge({"valid_bleu": 0.0, "valid_loss": loss}, progress, train)
        for loss in [2.0, 1.5, 1.7, 1.5, 1.6]
    ]
    assert improved == [True, True, False, False, False]
    assert (progress.best, progress.since_best, progress.lr_reductions) == (1.5, 3, 0)


def tiny_validator(config, tokenizer, corpus_dir):
    src = (corpus_dir / "valid.en").read_text().splitlines()
    tgt = (corpus_dir / "valid.de").read_text().splitlines()
    corpus = Corpus(tokenizer, None, {"en-de": ParallelText(src, tgt, "valid")}, {})
    torch.manual_seed(0)
    model = build_model(config.model, tokenizer.src, tokenizer.tgt)
    cpu = torch.device("cpu")
    return Validator(model, corpus, config, Precision("fp32", cpu, 16), cpu)


def test_validation_leaves_the_rng_streams_untouched(corpus_dir, tokenizer):
    """Even when the model draws random numbers while it is validated, training's streams
    continue afterwards as if no validation had run."""
    validator = tiny_validator(experiment(corpus_dir), tokenizer, corpus_dir)
    draws = []
    validator.model.register_forward_pre_hook(
        lambda *_: draws.append((torch.rand(()), random.random()))
    )
    random.seed(1)
    torch.manual_seed(1)
    expected = torch.rand(3), random.random()
    random.seed(1)
    torch.manual_seed(1)
    record = validator.record(Progress(step=5))
    assert draws  # the model did draw
    assert torch.equal(torch.rand(3), expected[0]) and random.random() == expected[1]
    keys = ["step", "valid_loss", "valid_ppl", "valid_bleu", "valid_chrf", "minutes", "precision"]
    assert list(record) == keys and record["step"] == 5


def test_the_valid_loss_is_per_target_token_whatever_the_batching(corpus_dir, tokenizer):
    """Batches of 1 and of 8 pairs give the same loss: padding never counts, and the mean
    is over all target tokens, not over batches."""
    config = experiment(corpus_dir)
    validator = tiny_validator(config, tokenizer, corpus_dir)
    valid, cpu = validator.corpus.valid["en-de"], torch.device("cpu")
    src, refs = valid.src[:8], valid.tgt[:8]
    with torch.no_grad():
        one = valid_loss(validator.model, tokenizer, src, refs, 1, cpu)
        eight = valid_loss(validator.model, tokenizer, src, refs, 8, cpu)
    assert one == pytest.approx(eight, rel=1e-5)
    assert validator.record(Progress())["valid_loss"] == round(eight, 4)
