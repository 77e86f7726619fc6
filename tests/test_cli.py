"""The real entry point, end to end: train on a small corpus, translate, evaluate."""

import contextlib
import json
import re
import time

import pytest
import torch

from conftest import ROOT, TINY_TRANSFORMER, nmt, nmt_process, tiny_train_args
from nmt.checkpoint import load_checkpoint
from nmt.cli import app

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, corpus_dir):
    run = tmp_path_factory.mktemp("run")
    result = nmt(*tiny_train_args(run, corpus_dir))
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
    keys = {"bleu", "chrf", "ter", "bleu_signature", "chrf_signature", "ter_signature"}
    assert keys <= scores.keys()
    assert scores["attention_entropy"] > 0 and scores["attention_nonzero"] >= 1  # softmax
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert scores["bleu"] == records[-1]["test_bleu"]
    hyp = run_dir / "test.hyp"
    files = nmt("eval", "--hyp", hyp, "--ref", corpus_dir / "test.de", "--json")
    assert json.loads(files.stdout)["bleu"] == scores["bleu"]
    assert json.loads(files.stdout)["attention_entropy"] is None  # no attention behind them
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


def test_the_last_line_of_train_says_what_ended_the_run(tmp_path, corpus_dir):
    by_steps = nmt(*tiny_train_args(tmp_path / "steps", corpus_dir, "train.max_steps=2"))
    assert by_steps.returncode == 0, by_steps.stderr
    last = by_steps.stdout.splitlines()[-1]
    assert re.fullmatch(
        r"stopped at step 2: train.max_steps \(2\) reached, after [0-9.]+ minutes of training", last
    )
    by_time = ["train.max_steps=100000", "train.max_minutes=0.0001"]
    by_minutes = nmt(*tiny_train_args(tmp_path / "minutes", corpus_dir, *by_time))
    assert by_minutes.returncode == 0, by_minutes.stderr
    assert "test BLEU" in by_minutes.stdout.splitlines()[-2]
    assert "train.max_minutes (0.0001) reached" in by_minutes.stdout.splitlines()[-1]


def test_help_is_fast_and_shows_examples():
    """The real entry point in a fresh process: --help answers without importing torch."""
    started = time.monotonic()
    result = nmt_process("--help")
    assert result.returncode == 0 and time.monotonic() - started < 5
    for command in ("train", "translate", "eval"):
        assert "Example" in nmt(command, "--help").stdout


# Each variant by its type keys; the keys of tests/tiny.yaml it does not read (attn_dim, the
# encoder's hidden_dim) drop out with a notice.
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
        [
            "model.encoder.type=birnn_self_attention",
            "model.encoder.heads=2",
            "model.encoder.ff_dim=32",
            "model.encoder.positions=alibi",
        ],
        [*TINY_TRANSFORMER, "model.encoder.positions=relative", "model.decoder.positions=rotary"],
        [
            "model.attention.coverage=linguistic",
            "train.coverage_loss=1.0",
            "decode.coverage_penalty=0.2",
        ],
        ["model.copy=true", "tokenizer.joint=false"],
        [*TINY_TRANSFORMER, "model.copy=true", "model.copy_layer=1"],
    ],
    ids=[
        "dot",
        "general-local",
        "multihead",
        "keyvalue",
        "selfattn",
        "birnn-selfattn",
        "birnn-selfattn-alibi",
        "transformer-relative-rotary",
        "coverage",
        "copy-two-vocabularies",
        "transformer-copy",
    ],
)
def test_each_variant_trains_through_the_cli(tmp_path, corpus_dir, model):
    result = nmt(*tiny_train_args(tmp_path, corpus_dir, "train.max_steps=3", *model))
    assert result.returncode == 0, result.stderr
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


def test_eval_scores_an_ensemble_as_one_system(run_dir):
    """An ensemble of a model with itself averages equal predictions: the model's translations."""
    best = run_dir / "best.pt"
    single = json.loads(nmt("eval", "--checkpoint", best, "--json").stdout)
    result = nmt("eval", "--checkpoint", best, "--checkpoint", best, "--ensemble", "--json")
    assert result.returncode == 0, result.stderr
    ensemble = json.loads(result.stdout)
    assert ensemble["bleu"] == single["bleu"] and ensemble["chrf"] == single["chrf"]


def test_eval_beam_1_scores_greedy_translations(run_dir, corpus_dir, tmp_path):
    best, greedy = run_dir / "best.pt", tmp_path / "greedy.hyp"
    args = ["--checkpoint", best, "--input", corpus_dir / "test.en", "--output", greedy]
    assert nmt("translate", *args, "--beam", 1).returncode == 0
    scored = nmt("eval", "--hyp", greedy, "--ref", corpus_dir / "test.de", "--json")
    evaluated = nmt("eval", "--checkpoint", best, "--beam", 1, "--batch-size", 3, "--json")
    assert evaluated.returncode == 0, evaluated.stderr
    from_checkpoint = json.loads(evaluated.stdout)
    assert from_checkpoint["attention_entropy"] is not None  # a --hyp file has no attention
    assert from_checkpoint | {"attention_entropy": None, "attention_nonzero": None} == json.loads(
        scored.stdout
    )
    beam_hyp, test_de = run_dir / "test.hyp", corpus_dir / "test.de"
    compared = nmt("eval", "--hyp", beam_hyp, "--hyp", greedy, "--ref", test_de, "--json")
    beam_row, greedy_row = json.loads(compared.stdout)["systems"]
    assert (beam_row["name"], greedy_row["name"]) == (str(beam_hyp), str(greedy))
    assert greedy_row["bleu"] == from_checkpoint["bleu"] and beam_row["bleu_p"] is None
    assert 0 <= greedy_row["bleu_p"] <= 1


def test_eval_output_keeps_the_translations_it_scored(run_dir, corpus_dir, tmp_path):
    """--output writes what was scored: the translations `nmt translate` makes with the same
    settings, which score the same as --hyp."""
    best, kept, translated = run_dir / "best.pt", tmp_path / "kept.hyp", tmp_path / "made.hyp"
    evaluated = nmt("eval", "--checkpoint", best, "--beam", 2, "--output", kept, "--json")
    assert evaluated.returncode == 0, evaluated.stderr
    args = ["--checkpoint", best, "--input", corpus_dir / "test.en", "--output", translated]
    assert nmt("translate", *args, "--beam", 2).returncode == 0
    assert kept.read_bytes() == translated.read_bytes()
    scored = nmt("eval", "--hyp", kept, "--ref", corpus_dir / "test.de", "--json")
    assert json.loads(scored.stdout)["bleu"] == json.loads(evaluated.stdout)["bleu"]


@pytest.mark.parametrize("systems", [1, 2], ids=["one checkpoint", "two checkpoints"])
def test_eval_on_own_files_equals_eval_on_the_same_split(run_dir, corpus_dir, systems):
    checkpoints = ["--checkpoint", run_dir / "best.pt", "--checkpoint", run_dir / "last.pt"]
    checkpoints = checkpoints[: 2 * systems]
    own = ["--src", corpus_dir / "test.en", "--ref", corpus_dir / "test.de"]
    from_files = nmt("eval", *checkpoints, *own, "--beam", 2, "--json")
    from_split = nmt("eval", *checkpoints, "--split", "test", "--beam", 2, "--json")
    assert from_files.returncode == 0, from_files.stderr
    assert json.loads(from_files.stdout) == json.loads(from_split.stdout)


@pytest.mark.parametrize(
    "command", [c.name or c.callback.__name__ for c in app.registered_commands]
)
def test_help_prints_examples_line_by_line_and_plain_placeholders(command):
    text = nmt(command, "--help").stdout
    examples = text.split("Examples:\n")[1].split("\n\n")[0].splitlines()
    assert len(examples) >= 2 and f"nmt {command} " in examples[0], text
    assert all(line.count(f"nmt {command} ") <= 1 for line in examples), text  # not run together
    assert not re.search(r"<(list\[|path|int|float|str|text)", text), text


def test_eval_beam_1_works_whatever_nbest_the_checkpoint_asks_for(run_dir, tmp_path):
    payload = load_checkpoint(run_dir / "best.pt")
    payload["config"]["decode"].update(beam=3, nbest=3)  # eval scores only the best anyway
    torch.save(payload, tmp_path / "nbest.pt")
    plain = nmt("eval", "--checkpoint", run_dir / "best.pt", "--beam", 1, "--json")
    nbest = nmt("eval", "--checkpoint", tmp_path / "nbest.pt", "--beam", 1, "--json")
    assert nbest.returncode == 0, nbest.stderr
    assert json.loads(nbest.stdout) == json.loads(plain.stdout)


def test_an_eval_grid_gives_a_row_per_setting_each_equal_to_its_own_eval(run_dir):
    """--beam and --alpha repeated: a row per combination (greedy once, with no alpha, as
    alpha does not change it), each equal to `nmt eval` with that setting alone, and the
    best by BLEU; the model is loaded once."""
    best = run_dir / "best.pt"
    options = ["--beam", "1", "--beam", "3", "--alpha", "0.0", "--alpha", "2.0"]
    with counted_loads() as loads:
        result = nmt("eval", "--checkpoint", best, "--split", "valid", *options, "--json")
    assert result.returncode == 0, result.stderr
    assert loads == [best]
    report = json.loads(result.stdout)
    settings = [(row["beam"], row["alpha"]) for row in report["grid"]]
    assert settings == [(1, None), (3, 0.0), (3, 2.0)]
    for row in report["grid"]:
        alpha = [] if row["alpha"] is None else ["--alpha", row["alpha"]]
        alone = nmt("eval", "--checkpoint", best, "--split", "valid", "--beam", row["beam"],
                    *alpha, "--json")  # fmt: skip
        scores = json.loads(alone.stdout)
        assert (row["bleu"], row["chrf"], row["ter"]) == (
            scores["bleu"],
            scores["chrf"],
            scores["ter"],
        )
    top = max(report["grid"], key=lambda row: row["bleu"])
    expected = {"beam": top["beam"], "alpha": top["alpha"]}
    assert report["best"] == {name: value for name, value in expected.items() if value is not None}
    table = nmt("eval", "--checkpoint", best, "--split", "valid", *options).stdout
    assert table.splitlines()[0].split() == ["beam", "alpha", "BLEU", "chrF", "TER"]
    assert table.splitlines()[1].split()[:2] == ["1", "-"]  # greedy's alpha: none
    chosen = ", ".join(f"{name} {value}" for name, value in report["best"].items())
    assert f"best: {chosen}\n" in table
    several = nmt("eval", "--checkpoint", best, "--checkpoint", best, *options)
    assert several.returncode == 2 and "add --ensemble" in several.stderr


@contextlib.contextmanager
def counted_loads():
    """The checkpoint files loaded meanwhile."""
    import nmt.translate.loading as loading

    real, loads = loading.load_checkpoint, []

    def counted(path):
        loads.append(path)
        return real(path)

    loading.load_checkpoint = counted
    try:
        yield loads
    finally:
        loading.load_checkpoint = real
