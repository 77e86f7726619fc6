"""scripts/recipe_multi30k.sh end to end, on a small corpus laid out as Multi30k's files:
train two models, choose the ensemble's beam and length penalty on valid, score it on test;
run again, the finished models are kept."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, set_options, write_parallel
from nmt.data.demo import generate_pairs

SCRIPT = ROOT / "scripts" / "recipe_multi30k.sh"
# A Transformer of width 32 trained for 12 steps: the pipeline, not the quality, is tested.
SMALL = (
    "tokenizer.vocab_size=200",
    "model.encoder.emb_dim=32",
    "model.encoder.layers=1",
    "model.encoder.ff_dim=64",
    "model.attention.attn_dim=32",
    "model.decoder.emb_dim=32",
    "model.decoder.layers=1",
    "model.decoder.ff_dim=64",
    "train.max_steps=12",
    "train.batch_tokens=300",
    "train.valid_every=4",
    "train.threads=1",
    "decode.batch_size=20",
)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("multi30k_like")
    pairs = generate_pairs(360, seed=11)
    write_parallel(directory, "train", pairs[:300])
    write_parallel(directory, "val", pairs[300:330])
    write_parallel(directory, "test_2016_flickr", pairs[330:])
    return directory


def recipe(*args) -> subprocess.CompletedProcess:
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"  # this nmt
    return subprocess.run(
        ["bash", str(SCRIPT), *map(str, args)],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": path, "OMP_NUM_THREADS": "1"},
        timeout=600,
    )


def test_the_recipe_trains_chooses_on_valid_and_scores_the_ensemble(tmp_path, corpus):
    runs = tmp_path / "runs"
    grid = ("--beams", "1 3", "--alphas", "1.0")  # the default's 2 x 4 costs 6 more evaluations
    args = ("en-de", "--data", corpus, "--models", 2, "--minutes", 2, "--runs", runs, *grid)
    first = recipe(*args, *set_options(*SMALL))
    assert first.returncode == 0, first.stderr
    for seed in (1, 2):
        assert (runs / f"seed{seed}" / "best.pt").is_file()
        config = yaml.safe_load((runs / f"seed{seed}" / "config.yaml").read_text())
        assert config["train"]["seed"] == seed and config["train"]["max_minutes"] == 1
    assert "2 models x 1 minutes" in first.stderr
    assert first.stderr.count(": valid BLEU ") == 2  # beam 1 and 3, alpha 1.0
    chosen = first.stderr.split("on test, ")[1].split("\n")[0]  # e.g. "beam 5, alpha 0.6"
    assert chosen.startswith("beam ")
    assert "BLEU" in first.stdout and "nrefs:1" in first.stdout and "chrF" in first.stdout
    again = recipe(*args, *set_options(*SMALL))
    assert again.returncode == 0, again.stderr
    assert again.stderr.count("finished before, kept") == 2
    assert again.stdout == first.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        ([], "scripts/recipe_multi30k.sh de-en"),  # the usage
        (["fr-en"], "DIRECTION must be de-en or en-de, got 'fr-en'"),
        (["de-en", "--models", "0"], "--models must be a positive whole number"),
        (["de-en", "--minutes", "-3"], "--minutes must be a positive number"),
        (["de-en", "--minutes"], "--minutes needs a value"),
        (["de-en", "--beam", "5"], "unknown option '--beam'"),
        (["de-en", "--beams", "5,10"], "--beams must be beam sizes separated by spaces"),
        (["de-en", "--alphas", "x"], "--alphas must be numbers separated by spaces"),
    ],
)
def test_bad_arguments_are_refused_with_a_message(args, message):
    result = recipe(*args)
    assert result.returncode == 2 and message in result.stderr
