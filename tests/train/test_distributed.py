"""Multi-process training: batch sharding, and a real 2-process gloo run under torchrun."""

import json
import os
import subprocess
import sys

import torch

from conftest import tiny_experiment, tiny_train_args
from nmt.checkpoint import load_checkpoint
from nmt.data.splits import ParallelText, read_lines
from nmt.train.distributed import Ranks
from nmt.train.experiment import train_experiment
from nmt.translate.evaluation import evaluate
from nmt.translate.translator import Translator


def test_ranks_take_distinct_batches_and_as_many_each():
    batches = list(range(11))
    shares = [list(Ranks(rank=r, world=3).shard(batches)) for r in range(3)]
    assert shares == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]  # 9 and 10: an incomplete last group
    assert list(Ranks().shard(batches)) == batches


def test_two_processes_under_torchrun_write_one_set_of_outputs(tmp_path, corpus_dir):
    """Also: 2 ranks x 1 batch per update == 1 process accumulating the same 2 batches
    (rank r takes batches r, r + 2, ...; the loss is a mean over both ranks' tokens), and
    the one moving average of the weights rank 0 keeps equals that process's."""
    extra = [
        "train.max_steps=4",
        "train.ema_decay=0.9",
        "train.valid_every=2",
        "model.encoder.dropout=0",
        "model.decoder.dropout=0",
    ]
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node=2",
            "-m",
            "nmt",
            *tiny_train_args(tmp_path, corpus_dir, *extra),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("test BLEU") == 1  # rank 0 alone reports
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records if "valid_bleu" in r] == [2, 4]  # validated once each
    assert sum("test_bleu" in r for r in records) == 1
    log = (tmp_path / "train.log").read_text()
    assert log.count("step=4 valid_loss") == 1 and "x 2 processes" in log
    last = load_checkpoint(tmp_path / "last.pt")
    assert last["training"]["world"] == 2 and len(last["training"]["rng"]) == 2
    assert not any(key.startswith("module.") for key in last["model"])  # the unwrapped module
    assert last["training"]["progress"]["batch_in_epoch"] == 8  # 4 steps x 2 ranks
    # best.pt holds the weights rank 0 validated: they score its recorded valid BLEU again
    best = load_checkpoint(tmp_path / "best.pt")
    valid = ParallelText(
        *(read_lines(corpus_dir / f"valid.{lang}")[:8] for lang in ("en", "de")), ""
    )
    again = evaluate(Translator.load(tmp_path / "best.pt", beam=1), valid).scores
    validated = {r["step"]: r["valid_bleu"] for r in records if "valid_bleu" in r}
    assert again.bleu == best["metrics"]["valid_bleu"] == validated[best["step"]]

    config = tiny_experiment(corpus_dir, *extra, "train.accum_steps=2")
    train_experiment(config, tmp_path / "one")
    alone = load_checkpoint(tmp_path / "one" / "last.pt")
    for weights in ("model", "ema"):
        for name, tensor in last[weights].items():
            assert torch.allclose(tensor, alone[weights][name], atol=1e-5), (weights, name)
