"""scripts/recipe_multi30k.sh end to end, on a small corpus laid out as Multi30k's files:
train two teachers, choose the ensemble's beam and length penalty on valid, score it on
test, distil the training sources with it, train the two student shapes on the distilled
corpus alone and on it with the original pairs, choose their settings on valid, score them
on test, and through CTranslate2 with int8 weights, test them against the ensemble and count
their repetitions; run again, and everything finished is kept."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, set_options, write_parallel
from nmt.data.demo import generate_pairs

SCRIPT = ROOT / "scripts" / "recipe_multi30k.sh"
# A Transformer of width 32 trained for 30 steps: the pipeline, not the quality, is tested
# (enough steps that the teachers write something for the students to learn from).
SMALL = (
    "tokenizer.vocab_size=200",
    "model.encoder.emb_dim=32",
    "model.encoder.layers=1",
    "model.encoder.ff_dim=64",
    "model.attention.attn_dim=32",
    "model.decoder.emb_dim=32",
    "model.decoder.layers=1",
    "model.decoder.ff_dim=64",
    "train.max_steps=30",
    "train.schedule=constant",
    "train.warmup_steps=0",
    "train.lr=0.01",
    "train.batch_tokens=300",
    "train.valid_every=10",
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


# about thirty `nmt` processes, a minute of one core: under `make test-slow`, so that the
# default suite stays within its five minutes
@pytest.mark.slow
def test_the_recipe_runs_every_stage_and_keeps_what_it_finished(tmp_path, corpus):
    runs = tmp_path / "runs"
    grid = ("--beams", "1 3", "--alphas", "1.0")  # the default's 2 x 4 costs 6 more evaluations
    args = ("en-de", "--data", corpus, "--models", 2, "--minutes", 2, "--runs", runs, *grid)
    args += ("--students", "base shallow")  # on both corpora, the default with --data
    first = recipe(*args, *set_options(*SMALL))
    assert first.returncode == 0, first.stderr
    for seed in (1, 2):
        assert (runs / f"seed{seed}" / "best.pt").is_file()
        config = yaml.safe_load((runs / f"seed{seed}" / "config.yaml").read_text())
        assert config["train"]["seed"] == seed and config["train"]["max_minutes"] == 1
    assert "2 models x 1 minutes" in first.stderr
    assert first.stderr.count(": valid BLEU ") == 10  # beam 1 and 3, alpha 1.0; 5 systems
    chosen = first.stderr.split("on valid and test, ")[1].split("\n")[0]  # e.g. "beam 3, alpha 1.0"
    assert chosen.startswith("beam ")
    manifest = json.loads((runs / "distilled" / "manifest.json").read_text())
    assert manifest["complete"] and len(manifest["settings"]["teachers"]) == 2
    assert (runs / "distilled" / "train.de").read_text() != (corpus / "train.de").read_text()
    shallow = yaml.safe_load((runs / "student_shallow" / "config.yaml").read_text())["model"]
    assert (shallow["encoder"]["layers"], shallow["decoder"]["layers"]) == (6, 1)
    students = ("student_base", "student_base_mixed", "student_shallow", "student_shallow_mixed")
    for student in students:
        config = yaml.safe_load((runs / student / "config.yaml").read_text())
        assert config["data"]["path"] == str(runs / "distilled")
        mixed = [str(corpus)] if student.endswith("_mixed") else None
        assert config["data"]["extra_train"] == mixed  # the original pairs, or none
        assert config["train"]["max_minutes"] == 0.5  # a quarter of --minutes under 30
    headings = [line for line in first.stdout.splitlines() if line.endswith("test:")]
    assert len(headings) == 9  # the ensemble; each student, and through CTranslate2
    assert sum(line.endswith("valid:") for line in first.stdout.splitlines()) == 5
    assert first.stdout.count("nrefs:1") >= 27 and "TER" in first.stdout  # with signatures
    assert "minutes per stage" in first.stderr and "min  distillation" in first.stderr
    scores, speeds = first.stdout.split("beam-5 speed on test (whole processes):\n")
    compared = scores.split("the students against the ensemble, test (paired bootstrap):\n")[1]
    kept = [runs / "ensemble.test.de", runs / "student_base" / "test.de"]
    kept += [runs / "student_shallow_mixed" / "ctranslate2.test.de"]
    assert all(str(path) in compared for path in kept) and "p(BLEU)" in compared
    repetition = compared.split("repeat a word 4-gram (valid, test):\n")[1].splitlines()
    assert [line.split(":")[0].strip() for line in repetition] == ["ensemble", *students]
    assert all(" of 30, test " in line and line.endswith(" of 30") for line in repetition)
    assert len(speeds.splitlines()) == 13 and speeds.count(" sentences/s, BLEU ") == 13
    assert speeds.count(", alpha 1.0\n") == 13  # each at the alpha chosen, not its config's 1.4
    assert "student_shallow_mixed, CTranslate2 int8: " in speeds
    # a rerun keeps what is finished (students are kept by the same code as teachers)
    again = recipe(*args, "--students", "", *set_options(*SMALL))
    assert again.returncode == 0, again.stderr
    assert again.stderr.count("finished before, kept") == 2
    assert again.stdout == scores.split("student_base")[0]


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
        (["de-en", "--students", "deep"], "--students names base and shallow only"),
        (["de-en", "--student-minutes", "0"], "--student-minutes must be a positive number"),
        (["de-en", "--student-data", "both"], "--student-data names distilled and mixed only"),
        (["de-en", "--student-data", "mixed"], "--student-data mixed needs --data DIR"),
        (["de-en", "--speeds", "maybe"], "--speeds must be yes or no"),
    ],
)
def test_bad_arguments_are_refused_with_a_message(args, message):
    result = recipe(*args)
    assert result.returncode == 2 and message in result.stderr
