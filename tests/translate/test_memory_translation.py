"""Translating with a translation memory (--tm): an exact match comes back as it is,
flagged and unsearched; a model trained with data.fuzzy_matches reads the best fuzzy match
after the separator, as in training, and any other model reads none; what a memory cannot
go with is refused by name, in the library and the command line (the server:
tests/serve/test_served_memory.py)."""

import json

import pytest

from conftest import make_translator, nmt, tiny_experiment, tiny_train_args, write_checkpoint
from nmt.data.fuzzy_repair import SEPARATOR, with_match
from nmt.data.memory import TranslationMemory
from nmt.errors import UserError
from nmt.translate.translator import Translator


def lines(corpus_dir) -> list[str]:
    """Two training sources (exact matches, one respaced) and two test sources."""
    train = (corpus_dir / "train.en").read_text("utf-8").splitlines()
    test = (corpus_dir / "test.en").read_text("utf-8").splitlines()
    return [train[3], "  " + train[7].replace(" ", "  "), test[0], test[1]]


def test_exact_matches_come_back_as_they_are_and_other_lines_as_the_model_writes_them(
    corpus_dir, tokenizer, memory_file
):
    translator = make_translator(tiny_experiment(corpus_dir), tokenizer, beam=2)
    plain = translator.translate(lines(corpus_dir))
    translator.memory = TranslationMemory.load(memory_file)
    remembered = translator.translate(lines(corpus_dir))
    targets = (corpus_dir / "train.de").read_text("utf-8").splitlines()
    assert [t.text for t in remembered[:2]] == [targets[3], targets[7]]
    assert all(t.match.exact and t.match.score == 1.0 and t.score == 0.0 for t in remembered[:2])
    assert remembered[1].source == lines(corpus_dir)[1]  # the line as given
    # a model trained without data.fuzzy_matches reads no fuzzy match
    assert [t.match for t in remembered[2:]] == [None, None]
    assert [t.text for t in remembered[2:]] == [t.text for t in plain[2:]]


def test_a_model_trained_on_fuzzy_matches_reads_the_best_one_after_the_separator(
    corpus_dir, tokenizer, memory_file
):
    config = tiny_experiment(corpus_dir, "data.fuzzy_matches.threshold=0.5")
    translator = make_translator(config, tokenizer, beam=2)
    memory = translator.memory = TranslationMemory.load(memory_file)
    test = (corpus_dir / "test.en").read_text("utf-8").splitlines()
    found = translator.translate(test)
    read = 0
    for line, translation in zip(test, found, strict=True):
        match = memory.best(line, 0.5)
        assert translation.match == match and translation.source == line
        source = line if match is None else with_match(line, match.target)
        if not (match and match.exact):
            assert translation.src_ids == tokenizer.src.encode([source])[0]
        read += match is not None and not match.exact
    assert read  # some lines had a fuzzy match to read


def test_what_a_memory_cannot_go_with_is_refused_by_name(corpus_dir, tokenizer, memory_file):
    translator = make_translator(tiny_experiment(corpus_dir), tokenizer)
    translator.memory = TranslationMemory.load(memory_file)
    with pytest.raises(UserError, match="cannot go with alignments"):
        translator.translate("the dog sees the cat.", alignments=True)
    with pytest.raises(UserError, match="cannot go with constraints"):
        translator.translate("the dog sees the cat.", constraints={"include": ["Hund"]})
    german = tiny_experiment(corpus_dir, "data.src_lang=de", "data.tgt_lang=en")
    checkpoint = write_checkpoint(memory_file.parent / "de-en.pt", german, tokenizer)
    ran = nmt("translate", "--checkpoint", checkpoint, "--tm", memory_file, input="x\n")
    assert ran.returncode == 2 and "holds en-de pairs" in ran.stderr and "de-en" in ran.stderr


def test_eval_reports_bleu_per_band_of_the_memorys_matches(corpus_dir, tokenizer, memory_file):
    checkpoint = write_checkpoint(
        memory_file.parent / "en-de.pt", tiny_experiment(corpus_dir), tokenizer
    )
    ran = nmt("eval", "--checkpoint", checkpoint, "--tm", memory_file, "--beam", "1", "--json")
    assert ran.returncode == 0, ran.stderr
    bands = json.loads(ran.stdout)["bands"]
    test_lines = len((corpus_dir / "test.en").read_text("utf-8").splitlines())
    assert sum(band["lines"] for band in bands.values()) == test_lines
    assert set(bands) <= {"exact", "90-100", "70-90", "50-70", "no match"}


def test_training_on_fuzzy_matches_makes_the_separator_a_piece_and_translates_with_tm(
    corpus_dir, memory_file, tmp_path
):
    run = tmp_path / "nfr"
    ran = nmt(*tiny_train_args(run, corpus_dir, "data.fuzzy_matches.threshold=0.6"))
    assert ran.returncode == 0, ran.stderr
    assert "data.fuzzy_matches:" in (run / "train.log").read_text("utf-8")
    tokenizer = Translator.load(run).tokenizer
    separator = tokenizer.src.processor.piece_to_id(SEPARATOR)
    assert separator != tokenizer.src.unk_id  # a piece of its own
    assert separator in tokenizer.src.encode([with_match("a dog .", "ein Hund .")])[0]
    test = (corpus_dir / "test.en").read_text("utf-8")
    ran = nmt("translate", "--checkpoint", run, "--tm", memory_file, input=test)
    assert ran.returncode == 0, ran.stderr
    assert len(ran.stdout.splitlines()) == len(test.splitlines())
