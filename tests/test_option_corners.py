"""Where two options meet: each case a reader once found failing (a traceback, a 500, a key
accepted that killed a run later), now an answer or a clear refusal naming the option."""

import json

import pytest

from conftest import (
    LINES,
    nmt,
    tiny_experiment,
    tiny_train_args,
    two_way_tokenizer,
    write_checkpoint,
)
from nmt.config import ConfigError
from nmt.errors import UserError
from nmt.search.hypothesis import coverage_penalty
from nmt.translate.lines import format_translation
from nmt.translate.translator import Translator

TWO_WAY = ("data.directions=[en-de,de-en]",)
TEXT = "".join(line + "\n" for line in LINES)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory, corpus_dir, tokenizer):
    path = tmp_path_factory.mktemp("corners") / "model.pt"
    return write_checkpoint(path, tiny_experiment(corpus_dir), tokenizer)


@pytest.mark.parametrize("search", [("--beam", "1"), ("--sample", "--nbest", "2")])
def test_the_coverage_penalty_scores_greedy_and_sampled_translations(demo_rnnsearch, search):
    """It ranks beam search's hypotheses and is part of every score shown, whichever
    search found them."""
    checkpoint = demo_rnnsearch / "best.pt"
    ran = nmt("translate", "--checkpoint", checkpoint, *search, "--coverage-penalty", "0.2",
              input=TEXT)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    kind = {"beam": 1} if search[0] == "--beam" else {"sample": True, "nbest": 2}
    penalised = Translator.load(checkpoint, coverage_penalty=0.2).translate(LINES, **kind)
    rows = [row for i, t in enumerate(penalised) for row in format_translation(i, t, t_n(kind))]
    assert ran.stdout.splitlines() == rows
    plain = Translator.load(checkpoint).translate(LINES, **kind)
    kept = Translator.load(checkpoint, coverage_penalty=0.2).translate(
        LINES, attention=True, **kind
    )
    penalties = []
    for with_it, without in zip(kept, plain, strict=True):
        unpenalised = {tuple(c.hypothesis.tokens): c.score for c in without.nbest}
        for candidate in with_it.nbest:  # the same draws, ranked with the penalty
            penalties.append(coverage_penalty(candidate.hypothesis.attention, 0.2).item())
            expected = unpenalised[tuple(candidate.hypothesis.tokens)] + penalties[-1]
            assert candidate.score == pytest.approx(expected, abs=1e-5)
    assert min(penalties) < 0


def t_n(kind):
    return kind.get("nbest", 1)


def test_distillation_under_a_coverage_penalty_and_greedy_search(checkpoint, tmp_path, corpus_dir):
    ran = nmt(
        "distill", "--checkpoint", checkpoint, "--data", corpus_dir, "--out", tmp_path / "d",
        "--beam", "1", "--coverage-penalty", "0.2",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert len((tmp_path / "d" / "train.de").read_text("utf-8").splitlines()) == 300


@pytest.fixture(scope="module")
def two_way_copy(tmp_path_factory, corpus_dir, tokenizer):
    config = tiny_experiment(corpus_dir, *TWO_WAY, "model.copy=true")
    path = tmp_path_factory.mktemp("copy") / "copy.pt"
    return write_checkpoint(path, config, two_way_tokenizer(tokenizer))


def test_restricting_a_copy_model_to_a_language_is_refused_naming_the_flag(two_way_copy):
    ran = nmt(
        "translate", "--checkpoint", two_way_copy, "--tgt-lang", "de",
        "--restrict-to-target-language", input=TEXT,
    )  # fmt: skip
    assert ran.returncode == 2 and "--restrict-to-target-language" in ran.stderr
    assert "model.copy" in ran.stderr and "--any-target-piece" in ran.stderr
    with pytest.raises(UserError, match="model.copy"):
        Translator.load(two_way_copy, restrict_to_target_language=True)


@pytest.mark.parametrize(
    "overrides, words",
    [
        ((*TWO_WAY, "model.copy=true"), "a model that copies (model.copy)"),
        (
            (*TWO_WAY, "model.copy=true", "train.online_backtranslation=0.5"),
            "a model that copies (model.copy)",
        ),
        ((), "this one writes de only"),
    ],
    ids=["copy", "copy and back-translation", "one language"],
)
def test_a_training_config_that_restricts_what_it_cannot_is_refused_at_once(
    corpus_dir, overrides, words
):
    with pytest.raises(ConfigError, match="decode.restrict_to_target_language") as refused:
        tiny_experiment(corpus_dir, *overrides, "decode.restrict_to_target_language=true")
    assert words in str(refused.value)


def test_decode_shortlist_in_a_training_config_trains_validates_and_tests(corpus_dir, tmp_path):
    """The shortlist is learnt after training (nmt shortlist), so validation and the final
    test decode without it; the checkpoint keeps K as its decode default."""
    run = tmp_path / "run"
    ran = nmt(*tiny_train_args(run, corpus_dir, "decode.shortlist=5", "train.max_steps=3"))
    assert ran.returncode == 0, ran.stderr
    assert "test_bleu" in (run / "metrics.jsonl").read_text("utf-8")
    assert nmt("shortlist", "--checkpoint", run).returncode == 0
    translated = nmt("translate", "--checkpoint", run, input=TEXT)  # with its K = 5
    assert translated.returncode == 0 and len(translated.stdout.splitlines()) == len(LINES)


def test_the_server_refuses_at_start_what_no_request_could_be_answered_with(checkpoint):
    """--restrict-to-target-language on a model that writes one language: exit 2 before
    serving, where it used to answer 500 to every request."""
    ran = nmt("serve", "--checkpoint", checkpoint, "--port", "0", "--restrict-to-target-language")
    assert ran.returncode == 2 and "--restrict-to-target-language" in ran.stderr
    assert "writes de only" in ran.stderr


def test_a_rebuilt_shortlist_is_not_mixed_into_a_resumed_distillation(
    tmp_path, corpus_dir, tokenizer
):
    from conftest import TINY_TRANSFORMER

    config = tiny_experiment(corpus_dir, *TINY_TRANSFORMER)
    teacher = write_checkpoint(tmp_path / "teacher.pt", config, tokenizer)
    assert nmt("shortlist", "--checkpoint", teacher, "--depth", "8").returncode == 0
    out = tmp_path / "distilled"
    args = ("distill", "--checkpoint", teacher, "--out", out, "--beam", "1", "--shortlist", "4")
    assert nmt(*args).returncode == 0
    manifest = json.loads((out / "manifest.json").read_text("utf-8"))
    assert len(manifest["settings"]["shortlist"]) == 64  # the shortlist file's sha256
    assert nmt("shortlist", "--checkpoint", teacher, "--depth", "6").returncode == 0
    again = nmt(*args)
    assert again.returncode == 2 and "shortlist:" in again.stderr, again.stderr
