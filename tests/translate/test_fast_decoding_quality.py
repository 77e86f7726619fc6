"""The faster decoders keep a trained model's quality: the demo Transformer (trained once per
session through the real command line, conftest's `demo_transformer`) translates the 500
demo test sentences int8-quantised and exported to CTranslate2 nearly as it does itself."""

from pathlib import Path

import pytest

from conftest import nmt
from nmt.scoring import score
from nmt.translate.evaluation import checkpoint_split, evaluate
from nmt.translate.translator import Translator


@pytest.fixture(scope="module")
def best(demo_transformer):
    return demo_transformer / "best.pt"


@pytest.fixture(scope="module")
def demo_test(best):
    config = Translator.load(best).config
    return checkpoint_split(config, "test")


def same_lines(found: list[str], expected: list[str]) -> float:
    return sum(a == b for a, b in zip(found, expected, strict=True)) / len(expected)


def test_int8_translates_like_fp32(best, demo_test):
    fp32 = evaluate(Translator.load(best), demo_test)
    int8 = evaluate(Translator.load(best, quantize="int8"), demo_test)
    assert same_lines(int8.hypotheses, fp32.hypotheses) >= 0.95
    assert abs(int8.scores.bleu - fp32.scores.bleu) <= 1.0


@pytest.fixture(scope="module")
def exported(best, tmp_path_factory):
    pytest.importorskip(
        "ctranslate2", reason="CTranslate2 is not installed: pip install 'nmt[ctranslate2]'"
    )
    directory = tmp_path_factory.mktemp("ct2") / "demo"
    result = nmt("export", "--format", "ctranslate2", "--checkpoint", best, "--output", directory)
    assert result.returncode == 0, result.stderr
    return directory


def translated(output: Path, demo_test, *options: object) -> list[str]:
    """`nmt translate` of the test sources, in a fresh process."""
    source = output.with_suffix(".src")
    source.write_text("".join(line + "\n" for line in demo_test.src), "utf-8")
    result = nmt("translate", *options, "--input", source, "--output", output)
    assert result.returncode == 0, result.stderr
    return output.read_text("utf-8").splitlines()


def test_ctranslate2_greedy_output_is_nmt_translate_beam_1(best, exported, demo_test, tmp_path):
    ours = translated(tmp_path / "ours.hyp", demo_test, "--checkpoint", best, "--beam", 1)
    engine = ("--engine", "ctranslate2", "--model", exported)
    theirs = translated(tmp_path / "theirs.hyp", demo_test, *engine, "--beam", 1)
    assert same_lines(theirs, ours) >= 0.98


def test_ctranslate2_beam_5_bleu_is_within_half_a_point(best, exported, demo_test, tmp_path):
    ours = translated(tmp_path / "ours.hyp", demo_test, "--checkpoint", best, "--beam", 5)
    engine = ("--engine", "ctranslate2", "--model", exported)
    theirs = translated(tmp_path / "theirs.hyp", demo_test, *engine, "--beam", 5)
    references = demo_test.tgt
    assert abs(score(theirs, references).bleu - score(ours, references).bleu) <= 0.5
