"""Stopping cleanly and surviving kill -9: real `nmt train` processes, signalled mid-run."""

import logging
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from conftest import tiny_experiment, tiny_train_args
from nmt.checkpoint import load_checkpoint
from nmt.config import config_differences, config_to_dict
from nmt.errors import UserError
from nmt.train.experiment import train_experiment
from nmt.train.resume import check_resumable, trim_metrics
from nmt.train.rng import rng_preserved


def start_training(run_dir, corpus_dir, *extra, flags=()):
    args = [*tiny_train_args(run_dir, corpus_dir, "train.max_steps=100000", *extra), *flags]
    return subprocess.Popen(
        [sys.executable, "-m", "nmt", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_step_line(process) -> list[str]:
    lines = []
    for line in process.stderr:
        lines.append(line)
        if line.startswith("step="):
            break
    return lines


def test_sigint_finishes_the_step_saves_last_and_says_how_to_resume(tmp_path, corpus_dir):
    process = start_training(tmp_path, corpus_dir, "train.valid_every=1000")
    lines = wait_for_step_line(process)
    assert lines and lines[-1].startswith("step="), "".join(lines)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 0, stderr
    message = stdout.strip().splitlines()
    assert len(message) == 1 and "resume with: nmt train --config" in message[0]
    assert f"--run-dir {tmp_path} --resume" in message[0]
    last = load_checkpoint(tmp_path / "last.pt")
    assert last["step"] >= 2 and "optimizer" in last["training"]
    assert "Traceback" not in stderr


def test_kill_9_never_leaves_a_checkpoint_that_fails_to_load(tmp_path, corpus_dir):
    """Kill at random moments (also during startup and checkpoint writes): every *.pt loads,
    and a resume loses at most the steps since the last checkpoint (one: we save each step)."""
    chooser = random.Random(5)
    saved_step = 0
    for attempt in range(3):
        flag = "--resume" if (tmp_path / "last.pt").exists() else "--overwrite"
        process = start_training(
            tmp_path,
            corpus_dir,
            "train.valid_every=1",
            "train.keep_last=2",
            "train.log_every=1",
            flags=[flag],
        )
        if attempt % 2:  # some kills during startup, most mid-training
            time.sleep(chooser.uniform(0.5, 3.0))
        else:
            wait_for_step_line(process)
            time.sleep(chooser.uniform(0.0, 1.5))
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        for path in tmp_path.glob("*.pt"):
            load_checkpoint(path)  # raises on a torn file
        if (tmp_path / "last.pt").exists():
            step = load_checkpoint(tmp_path / "last.pt")["step"]
            assert step >= saved_step  # a checkpoint is never lost
            saved_step = step
    assert saved_step > 0
    final = start_training(
        tmp_path,
        corpus_dir,
        "train.valid_every=1",
        "train.keep_last=2",
        "train.log_every=1",
        f"train.max_steps={saved_step + 2}",
        flags=["--resume"],
    )
    stdout, stderr = final.communicate(timeout=120)
    assert final.returncode == 0, stderr
    assert f"resuming at step {saved_step}" in stderr
    assert load_checkpoint(tmp_path / "last.pt")["step"] == saved_step + 2
    assert not list(tmp_path.glob(".*.tmp"))  # what killed writes left was cleaned up


def test_config_differences_name_dotted_keys_and_skip_ignored():
    old = {"train": {"max_steps": 10, "lr": 0.1}, "model": {"encoder": {"layers": 1}}}
    new = {"train": {"max_steps": 20, "lr": 0.2}, "model": {"encoder": {"layers": 1}}}
    assert config_differences(old, new) == ["train.lr: 0.1 -> 0.2", "train.max_steps: 10 -> 20"]
    assert config_differences(old, new, frozenset({"train.max_steps"})) == ["train.lr: 0.1 -> 0.2"]


def test_a_run_from_before_a_key_existed_resumes_and_a_changed_key_is_named(corpus_dir):
    """A key added to nmt since the run started (data.extra_train) is its default there."""
    config = tiny_experiment(corpus_dir)
    stored = config_to_dict(config)
    del stored["data"]["extra_train"]
    payload = {"training": {}, "step": 1, "config": stored}
    check_resumable(payload, config, Path("run/last.pt"))
    stored["train"]["lr"] = 0.5
    with pytest.raises(UserError, match=r"different config \(train.lr: 0.5 -> 0.002\)"):
        check_resumable(payload, config, Path("run/last.pt"))


def on_a_cpu(monkeypatch, probe_finds, fast_bf16: bool) -> None:
    """Fakes the CPU flags that auto and Precision read: with AVX-512 BF16 or without; and
    where bf16 is native, a probe that finds it faster."""
    for module in ("nmt.model.device", "nmt.train.precision"):
        monkeypatch.setattr(f"{module}.cpu_has_fast_bf16", lambda: fast_bf16)
    probe_finds(fp32=1.0, bf16=0.5)


@pytest.mark.parametrize("started, resumed", [("bf16", "fp32"), ("fp32", "fp32"), ("bf16", "bf16")])
def test_auto_resumes_on_another_cpu_in_a_precision_it_computes(
    tmp_path, corpus_dir, monkeypatch, probe_finds, caplog, started, resumed
):
    """A run of train.precision auto keeps the precision it resolved where the CPU computes
    it natively (fp32 always), else continues in the CPU's own with a notice; the master
    weights are float32 either way, so no "different config" refusal."""
    keys = ["model.decoder.emb_dim=128", "train.valid_every=2"]  # wide enough for bf16
    on_a_cpu(monkeypatch, probe_finds, fast_bf16=started == "bf16")
    train_experiment(tiny_experiment(corpus_dir, *keys, "train.max_steps=2"), tmp_path)
    assert load_checkpoint(tmp_path / "last.pt")["config"]["train"]["precision"] == started
    on_a_cpu(monkeypatch, probe_finds, fast_bf16=resumed == "bf16" or started == "fp32")
    with caplog.at_level(logging.INFO, logger="nmt"):
        again = tiny_experiment(corpus_dir, *keys, "train.max_steps=4")
        assert train_experiment(again, tmp_path, resume=True).step == 4
    last = load_checkpoint(tmp_path / "last.pt")
    assert last["config"]["train"]["precision"] == resumed
    assert f"precision: {resumed}\n" in (tmp_path / "config.yaml").read_text()
    assert all(value.dtype != torch.bfloat16 for value in last["model"].values())
    notices = [r.getMessage() for r in caplog.records if "continues in" in r.getMessage()]
    assert len(notices) == (started != resumed), notices
    if notices:
        assert "train.precision auto" in notices[0] and "bf16" in notices[0], notices


def test_trim_metrics_keeps_the_lines_of_the_checkpoint(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 1}\n{"step": 2}\n{"step": 3}\n')
    trim_metrics(path, 2)
    assert path.read_text() == '{"step": 1}\n{"step": 2}\n'


def test_rng_preserved_hides_what_the_block_draws():
    torch.manual_seed(3)
    random_state = random.getstate()
    with rng_preserved():
        torch.rand(5)
        random.random()
    after = torch.rand(2)
    torch.manual_seed(3)
    assert torch.equal(after, torch.rand(2)) and random.getstate() == random_state
