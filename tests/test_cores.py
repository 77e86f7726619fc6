"""One core count for training, SentencePiece and decoding: the cores this process may run
on (its affinity, as a cpuset container sets it), not the machine's."""

import os

import sentencepiece as spm
import torch

from conftest import TINY_CONFIG, tiny_overrides
from nmt.cores import available_cores
from nmt.train.experiment import train_run


def test_training_and_sentencepiece_use_the_cores_the_process_may_run_on(
    monkeypatch, corpus_dir, tmp_path
):
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: {0}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    assert available_cores() == 1
    asked = []
    train = spm.SentencePieceTrainer.train
    monkeypatch.setattr(
        spm.SentencePieceTrainer,
        "train",
        lambda **settings: asked.append(settings["num_threads"]) or train(**settings),
    )
    threads = torch.get_num_threads()
    try:
        overrides = tiny_overrides(corpus_dir, "train.threads=null", "train.max_steps=1")
        overrides += ["tokenizer.vocab_size=150", "data.splits.test=null"]  # a fresh tokenizer
        train_run(TINY_CONFIG, overrides, run_dir=tmp_path / "run")
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(threads)
    assert asked and set(asked) == {1}
