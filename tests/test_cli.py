"""The real entry point, end to end: train on a small corpus, translate, evaluate."""

import json
import time

import pytest

from conftest import ROOT, TINY_OVERRIDES, nmt


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, corpus_dir):
    run = tmp_path_factory.mktemp("run")
    overrides = [f"data.path={corpus_dir}", "data.demo=false", *TINY_OVERRIDES]
    result = nmt(
        "train",
        "--config",
        ROOT / "configs/demo.yaml",
        "--run-dir",
        run,
        *[arg for o in overrides for arg in ("--set", o)],
    )
    assert result.returncode == 0, result.stderr
    assert "test BLEU" in result.stdout
    return run


def test_train_writes_the_run_directory(run_dir):
    for name in ("config.yaml", "metrics.jsonl", "best.pt", "last.pt", "spm.model", "train.log"):
        assert (run_dir / name).is_file(), name
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert any("loss" in r for r in records) and any("valid_bleu" in r for r in records)
    assert "test_bleu" in records[-1]
    assert max(r["step"] for r in records) == 6


def test_translate_keeps_lines_and_order(run_dir, tmp_path):
    text = "the dog sees the cat.\n\nwe know that the bird sleeps.\n"
    result = nmt("translate", "--checkpoint", run_dir / "best.pt", input=text)
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.split("\n")) == 4 and result.stdout.split("\n")[1] == ""
    (tmp_path / "in.txt").write_text(text)
    to_file = nmt(
        "translate",
        "--checkpoint",
        run_dir / "best.pt",
        "--input",
        tmp_path / "in.txt",
        "--output",
        tmp_path / "out.txt",
        "--batch-size",
        1,
    )
    assert to_file.returncode == 0, to_file.stderr
    assert (tmp_path / "out.txt").read_text() == result.stdout


def test_eval_checkpoint_and_files(run_dir, corpus_dir):
    result = nmt("eval", "--checkpoint", run_dir / "best.pt", "--split", "test", "--json")
    assert result.returncode == 0, result.stderr
    scores = json.loads(result.stdout)
    assert {"bleu", "chrf", "bleu_signature", "chrf_signature"} <= scores.keys()
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert scores["bleu"] == records[-1]["test_bleu"]
    hyp = run_dir / "test.hyp"
    files = nmt("eval", "--hyp", hyp, "--ref", corpus_dir / "test.de", "--json")
    assert json.loads(files.stdout)["bleu"] == scores["bleu"]
    text = nmt("eval", "--hyp", hyp, "--ref", corpus_dir / "test.de")
    assert "BLEU" in text.stdout and "nrefs:1" in text.stdout


def test_existing_run_is_not_overwritten(run_dir):
    result = nmt("train", "--config", ROOT / "configs/demo.yaml", "--run-dir", run_dir)
    assert result.returncode == 2
    assert "--overwrite" in result.stderr and "Traceback" not in result.stderr


def test_user_errors_exit_2_without_traceback(tmp_path):
    result = nmt("train", "--config", ROOT / "configs/demo.yaml", "--set", "model.encoder.rnn=rnm")
    assert result.returncode == 2
    assert "model.encoder.rnn" in result.stderr and "Traceback" not in result.stderr
    missing = nmt("translate", "--checkpoint", tmp_path / "none.pt", input="x\n")
    assert missing.returncode == 2 and "does not exist" in missing.stderr


def test_help_is_fast_and_shows_examples():
    started = time.monotonic()
    result = nmt("--help")
    assert result.returncode == 0 and time.monotonic() - started < 5
    for command in ("train", "translate", "eval"):
        assert "Example" in nmt(command, "--help").stdout


@pytest.mark.parametrize(
    "model",
    [
        ["model.attention.type=dot", "model.attention.kv=separate", "model.attention.scaled=true"],
        ["model.attention.type=general", "model.attention.window=3"],
        ["model.attention.type=multihead", "model.attention.heads=2", "model.attention.kv=shared"],
        ["model.attention.kv=separate"],
        ["model.encoder.type=self_attention", "model.encoder.heads=2", "model.encoder.ff_dim=32"],
        [
            "model.encoder.type=birnn_self_attention",
            "model.encoder.heads=2",
            "model.encoder.ff_dim=32",
        ],
    ],
    ids=["dot", "general-local", "multihead", "keyvalue", "selfattn", "birnn-selfattn"],
)
def test_each_variant_trains_through_the_cli(tmp_path, corpus_dir, model):
    from typer.testing import CliRunner

    from nmt.cli import app

    overrides = [
        f"data.path={corpus_dir}",
        "data.demo=false",
        *TINY_OVERRIDES,
        "train.max_steps=3",
        *model,
    ]
    result = CliRunner().invoke(
        app,
        [
            "train",
            "--config",
            str(ROOT / "configs/demo.yaml"),
            "--run-dir",
            str(tmp_path),
            *[a for o in overrides for a in ("--set", o)],
        ],
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "best.pt").is_file()


def test_eval_compares_checkpoints_with_bootstrap_p_values(run_dir):
    best = run_dir / "best.pt"
    result = nmt("eval", "--checkpoint", best, "--checkpoint", run_dir / "last.pt", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    first, second = report["systems"]
    assert first["bleu_p"] is None and 0 <= second["bleu_p"] <= 1
    assert "bs:1000" in report["signatures"]["BLEU"]
    table = nmt("eval", "--checkpoint", best, "--checkpoint", best)
    assert "p(BLEU)" in table.stdout and str(best) in table.stdout
