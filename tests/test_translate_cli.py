"""`nmt translate` end to end: streaming, n-best, alignments, heatmaps, ensembles."""

import dataclasses
import json
import os
import select
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from conftest import LINES, TINY_TRANSFORMER, nmt, tiny_experiment, write_checkpoint
from nmt.cli import app
from nmt.config import ConfigError
from nmt.data.demo import generate_pairs
from nmt.data.tokenizer import Tokenizer, build_tokenizer
from nmt.errors import UserError
from nmt.translate.translator import Translator


@pytest.fixture(scope="module")
def config(corpus_dir):
    return tiny_experiment(corpus_dir)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory, config, tokenizer):
    return write_checkpoint(tmp_path_factory.mktemp("ckpt") / "model.pt", config, tokenizer)


def texts(translations):
    """Each translation's n-best texts."""
    return [[candidate.text for candidate in t.nbest] for t in translations]


def streaming(*args):
    return subprocess.Popen(
        [sys.executable, "-m", "nmt", *map(str, args)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ},
    )


def test_stdin_is_translated_line_by_line_as_it_arrives(checkpoint):
    translator = Translator.load(checkpoint)
    expected = [translator.translate([line])[0].text for line in LINES]
    process = streaming("translate", "--checkpoint", checkpoint)
    try:
        for line, translation in zip(LINES, expected, strict=True):
            process.stdin.write(line + "\n")
            process.stdin.flush()  # the next line is only sent once this one's answer is read
            ready, _, _ = select.select([process.stdout], [], [], 60)
            assert ready, f"no translation of {line!r} within 60 s"
            assert process.stdout.readline() == translation + "\n"
        process.stdin.close()
        assert process.wait(timeout=30) == 0, process.stderr.read()
        assert process.stdout.read() == ""
    finally:
        process.kill()
        process.wait()


def test_a_reader_that_goes_away_ends_translation_quietly(checkpoint):
    """`nmt translate | head -1`: once what reads the translations closes the pipe, the
    next one written ends the command with SIGPIPE's status (141) and no traceback."""
    process = streaming("translate", "--checkpoint", checkpoint)
    try:
        process.stdin.write(LINES[0] + "\n")
        process.stdin.flush()
        assert process.stdout.readline()
        process.stdout.close()
        process.stdin.write(LINES[2] + "\n")
        process.stdin.flush()
        status, errors = process.wait(timeout=60), process.stderr.read()
        assert status == 141 and "Traceback" not in errors and "ignored" not in errors, errors
    finally:
        process.kill()
        process.wait()


def test_nbest_alignments_and_heatmaps_from_the_command_line(checkpoint, tmp_path):
    (tmp_path / "in.txt").write_text("".join(line + "\n" for line in LINES))
    found = nmt(
        "translate",
        "--checkpoint",
        checkpoint,
        "--input",
        tmp_path / "in.txt",
        "--output",
        tmp_path / "out.txt",
        "--beam",
        3,
        "--nbest",
        2,
        "--alignments",
        "--attention-plots",
        tmp_path / "plots",
    )
    assert found.returncode == 0, found.stderr
    rows = [line.split(" ||| ") for line in (tmp_path / "out.txt").read_text().splitlines()]
    assert [(row[0], len(row)) for row in rows] == [(str(i), 4) for i in (0, 0, 1, 1, 2, 2)]
    assert rows[2][1:] == ["", "0.0000", ""]
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == ["00000.png", "00002.png"]


def test_an_ensemble_of_a_checkpoint_with_itself_translates_like_it(checkpoint):
    alone = Translator.load(checkpoint, beam=3, nbest=2)
    pair = Translator.load([checkpoint, checkpoint], beam=3, nbest=2)
    assert texts(pair.translate(LINES)) == texts(alone.translate(LINES))


def test_an_ensemble_needs_the_same_vocabularies(
    checkpoint, config, tokenizer, corpus_dir, tmp_path
):
    lines = (corpus_dir / "train.de").read_text("utf-8").splitlines()
    other = build_tokenizer(
        dataclasses.replace(config.tokenizer, vocab_size=120), lines, lines, tmp_path
    ).tgt
    same_source = write_checkpoint(tmp_path / "tgt.pt", config, Tokenizer(tokenizer.src, other))
    with pytest.raises(UserError, match="different target vocabularies"):
        Translator.load([checkpoint, same_source])
    both = write_checkpoint(tmp_path / "both.pt", config, Tokenizer(other, other))
    with pytest.raises(UserError, match="different source vocabularies"):
        Translator.load([checkpoint, both])


def test_sampling_is_reproducible_with_a_seed(checkpoint):
    def draw(seed):
        translator = Translator.load(checkpoint, sample=True, nbest=3, seed=seed, top_p=0.9)
        return texts(translator.translate(LINES))

    assert draw(1) == draw(1) != draw(2)


def test_command_line_settings_are_checked_like_config_keys(checkpoint):
    with pytest.raises(ConfigError, match="decode.nbest"):
        Translator.load(checkpoint, beam=2, nbest=3)


@pytest.fixture(scope="module")
def transformer_checkpoint(tmp_path_factory, corpus_dir, tokenizer):
    config = tiny_experiment(corpus_dir, *TINY_TRANSFORMER)
    return write_checkpoint(tmp_path_factory.mktemp("ckpt") / "t.pt", config, tokenizer)


def test_attention_layer_chooses_what_a_transformer_shows(transformer_checkpoint, tmp_path):
    def alignments(*options):
        found = nmt(
            "translate",
            "--checkpoint",
            transformer_checkpoint,
            "--alignments",
            *options,
            input=LINES[0] + "\n",
        )
        assert found.returncode == 0, found.stderr
        return found.stdout

    shown = {}  # the heatmap each choice of layer draws
    for name, options in (
        ("last", ()),
        ("2", ("--attention-layer", 2)),
        ("1", ("--attention-layer", 1)),
    ):
        alignments(*options, "--attention-plots", tmp_path / name)
        assert [p.name for p in (tmp_path / name).iterdir()] == ["00000.png"]
        shown[name] = (tmp_path / name / "00000.png").read_bytes()
    assert shown["2"] == shown["last"] and shown["1"] != shown["last"]
    refused = nmt("translate", "--checkpoint", transformer_checkpoint, "--attention-layer", 3)
    assert refused.returncode == 2 and "layers 1 to 2" in refused.stderr


def test_workers_change_nothing_in_what_translate_and_eval_write(checkpoint, tmp_path, one_thread):
    """The same n-best lists, alignments and plots, and the same scores, with batches decoded
    one after another or side by side (the default: one worker per core)."""
    source = tmp_path / "in.txt"
    source.write_text("".join(f"{en}\n" for en, _ in generate_pairs(7, seed=3)) + "\nwe sleep.\n")
    written = {}
    for workers in ("1", "3"):
        output, plots = tmp_path / f"out{workers}.txt", tmp_path / f"plots{workers}"
        options = ["--beam", "3", "--nbest", "2", "--alignments", "--batch-size", "4"]
        result = CliRunner().invoke(
            app,
            ["translate", "--checkpoint", str(checkpoint), "--input", str(source)]
            + ["--output", str(output), "--attention-plots", str(plots), "--workers", workers]
            + options,
        )
        assert result.exit_code == 0, result.output
        pictures = sorted((p.name, p.read_bytes()) for p in plots.iterdir())
        scores = CliRunner().invoke(
            app,
            ["eval", "--checkpoint", str(checkpoint), "--split", "test", "--json"]
            + ["--workers", workers, "--batch-size", "4"],
        )
        written[workers] = (output.read_text(), pictures, json.loads(scores.stdout))
    assert written["1"] == written["3"]
    assert len(written["1"][0].splitlines()) == 2 * 9 and len(written["1"][1]) == 8


def test_no_repeat_ngram_from_the_command_line_and_the_api(checkpoint, tmp_path):
    translator = Translator.load(checkpoint, beam=3, no_repeat_ngram=2)
    translations = translator.translate(LINES)
    for hypothesis in (h for t in translations for h in t.hypotheses):
        bigrams = list(zip(hypothesis.tokens, hypothesis.tokens[1:], strict=False))
        assert len(set(bigrams)) == len(bigrams)
    source = tmp_path / "in.txt"
    source.write_text("".join(line + "\n" for line in LINES))
    options = ["--checkpoint", str(checkpoint), "--beam", "3", "--no-repeat-ngram", "2"]
    result = CliRunner().invoke(app, ["translate", *options, "--input", str(source)])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [t.text for t in translations]
    scored = CliRunner().invoke(app, ["eval", *options, "--split", "test", "--json"])
    assert scored.exit_code == 0 and "bleu" in json.loads(scored.stdout)
    refused = CliRunner().invoke(app, ["translate", *options[:2], "--no-repeat-ngram", "-1"])
    assert refused.exit_code == 2


def test_nmt_score_gives_back_the_score_of_a_models_own_translation(demo_transformer, tmp_path):
    """The trained demo Transformer's greedy translations, scored again: the forced score
    equals the search's for every translation that ended with eos and whose text re-encodes
    to the same subwords."""
    checkpoint = demo_transformer / "best.pt"
    translator = Translator.load(checkpoint, beam=1)
    sources = [en for en, _ in generate_pairs(16, seed=8)] + [""]
    translations = translator.translate(sources)
    (tmp_path / "src").write_text("".join(line + "\n" for line in sources))
    (tmp_path / "tgt").write_text("".join(t.text + "\n" for t in translations))
    result = CliRunner().invoke(
        app,
        ["score", "--checkpoint", str(checkpoint), "--src", str(tmp_path / "src")]
        + ["--tgt", str(tmp_path / "tgt"), "--json"],
    )
    assert result.exit_code == 0, result.output
    scored = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(scored) == len(sources) and scored[-1]["total"] is None  # the blank source
    compared = 0
    for translation, pair in zip(translations[:-1], scored, strict=False):
        best = translation.hypotheses[0]
        ended = best.ended
        if ended and translator.tokenizer.tgt.encode([translation.text])[0] == best.tokens:
            assert pair["total"] == pytest.approx(best.score, abs=1e-4)
            assert pair["tokens"][-1] == "</s>" and len(pair["log_probs"]) == len(pair["tokens"])
            compared += 1
    assert compared >= 12
    plain = CliRunner().invoke(
        app,
        ["score", "--checkpoint", str(checkpoint), "--src", str(tmp_path / "src")]
        + ["--tgt", str(tmp_path / "tgt")],
    )
    total, mean = plain.stdout.splitlines()[0].split("\t")
    assert float(total) == pytest.approx(scored[0]["total"], abs=1e-4)
    assert float(mean) == pytest.approx(scored[0]["mean"], abs=1e-4)
    assert plain.stdout.splitlines()[-1] == ""


def test_nmt_score_refuses_files_that_do_not_align(checkpoint, tmp_path):
    (tmp_path / "src").write_text("a dog.\nthe cat.\n")
    (tmp_path / "tgt").write_text("ein Hund.\n")
    result = CliRunner().invoke(
        app,
        ["score", "--checkpoint", str(checkpoint), "--src", str(tmp_path / "src")]
        + ["--tgt", str(tmp_path / "tgt")],
    )
    assert result.exit_code == 2 and "has 2 lines but --tgt" in result.output
