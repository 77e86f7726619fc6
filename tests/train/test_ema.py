"""The moving average of the weights (train.ema_decay): it equals the average computed by hand
over a few updates, resuming keeps it exactly, and every checkpoint translates with it while
last.pt resumes from the raw weights."""

import pytest
import torch

from conftest import tiny_experiment as experiment
from nmt.checkpoint import load_checkpoint
from nmt.config import ConfigError
from nmt.data.batching import make_batch
from nmt.data.corpus import Corpus
from nmt.model.seq2seq import build_model
from nmt.train.ema import ema_decay_at
from nmt.train.experiment import train_experiment
from nmt.train.trainer import Trainer
from nmt.translate.translator import Translator


def test_the_average_equals_one_computed_by_hand(tmp_path, corpus_dir, tokenizer):
    config = experiment(corpus_dir, "train.ema_decay=0.3")
    torch.manual_seed(0)
    model = build_model(config.model, tokenizer.src, tokenizer.tgt)
    trainer = Trainer(config, tmp_path, Corpus(tokenizer, None, None, None), model)
    lines = (corpus_dir / "train.en").read_text().splitlines()
    refs = (corpus_dir / "train.de").read_text().splitlines()
    src, tgt = tokenizer.src.encode(lines), tokenizer.tgt.encode(refs)
    expected = {name: value.detach().clone() for name, value in model.named_parameters()}
    for step in range(1, 5):
        rows = range(4 * step, 4 * step + 4)
        batch = make_batch([src[i] for i in rows], [tgt[i] for i in rows], tokenizer.tgt, 0)
        assert trainer.train_step([batch]) is not None
        decay = min(0.3, (1 + step) / (10 + step))  # 2/11, 3/12, then 0.3 (not 4/13)
        for name, value in model.named_parameters():
            expected[name] = decay * expected[name] + (1 - decay) * value.detach()
    assert [ema_decay_at(0.3, n) for n in (1, 2, 3, 4)] == [2 / 11, 0.25, 0.3, 0.3]
    averaged = dict(trainer.ema.model.named_parameters())
    for name, value in expected.items():
        torch.testing.assert_close(averaged[name], value, atol=1e-6, rtol=0)
        assert not averaged[name].requires_grad
    assert not all(torch.equal(averaged[n], v) for n, v in model.named_parameters())


def test_an_update_the_fp16_scaler_skips_leaves_the_average_alone(tmp_path, corpus_dir, tokenizer):
    """fp16's scaler skips the optimizer step whose scaled gradients overflowed (and halves
    its scale); the average must skip it too, neither moving nor counting it. A CPU scaler
    and a gradient made infinite stand in for a GPU's fp16 overflow."""
    config = experiment(corpus_dir, "train.ema_decay=0.5", "train.precision=fp32")
    torch.manual_seed(0)
    model = build_model(config.model, tokenizer.src, tokenizer.tgt)
    trainer = Trainer(config, tmp_path, Corpus(tokenizer, None, None, None), model)
    trainer.precision.scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
    next(model.parameters()).register_hook(lambda gradient: gradient * float("inf"))
    src = tokenizer.src.encode((corpus_dir / "train.en").read_text().splitlines()[:4])
    tgt = tokenizer.tgt.encode((corpus_dir / "train.de").read_text().splitlines()[:4])
    before = {name: value.clone() for name, value in trainer.ema.model.state_dict().items()}
    trainer.train_step([make_batch(src, tgt, tokenizer.tgt, 0)])
    assert trainer.precision.scaler.get_scale() == 512.0  # the step was skipped
    assert trainer.ema.updates == 0
    for name, value in trainer.ema.model.state_dict().items():
        assert torch.equal(value, before[name]), name


def test_resume_keeps_the_average_and_checkpoints_translate_with_it(tmp_path, corpus_dir):
    keys = ["train.ema_decay=0.9", "train.valid_every=10", "train.keep_last=1"]
    straight, split = tmp_path / "straight", tmp_path / "split"
    train_experiment(experiment(corpus_dir, *keys, "train.max_steps=30"), straight)
    train_experiment(experiment(corpus_dir, *keys, "train.max_steps=20"), split)
    train_experiment(experiment(corpus_dir, *keys, "train.max_steps=30"), split, resume=True)
    a, b = load_checkpoint(straight / "last.pt"), load_checkpoint(split / "last.pt")
    assert a["training"]["ema_updates"] == 30
    for weights in ("model", "ema"):
        assert all(torch.equal(a[weights][k], b[weights][k]) for k in a[weights]), weights
    assert not all(torch.equal(a["model"][k], a["ema"][k]) for k in a["model"])
    # the step checkpoint of step 30 holds the average; translating last.pt uses it too
    step = load_checkpoint(straight / "step-000030.pt")
    assert "ema" not in step and all(torch.equal(step["model"][k], a["ema"][k]) for k in a["ema"])
    translator = Translator.load(straight / "last.pt")
    for name, value in translator.model.state_dict().items():
        assert torch.equal(value, a["ema"][name]), name
    best = load_checkpoint(straight / "best.pt")
    assert "ema" not in best and "training" not in best


def test_a_run_without_an_average_keeps_one_set_of_weights(tmp_path, corpus_dir):
    train_experiment(experiment(corpus_dir, "train.max_steps=2"), tmp_path)
    assert "ema" not in load_checkpoint(tmp_path / "last.pt")


@pytest.mark.parametrize("decay", [0, 1, 1.5, -0.1])
def test_a_decay_outside_zero_to_one_is_refused(corpus_dir, decay):
    with pytest.raises(ConfigError, match=r"'train.ema_decay': must be in \(0, 1\)"):
        experiment(corpus_dir, f"train.ema_decay={decay}")
