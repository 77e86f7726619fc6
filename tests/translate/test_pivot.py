"""Pivot translation: through one model or a chain of two, a pivot equals its two legs run
by hand; untrained directions pivot by default; paths rank by both legs' length-normalised
scores; alignments compose through the pivot; the server pivots and lists its pivots."""

import logging
import re

import pytest

from conftest import TINY_TRANSFORMER, nmt, tiny_experiment, write_checkpoint, write_parallel
from nmt.data.demo import generate_pairs
from nmt.data.tokenizer import build_tokenizer
from nmt.errors import UserError
from nmt.translate.pivot import composed_alignment
from nmt.translate.routing import connecting
from nmt.translate.translator import Translator

THREE_WAYS = "data.directions=[de-en,en-de,en-xx,xx-en]"  # de-xx and xx-de never trained
GERMAN = ["der Hund sieht die Katze.", "", "ein Vogel schläft."]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return pivot_models(tmp_path_factory.mktemp("pivot"))


def pivot_models(directory):
    """Untrained tiny models over German, English and "xx" (German words reversed): one
    of four directions with tags, and two of one direction each for a chain."""
    corpus = directory / "corpus"
    pairs = generate_pairs(120, seed=4)
    for split in ("train", "valid", "test"):
        write_parallel(corpus, split, pairs)
        xx = "".join(" ".join(reversed(de.split())) + "\n" for _, de in pairs)
        (corpus / f"{split}.xx").write_text(xx, "utf-8")
    config = tiny_experiment(corpus, THREE_WAYS)
    lines = [side for pair in pairs for side in pair]
    tagged = build_tokenizer(config.tokenizer, lines, [], directory, ["de", "en", "xx"])
    plain = build_tokenizer(config.tokenizer, lines, [], directory)
    de_en = tiny_experiment(corpus, "data.src_lang=de", "data.tgt_lang=en")
    en_xx = tiny_experiment(corpus, "data.src_lang=en", "data.tgt_lang=xx")
    return {
        "tagged": write_checkpoint(directory / "tagged.pt", config, tagged),
        "de-en": write_checkpoint(directory / "de-en.pt", de_en, plain, seed=1),
        "en-xx": write_checkpoint(directory / "en-xx.pt", en_xx, plain, seed=2),
    }


def texts(translations):
    return [t.text for t in translations]


def test_a_pivot_is_its_two_legs_run_by_hand(models):
    translator = Translator.load(models["tagged"], beam=2, workers=1)
    through = translator.translate(GERMAN, tgt_lang="xx", through="en", src_lang="de")
    english = translator.translate(GERMAN, tgt_lang="en", src_lang="de")
    by_hand = translator.translate(texts(english), tgt_lang="xx", src_lang="en")
    assert texts(through) == texts(by_hand)
    assert [t.pivot.text if t.pivot else "" for t in through] == texts(english)
    assert through[1].text == "" and through[1].pivot is None  # a blank line stays blank


def test_a_chain_of_two_models_is_each_run_in_turn(models, tmp_path):
    chained = Translator.load(models["de-en"], then=models["en-xx"], beam=2, workers=1)
    found = chained.translate(GERMAN)
    english = Translator.load(models["de-en"], beam=2, workers=1).translate(GERMAN)
    by_hand = Translator.load(models["en-xx"], beam=2, workers=1).translate(texts(english))
    assert texts(found) == texts(by_hand)
    source = tmp_path / "in.de"
    source.write_text("".join(line + "\n" for line in GERMAN), "utf-8")
    ran = nmt("translate", "--checkpoint", models["de-en"], "--then", models["en-xx"],
              "--input", source, "--beam", "2")  # fmt: skip
    assert ran.returncode == 0 and ran.stdout.splitlines() == texts(by_hand), ran.stderr


def test_a_chain_whose_languages_do_not_meet_is_refused(models):
    with pytest.raises(UserError, match="the first writes en and the second reads de"):
        Translator.load(models["de-en"], then=models["de-en"])
    ran = nmt("translate", "--checkpoint", models["en-xx"], "--then", models["de-en"],
              input="a dog.\n")  # fmt: skip
    assert ran.returncode == 2 and "must meet in one language" in ran.stderr


def test_an_untrained_direction_goes_through_the_connecting_language(models, caplog):
    assert connecting([("de", "en"), ("en", "de"), ("en", "xx")], "de", "xx") == "en"
    assert connecting([("de", "en"), ("en", "de")], "de", "xx") is None
    translator = Translator.load(models["tagged"], beam=2, workers=1)
    with caplog.at_level(logging.WARNING):
        default = translator.translate(GERMAN, tgt_lang="xx", src_lang="de")
    assert "de-xx was not trained: 2 line(s) go through en (de-en-xx)" in caplog.text
    explicit = translator.translate(GERMAN, tgt_lang="xx", through="en", src_lang="de")
    assert texts(default) == texts(explicit)
    detected = translator.translate(GERMAN, tgt_lang="xx")  # py3langid reads German
    assert texts(detected) == texts(explicit)
    direct = Translator.load(models["tagged"], beam=2, workers=1, zero_shot="direct")
    caplog.clear()
    zero_shot = direct.translate(GERMAN, tgt_lang="xx", src_lang="de")
    assert "not trained" not in caplog.text and all(t.pivot is None for t in zero_shot)
    german = "".join(line + "\n" for line in GERMAN)
    options = (
        "--checkpoint",
        models["tagged"],
        "--tgt-lang",
        "xx",
        "--src-lang",
        "de",
        "--beam",
        "2",
    )
    pivoted = nmt("translate", *options, input=german)
    assert pivoted.stdout.splitlines() == texts(explicit)
    assert "--zero-shot direct (decode.zero_shot) translates them directly" in pivoted.stderr
    ran = nmt("translate", *options, "--zero-shot", "direct", input=german)
    assert ran.returncode == 0 and "not trained" not in ran.stderr, ran.stderr
    assert ran.stdout.splitlines() == texts(zero_shot)


def test_paths_rank_by_both_legs_length_normalised_scores(models):
    translator = Translator.load(
        models["tagged"], beam=3, nbest=3, workers=1, pivot_candidates=2, alpha=1.5
    )
    found = translator.translate(GERMAN[0], tgt_lang="xx", through="en", src_lang="de")
    scores = [c.score for c in found.nbest]
    assert scores == sorted(scores, reverse=True) and len({c.text for c in found.nbest}) == 3
    for candidate in found.nbest:
        legs = [candidate.pivot.hypothesis, candidate.hypothesis]
        assert candidate.score == pytest.approx(sum(h.normalised_score(1.5) for h in legs))
        assert candidate.pivot.score == legs[0].normalised_score(1.5)
    pivots = {c.pivot.text for c in found.nbest}
    firsts = translator.translate(GERMAN[0], tgt_lang="en", nbest=2, beam=3, src_lang="de")
    assert pivots <= {c.text for c in firsts.nbest}  # among the first leg's 2 best


def test_scores_through_the_pivot_follow_the_rule_search_ranks_by(models):
    translator = Translator.load(models["tagged"], beam=2, workers=1, through="en", alpha=1.5)
    found = translator.translate(GERMAN[0], tgt_lang="xx", src_lang="de")
    (scored,) = translator.score([GERMAN[0]], [found.nbest[0].hypothesis.tokens], tgt_lang="xx")
    assert scored.total == pytest.approx(found.nbest[0].score, abs=1e-3)


def test_alignments_compose_through_the_pivot():
    # source word 0 -> pivot word 1 -> target words 0 and 2; source 1 -> pivot 0 -> target 1
    assert composed_alignment("0-1 1-0", "1-0 0-1 1-2 2-3") == "0-0 0-2 1-1"
    assert composed_alignment("0-0", "1-1") == ""


def test_alignments_and_a_heatmap_per_leg_through_the_pivot(models, tmp_path):
    translator = Translator.load(models["tagged"], beam=2, workers=1)
    found = translator.translate(GERMAN[0], tgt_lang="xx", through="en", alignments=True)
    via = found.pivot
    second = translator.translate(via.text, tgt_lang="xx", src_lang="en", alignments=True)
    assert second.text == found.text
    assert found.alignment == composed_alignment(via.alignment, second.alignment)
    source = tmp_path / "in.de"
    source.write_text(GERMAN[0] + "\n", "utf-8")
    ran = nmt("translate", "--checkpoint", models["tagged"], "--tgt-lang", "xx", "--through",
              "en", "--input", source, "--attention-plots", tmp_path / "maps")  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert sorted(p.name for p in (tmp_path / "maps").iterdir()) == ["00000.pivot.png", "00000.png"]


def test_the_server_pivots_and_lists_its_pivots(models):
    from serve.serving import serving_app

    from nmt.serve.loading import load_models
    from nmt.serve.server import create_app

    served = load_models([f"m={models['tagged']}"])
    translator = Translator.load(models["tagged"], workers=1)
    with serving_app(create_app(served, workers=1)) as client:
        status, listed = client.request("GET", "/translator/models")
        assert status == 200 and listed[0]["pivots"] == {"de-xx": "en", "xx-de": "en"}
        item = {"src": GERMAN[0], "id": "m", "tgt_lang": "xx", "src_lang": "de", "beam": 2}
        status, answer = client.translate([item])
        expected = translator.translate(GERMAN[0], tgt_lang="xx", src_lang="de", beam=2)
        assert status == 200 and answer[0][0]["tgt"] == expected.text
        assert answer[0][0]["pivot"] == expected.pivot.text
        status, refused = client.translate([{**item, "through": "fr"}])
        assert status == 422 and refused["detail"][0]["loc"] == ["body", 0, "through"]
        assert client.request("GET", "/translator/health")[0] == 200


def test_the_server_chains_two_served_models(models):
    from serve.serving import serving_app

    from nmt.serve.loading import load_models
    from nmt.serve.server import create_app

    served = load_models([f"de-en={models['de-en']}", f"en-xx={models['en-xx']}"])
    chain = Translator.load(models["de-en"], then=models["en-xx"], beam=2, workers=1)
    with serving_app(create_app(served, workers=1)) as client:
        status, listed = client.request("GET", "/translator/models")
        assert status == 200 and [m["chains"] for m in listed] == [{"xx": "en-xx"}, {}]
        item = {"src": GERMAN[0], "id": "de-en", "then": "en-xx", "tgt_lang": "xx", "beam": 2}
        status, answer = client.translate([item])
        expected = chain.translate(GERMAN[0])
        assert status == 200 and answer[0][0]["tgt"] == expected.text
        assert answer[0][0]["pivot"] == expected.pivot.text
        for wrong, problem in (("fr-en", "unknown model id"), ("de-en", "must meet")):
            status, refused = client.translate([{**item, "id": "en-xx", "then": wrong}])
            assert status == 422 and refused["detail"][0]["loc"] == ["body", 0, "then"]
            assert problem in refused["detail"][0]["msg"]
        assert client.request("GET", "/translator/health")[0] == 200


def test_constraint_errors_through_a_pivot_name_the_input_line(models, tmp_path):
    translator = Translator.load(models["tagged"], beam=2, workers=1, max_constraints=1)
    two = {"include": ["a", "b"]}
    with pytest.raises(UserError, match="sentence 3, constraints: 2 phrases"):
        translator.translate(GERMAN, tgt_lang="xx", through="en", constraints=[None, None, two])
    terms = tmp_path / "terms.jsonl"
    terms.write_text('\n\n{"include": ["a", "b"]}\n', "utf-8")
    ran = nmt("translate", "--checkpoint", models["tagged"], "--tgt-lang", "xx", "--through",
              "en", "--max-constraints", "1", "--constraints", terms,
              input="".join(line + "\n" for line in GERMAN))  # fmt: skip
    assert ran.returncode == 2 and "input line 3, constraints: 2 phrases" in ran.stderr, ran.stderr


def test_prefixes_that_end_before_the_lines_are_named_through_a_chain(models, tmp_path):
    """As without a pivot: the file that ends first is named with the line it lacks."""
    prefixes = tmp_path / "prefixes.xx"
    prefixes.write_text("a\n", "utf-8")
    ran = nmt("translate", "--checkpoint", models["de-en"], "--then", models["en-xx"],
              "--prefix", prefixes, input="".join(line + "\n" for line in GERMAN))  # fmt: skip
    assert ran.returncode == 2 and f"{prefixes} (1 lines): it ends before the lines" in ran.stderr
    assert "(at line 2)" in ran.stderr


def test_the_attention_layer_is_asked_of_both_models_of_a_chain(
    models, corpus_dir, tokenizer, tmp_path
):
    """The second model's maps are what a chain's alignments and plots end with: it must
    have the layer asked for too (it was left at its last, the option unheard)."""
    german = tiny_experiment(corpus_dir, *TINY_TRANSFORMER, "data.src_lang=de", "data.tgt_lang=en")
    first = write_checkpoint(tmp_path / "de-en.pt", german, tokenizer)
    assert Translator.load(first, attention_layer=1).model.attention_layers >= 1
    with pytest.raises(UserError, match=re.escape(f"{models['en-xx']} has an RNNsearch decoder")):
        Translator.load(first, then=models["en-xx"], attention_layer=1)


def test_a_line_draws_the_same_samples_through_a_pivot_whatever_read_it_came_in(models):
    translator = Translator.load(models["tagged"], workers=1, sample=True, nbest=2, seed=3)
    options = dict(tgt_lang="xx", through="en", src_lang="de")
    whole = translator.translate(GERMAN, **options)
    (last,) = translator.stream(GERMAN[2:], first=2, **options)  # a pipe's second read
    assert [c.text for c in last.nbest] == [c.text for c in whole[2].nbest]
    assert [c.pivot.text for c in last.nbest] == [c.pivot.text for c in whole[2].nbest]


def test_scores_follow_the_path_translate_takes(models, tmp_path):
    source, target = GERMAN[0], "Katze die sieht Hund der."
    translator = Translator.load(models["tagged"], workers=1)
    (routed,) = translator.score([source], [target], tgt_lang="xx", src_lang="de")
    (through,) = translator.score([source], [target], tgt_lang="xx", through="en")
    direct = Translator.load(models["tagged"], workers=1, zero_shot="direct")
    (zero_shot,) = direct.score([source], [target], tgt_lang="xx", src_lang="de")
    assert routed.total == through.total != zero_shot.total
    (src := tmp_path / "src.de").write_text(source + "\n", "utf-8")
    (tgt := tmp_path / "tgt.xx").write_text(target + "\n", "utf-8")
    files = ("--checkpoint", models["tagged"], "--tgt-lang", "xx", "--src", src, "--tgt", tgt)
    for options, expected in (((), routed), (("--zero-shot", "direct"), zero_shot)):
        ran = nmt("score", *files, *options)
        assert ran.returncode == 0 and ran.stdout.split("\t")[0] == f"{expected.total:.4f}"
    wider = nmt("score", *files, "--pivot-candidates", "2")
    assert float(wider.stdout.split("\t")[0]) >= round(routed.total, 4)
    ran = nmt("score", *files, "--src-lang", "fr")
    assert ran.returncode == 2 and ran.stderr.startswith("error: --src-lang fr: this model reads")


def test_scores_through_a_pivot_need_one_target_per_source(models):
    translator = Translator.load(models["tagged"], beam=2, workers=1)
    options = dict(tgt_lang="xx", through="en")
    for targets in (["x"], ["x", "y", "z"]):
        with pytest.raises(UserError, match=f"got 2 sources and {len(targets)} targets"):
            translator.score(GERMAN[:2], targets, **options)
    with pytest.raises(UserError, match="a list of targets, one per source"):
        translator.score(GERMAN[:2], "xy", **options)
