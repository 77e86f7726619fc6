"""One model, several directions: the config, training with tags, translating and scoring
each direction, serving, ensembles, `train.init_from`, and checkpoints from before."""

from __future__ import annotations

import dataclasses
import itertools
import json

import pytest
import torch
from serve.serving import running_server

from conftest import (
    LINES,
    ROOT,
    nmt,
    tiny_experiment,
    tiny_train_args,
    train_demo,
    two_way_tokenizer,
)
from conftest import write_checkpoint as write_untrained
from nmt.checkpoint import load_checkpoint, save_checkpoint
from nmt.config import ConfigError, DecodeConfig, load_config
from nmt.data.batching import make_batch, pad
from nmt.data.corpus import prepare_corpus
from nmt.data.demo import generate_pairs
from nmt.data.tokenizer import Tokenizer
from nmt.errors import UserError
from nmt.search import greedy_search, max_lengths
from nmt.search.constraints import Constraints
from nmt.train.experiment import train_experiment
from nmt.translate.decoding import output_columns
from nmt.translate.evaluation import ByDirection, evaluate_run
from nmt.translate.translator import Translator

TWO_WAY = ("data.directions=[en-de,de-en]",)


@pytest.fixture(scope="module")
def two_way_run(tmp_path_factory, corpus_dir):
    run = tmp_path_factory.mktemp("two-way")
    result = nmt(*tiny_train_args(run, corpus_dir, *TWO_WAY, "train.max_steps=9"))
    assert result.returncode == 0, result.stderr
    assert "notice: data.directions is set, so data.src_lang and data.tgt_lang" in result.stderr
    return run


@pytest.fixture(scope="module")
def one_way_run(tmp_path_factory, corpus_dir):
    run = tmp_path_factory.mktemp("one-way")
    train_experiment(tiny_experiment(corpus_dir), run)
    return run


def test_the_config_reads_lists_and_mappings_and_names_bad_ones(tmp_path, corpus_dir):
    path = tmp_path / "multi.yaml"
    path.write_text(
        "data: {directions: [de-en, cs-en, en-de], max_pairs: {cs-en: 5000}, "
        "sampling_temperature: 2}\n"
    )
    data = load_config(path).data
    assert data.pairs == [("de", "en"), ("cs", "en"), ("en", "de")]
    assert data.target_languages == ["de", "en"] and data.max_pairs == {"cs-en": 5000}
    cases = {
        "data: {directions: de-en}": "'data.directions': expected a list, got str",
        "data: {directions: [de-en, 3]}": "'data.directions\\[1\\]': expected str, got int 3",
        "data: {directions: [de-en, en]}": "'data.directions\\[1\\]': expected SOURCE-TARGET",
        "data: {directions: [de-en, de-en]}": "'data.directions': lists de-en twice",
        "data: {directions: [de-en], max_pairs: {cs-en: 5}}": "'data.max_pairs.cs-en': names "
        "no direction of this corpus \\(de-en\\)",
        "data: {max_pairs: {de-en: many}}": "'data.max_pairs.de-en': expected int, got str",
        "data: {max_pairs: [5]}": "'data.max_pairs': expected a mapping, got a list",
        "data: {directions: [de-en, en-de], streaming: true}": "'data.directions': works on "
        "the train split in memory only",
        "data: {directions: [de-en, en-de]}\ntokenizer: {joint: false}": "'tokenizer.joint': "
        "must be true: a model that writes several languages \\(de, en\\)",
        "data: {sampling_temperature: 2}": "'data.sampling_temperature': only several",
    }
    for text, message in cases.items():
        path.write_text(text + "\n")
        with pytest.raises(ConfigError, match=message):
            load_config(path)


def test_tags_reach_the_model_in_front_of_every_source(tmp_path, corpus_dir):
    """Every training source starts with the tag of its pair's target language, and both
    directions are in the batches."""
    config = tiny_experiment(corpus_dir, *TWO_WAY)
    corpus = prepare_corpus(config, tmp_path)
    tags, tgt = corpus.tokenizer.src.tags, corpus.tokenizer.tgt
    german = set((corpus_dir / "train.de").read_text().splitlines())
    english = set((corpus_dir / "train.en").read_text().splitlines())
    seen = {"de": 0, "en": 0}
    for src, targets in corpus.train.batches(0):
        for ids, target in zip(src, targets, strict=True):
            language = next(lang for lang, tag in tags.items() if tag == ids[0])
            assert tgt.decode(target) in (german if language == "de" else english)
            assert not set(tags.values()) & set(ids[1:])
            seen[language] += 1
    assert seen["de"] > 100 and seen["en"] > 100


def test_with_decoder_bos_the_tag_starts_the_decoder_and_the_source_has_none(tmp_path, corpus_dir):
    """data.tags: decoder_bos: no training source holds a tag; each target starts with its
    language's, which a batch feeds the decoder instead of bos and never asks it to predict."""
    config = tiny_experiment(corpus_dir, *TWO_WAY, "data.tags=decoder_bos")
    corpus = prepare_corpus(config, tmp_path)
    tokenizer = corpus.tokenizer
    assert tokenizer.tag_place == "decoder_bos"
    tags, tgt = tokenizer.tgt.tags, tokenizer.tgt
    german = set((corpus_dir / "train.de").read_text().splitlines())
    rows = []
    for src, targets in itertools.islice(corpus.train.batches(0), 5):
        for ids, target in zip(src, targets, strict=True):
            language = next(lang for lang, tag in tags.items() if tag == target[0])
            assert (tgt.decode(target) in german) == (language == "de")
            assert not set(tags.values()) & {*ids, *target[1:]}
        rows.append(make_batch(src, targets, tgt, tokenizer.src.pad_id))
        batch, first = rows[-1], targets[0]
        assert batch.tgt_in[0, : len(first)].tolist() == first
        assert batch.tgt_out[0, : len(first)].tolist() == [*first[1:], tgt.eos_id]
        assert batch.num_tgt_tokens == sum(len(t) for t in targets)
    assert {int(tag) for batch in rows for tag in batch.tgt_in[:, 0]} == set(tags.values())
    with pytest.raises(ConfigError, match="only a model that writes several languages"):
        tiny_experiment(corpus_dir, "data.tags=decoder_bos")


@pytest.fixture(scope="module")
def decoder_bos_run(tmp_path_factory, corpus_dir):
    run = tmp_path_factory.mktemp("decoder-bos")
    config = tiny_experiment(corpus_dir, *TWO_WAY, "data.tags=decoder_bos", "train.max_steps=9")
    train_experiment(config, run)
    return run


def test_with_decoder_bos_translation_starts_from_the_tag_of_the_language_asked_for(
    decoder_bos_run, two_way_run
):
    """The checkpoint keeps where its tags go; search starts from the asked language's tag
    on the untagged source (against greedy search called by hand), restricted translation
    and forced scores work alike, and an ensemble with a source-tag model is refused."""
    checkpoint = decoder_bos_run / "best.pt"
    tokenizer = Tokenizer.from_state(load_checkpoint(checkpoint)["tokenizer"])
    assert tokenizer.tag_place == "decoder_bos"
    towards = tokenizer.towards("de")
    assert towards.src.encode(LINES) == tokenizer.src.encode(LINES)
    assert towards.start_id == tokenizer.tgt.tags["de"] != tokenizer.tgt.bos_id
    lines = [line for line in LINES if line]
    translator = Translator.load(checkpoint, workers=1, beam=1)
    model = translator.model
    for language in ("de", "en"):
        start = tokenizer.tgt.tags[language]
        src_ids = tokenizer.src.encode(lines)
        lengths = torch.tensor([len(ids) for ids in src_ids])
        decode = translator.decode
        limits = max_lengths(lengths, decode.max_len_ratio, decode.max_len_extra)
        src = pad(src_ids, tokenizer.src.pad_id)
        by_hand = greedy_search(model, src, lengths, start, tokenizer.tgt.eos_id, limits)
        found = translator.translate(lines, tgt_lang=language)
        assert [t.nbest[0].hypothesis.tokens for t in found] == [h.tokens for h in by_hand]
        ids = [t.nbest[0].hypothesis.tokens for t in found]
        scores = translator.score(lines, ids, tgt_lang=language)
        for score, translation in zip(scores, found, strict=True):
            assert score.total == pytest.approx(translation.nbest[0].hypothesis.score, abs=1e-4)
    restricted = Translator.load(checkpoint, workers=1, beam=2, restrict_to_target_language=True)
    allowed = set(tokenizer.language_pieces("de"))
    for found in restricted.translate(lines, tgt_lang="de"):
        assert set(found.nbest[0].hypothesis.tokens) <= allowed
    with pytest.raises(UserError, match="data.tags: decoder_bos vs source"):
        Translator.load([checkpoint, two_way_run / "best.pt"])


def test_a_two_way_run_validates_tests_and_keeps_each_direction(two_way_run):
    records = [json.loads(line) for line in (two_way_run / "metrics.jsonl").open()]
    valid = [r for r in records if "valid_bleu" in r][-1]
    for metric in ("bleu", "chrf"):
        mean = (valid[f"valid_{metric}_en-de"] + valid[f"valid_{metric}_de-en"]) / 2
        assert valid[f"valid_{metric}"] == pytest.approx(mean, abs=0.01)
    test = records[-1]
    assert test["test_bleu"] == pytest.approx(
        (test["test_bleu_en-de"] + test["test_bleu_de-en"]) / 2, abs=0.01
    )
    for name in ("test.en-de.hyp", "test.de-en.hyp"):
        hypotheses = (two_way_run / name).read_text().splitlines()
        assert len(hypotheses) == 40 and not any("<2" in line for line in hypotheses)
    assert json.loads((two_way_run / "tags.json").read_text()) == ["de", "en"]
    assert load_checkpoint(two_way_run / "best.pt")["tokenizer"]["tags"] == ["de", "en"]


def test_translating_names_the_language_and_never_writes_a_tag(two_way_run):
    checkpoint = two_way_run / "best.pt"
    text = "\n".join(LINES) + "\n"
    missing = nmt("translate", "--checkpoint", checkpoint, input=text)
    assert missing.returncode == 2
    assert "this model writes de, en: name the language to translate into" in missing.stderr
    unknown = nmt("translate", "--checkpoint", checkpoint, "--tgt-lang", "fr", input=text)
    assert unknown.returncode == 2 and "tgt_lang 'fr': this model writes de, en only" in (
        unknown.stderr
    )
    translator = Translator.load(checkpoint, workers=1)
    assert translator.target_languages == ["de", "en"]
    for language in ("de", "en"):
        found = nmt("translate", "--checkpoint", checkpoint, "--tgt-lang", language, input=text)
        assert found.returncode == 0, found.stderr
        expected = [t.text for t in translator.translate(LINES, tgt_lang=language)]
        assert found.stdout.splitlines() == expected and "<2" not in found.stdout
    aligned = translator.translate("the dog sees the cat.", tgt_lang="de", alignments=True)
    source_words = {int(pair.split("-")[0]) for pair in aligned.alignment.split()}
    assert source_words <= set(range(5))  # the source's own words, the tag counting for none
    mapped = translator.translate("the dog sees the cat.", tgt_lang="de", attention=True)
    assert mapped.attention.src_tokens[0] == "<2de>"  # plots show what the model attended to
    tagged = Translator.load(checkpoint, workers=1, tgt_lang="en")
    assert tagged.translate(LINES[0]).text == translator.translate(LINES[0], tgt_lang="en").text
    with pytest.raises(UserError, match="tgt_lang 'cs'"):
        Translator.load(checkpoint, tgt_lang="cs")


def test_eval_scores_each_direction_and_their_mean(two_way_run, corpus_dir):
    checkpoint = two_way_run / "best.pt"
    shown = nmt("eval", "--checkpoint", checkpoint, "--beam", "1")
    assert shown.returncode == 0, shown.stderr
    rows = [line.split() for line in shown.stdout.splitlines()[:4]]
    assert [row[0] for row in rows] == ["direction", "en-de", "de-en", "mean"]
    report = evaluate_run(checkpoint, beam=1, workers=1)
    assert isinstance(report, ByDirection) and list(report.reports) == ["en-de", "de-en"]
    assert [float(value) for value in rows[1][1:]] == [
        report.reports["en-de"].bleu,
        report.reports["en-de"].chrf,
        report.reports["en-de"].ter,
    ]
    own = evaluate_run(
        checkpoint,
        src=corpus_dir / "test.de",
        ref=corpus_dir / "test.en",
        tgt_lang="en",
        beam=1,
        workers=1,
    )
    assert own.bleu == report.reports["de-en"].bleu and own.chrf == report.reports["de-en"].chrf
    only = evaluate_run(checkpoint, tgt_lang="de", beam=1, workers=1)
    assert list(only.reports) == ["en-de"]
    with pytest.raises(UserError, match="none into fr"):
        evaluate_run(checkpoint, tgt_lang="fr", beam=1)


def test_eval_output_keeps_one_direction_and_says_when_it_cannot(two_way_run, corpus_dir, tmp_path):
    checkpoint, kept = two_way_run / "best.pt", tmp_path / "en-de.hyp"
    with pytest.raises(UserError, match="one direction, but the model's test split has 2"):
        evaluate_run(checkpoint, beam=1, output=kept)
    scores = evaluate_run(checkpoint, tgt_lang="de", beam=1, workers=1, output=kept)
    report = nmt("eval", "--hyp", kept, "--ref", corpus_dir / "test.de", "--json")
    with pytest.raises(UserError, match=f"--output {tmp_path} is a directory; "):
        evaluate_run(checkpoint, tgt_lang="de", beam=1, workers=1, output=tmp_path)
    assert json.loads(report.stdout)["bleu"] == scores.reports["en-de"].bleu


def test_an_ensemble_needs_models_that_write_the_same_languages(two_way_run, one_way_run):
    with pytest.raises(UserError, match="write different languages \\(de, en vs de\\)"):
        Translator.load([two_way_run / "best.pt", one_way_run / "best.pt"])


def test_the_server_takes_tgt_lang_and_lists_each_models_languages(tmp_path, corpus_dir, tokenizer):
    config = tiny_experiment(corpus_dir, *TWO_WAY)
    checkpoint = write_untrained(tmp_path / "two.pt", config, two_way_tokenizer(tokenizer))
    translator = Translator.load(checkpoint, workers=1)
    with running_server(tmp_path / "server.log", "--checkpoint", f"two={checkpoint}") as server:
        status, models = server.request("GET", "/translator/models")
        assert status == 200 and models[0]["tgt_langs"] == ["de", "en"]
        assert models[0]["directions"] == ["en-de", "de-en"]
        items = [
            {"src": LINES[0], "id": "two", "tgt_lang": "de", "beam": 1},
            {"src": LINES[0], "id": "two", "tgt_lang": "en", "beam": 1},
        ]
        status, answer = server.translate(items)
        assert status == 200
        for item, found in zip(items, answer[0], strict=True):
            expected = translator.translate(LINES[0], tgt_lang=item["tgt_lang"], beam=1)
            assert found["tgt"] == expected.text
        for item, message in (
            ({"src": "a", "id": "two"}, "this model writes de, en"),
            ({"src": "a", "id": "two", "tgt_lang": "fr"}, "tgt_lang 'fr'"),
        ):
            status, error = server.translate([item])
            assert status == 422 and error["detail"][0]["loc"] == ["body", 0, "tgt_lang"]
            assert message in error["detail"][0]["msg"]
        assert server.request("GET", "/translator/health")[0] == 200  # still serving
        assert server.stop() == 0


def test_init_from_starts_from_the_parents_weights_and_tokenizer_with_a_fresh_optimizer(
    tmp_path, corpus_dir, one_way_run, caplog
):
    """A one-step child at a vanishing learning rate keeps the parent's weights; its
    optimizer has taken one step, not the parent's six; its tokenizer is the parent's though
    its config asks for another size; and it can learn the reverse direction too."""
    parent = one_way_run / "best.pt"
    child = tmp_path / "child"
    keys = (f"train.init_from={parent}", "train.lr=1e-12", "tokenizer.vocab_size=120")
    train_experiment(tiny_experiment(corpus_dir, *keys, "train.max_steps=1"), child)
    assert "tokenizer.* keys of the config are ignored" in caplog.text
    before, after = load_checkpoint(parent), load_checkpoint(child / "last.pt")
    assert after["tokenizer"] == before["tokenizer"]
    for name, weight in before["model"].items():
        torch.testing.assert_close(after["model"][name], weight, atol=1e-8, rtol=0)
    adam = after["training"]["optimizer"]["state"]
    assert {int(state["step"]) for state in adam.values()} == {1}
    assert after["step"] == 1
    reverse = tmp_path / "reverse"  # German to English from the English-to-German parent
    keys = (f"train.init_from={parent}", "data.src_lang=de", "data.tgt_lang=en")
    train_experiment(tiny_experiment(corpus_dir, *keys, "train.max_steps=12"), reverse)
    assert load_checkpoint(reverse / "best.pt")["tokenizer"] == before["tokenizer"]
    records = [json.loads(line) for line in (reverse / "metrics.jsonl").read_text().splitlines()]
    losses = [record["valid_loss"] for record in records if "valid_loss" in record]
    assert len(losses) == 4 and losses[-1] < losses[0] - 0.1, losses


def test_init_from_refuses_a_parent_that_does_not_fit(tmp_path, corpus_dir, one_way_run):
    parent = one_way_run / "best.pt"
    wider = tiny_experiment(corpus_dir, f"train.init_from={parent}", "model.decoder.hidden_dim=32")
    with pytest.raises(UserError, match=f"train.init_from {parent}: its weights do not fit"):
        train_experiment(wider, tmp_path / "wider")
    both = tiny_experiment(corpus_dir, f"train.init_from={parent}", *TWO_WAY)
    with pytest.raises(UserError, match="its tokenizer has no tag for <2de>, <2en>"):
        train_experiment(both, tmp_path / "both")
    missing = tiny_experiment(corpus_dir, f"train.init_from={tmp_path / 'none.pt'}")
    with pytest.raises(UserError, match="none.pt does not exist"):
        train_experiment(missing, tmp_path / "missing")
    assert not (tmp_path / "wider").exists() and not (tmp_path / "both").exists()


def test_init_from_lets_a_child_add_parameters_but_not_drop_them(
    tmp_path, corpus_dir, one_way_run, caplog
):
    """See et al. add coverage to a trained model: the coverage weight starts fresh, with a
    notice. A child without the parent's coverage would silently drop what it learnt."""
    parent = one_way_run / "best.pt"
    covered = tiny_experiment(
        corpus_dir, f"train.init_from={parent}", "model.attention.coverage=vector"
    )
    train_experiment(dataclasses.replace(covered, name="covered"), tmp_path / "covered")
    assert "has no decoder.attention.coverage.weight.weight: it starts from scratch" in (
        caplog.text
    )
    child = load_checkpoint(tmp_path / "covered" / "last.pt")
    assert "decoder.attention.coverage.weight.weight" in child["model"]
    plain = tiny_experiment(corpus_dir, f"train.init_from={tmp_path / 'covered' / 'best.pt'}")
    with pytest.raises(UserError, match="coverage.weight.weight: not in this model"):
        train_experiment(plain, tmp_path / "plain")


def test_checkpoints_from_before_directions_load_and_translate_unchanged(tmp_path, one_way_run):
    payload = load_checkpoint(one_way_run / "best.pt")
    del payload["tokenizer"]["tags"]
    for key in ("directions", "max_pairs", "sampling_temperature"):
        del payload["config"]["data"][key]
    del payload["config"]["train"]["init_from"]
    save_checkpoint(tmp_path / "old.pt", payload)
    old = Translator.load(tmp_path / "old.pt", workers=1)
    new = Translator.load(one_way_run / "best.pt", workers=1)
    assert old.target_languages == ["de"]
    assert [t.text for t in old.translate(LINES)] == [t.text for t in new.translate(LINES)]


def test_the_demo_corpus_both_ways_in_one_model_writes_the_language_asked_for(tmp_path):
    """The demo's en->de and its reverse in one Transformer, 200 steps: every translation of
    held-out sentences is in the language its tag asked for (by the demo lexicon's words
    that only one language has), and both directions have begun to score."""
    keys = ("train.max_steps=200", "train.lr=0.004", "train.threads=1")
    config = ROOT / "configs" / "demo_transformer.yaml"  # learns both ways sooner than RNNsearch
    sets = (*TWO_WAY, *keys, "train.valid_max_sentences=100", "data.splits.test=null")
    run = train_demo(tmp_path, *sets, config=config)
    pairs = generate_pairs(300, seed=99)
    words = {
        "en": {w for en, _ in pairs for w in en.lower().split()},
        "de": {w for _, de in pairs for w in de.lower().split()},
    }
    only = {"en": words["en"] - words["de"], "de": words["de"] - words["en"]}
    translator = Translator.load(run / "best.pt", workers=1, beam=1)
    for language, column in (("de", 0), ("en", 1)):
        sources = [pair[column] for pair in pairs[:100]]
        other = "en" if language == "de" else "de"
        for translation in translator.translate(sources, tgt_lang=language):
            found = translation.text.lower().split()
            assert sum(w in only[language] for w in found) > sum(w in only[other] for w in found)
    valid = [json.loads(line) for line in (run / "metrics.jsonl").open()][-1]
    assert valid["valid_bleu_en-de"] > 5 and valid["valid_bleu_de-en"] > 5  # 15.0, 13.1 here


def test_each_languages_target_pieces_are_recorded_and_a_translation_can_keep_to_them(
    two_way_run, one_way_run, corpus_dir
):
    """The checkpoint counts each language's training target pieces (against a count made
    here); restricted, search may write exactly those, the special pieces, and what the
    constraints name, and its outputs hold nothing else."""
    checkpoint = two_way_run / "best.pt"
    tokenizer = Tokenizer.from_state(load_checkpoint(checkpoint)["tokenizer"])
    tgt = tokenizer.tgt
    for language in ("de", "en"):
        lines = (corpus_dir / f"train.{language}").read_text("utf-8").splitlines()
        ids = torch.tensor([i for line in tgt.encode(lines) for i in line])
        counts = torch.bincount(ids, minlength=tgt.size).tolist()
        assert tokenizer.target_pieces[language] == counts
    recorded = {i for i, count in enumerate(tokenizer.target_pieces["de"]) if count}
    specials = {tgt.eos_id, tgt.unk_id, tgt.bos_id, tgt.pad_id}
    restricted = DecodeConfig(restrict_to_target_language=True)
    towards = tokenizer.towards("de")
    columns = output_columns(towards, [[5, 6]], restricted, [None], None)
    assert columns.tolist() == sorted((recorded - set(tgt.tags.values())) | specials)
    english_only = sorted(
        i for i, count in enumerate(tokenizer.target_pieces["en"]) if count and i not in recorded
    )
    forced = Constraints(include=((english_only[0],),))
    assert english_only[0] in output_columns(towards, [[5]], restricted, [forced], None)
    translator = Translator.load(checkpoint, restrict_to_target_language=True, workers=1)
    allowed = set(columns.tolist())
    for found in translator.translate(LINES * 3, tgt_lang="de", beam=2):
        assert all(set(c.hypothesis.tokens) <= allowed for c in found.nbest)
        assert bool(found.nbest) == bool(found.source)  # a blank line is answered blank
    text = "\n".join(LINES) + "\n"
    flag = ("--tgt-lang", "de", "--restrict-to-target-language", "--beam", "2")
    result = nmt("translate", "--checkpoint", checkpoint, *flag, input=text)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        t.text for t in translator.translate(LINES, tgt_lang="de", beam=2)
    ]
    one_way = nmt("translate", "--checkpoint", one_way_run / "best.pt", *flag[2:], input=text)
    assert one_way.returncode == 2 and "this one writes de only" in one_way.stderr
    assert "--restrict-to-target-language" in one_way.stderr
    payload = load_checkpoint(checkpoint)
    del payload["tokenizer"]["target_pieces"]  # a checkpoint from before they were recorded
    save_checkpoint(two_way_run / "old.pt", payload)
    old = Translator.load(two_way_run / "old.pt", restrict_to_target_language=True)
    with pytest.raises(UserError, match="records no target pieces of 'de'"):
        old.translate(LINES[0], tgt_lang="de")
