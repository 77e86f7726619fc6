"""Marked-up text through a trained demo model: the tags come back around the words that
translate the words they wrapped, and the words are those of the plain translation."""

import io
import re

import pytest

from conftest import make_translator, nmt, tiny_experiment
from nmt.data.corpus import prepare_corpus
from nmt.data.markup import plain
from nmt.errors import UserError
from nmt.translate.lines import InputLines, write_translations
from nmt.translate.translator import Translator

TAGGED = [  # (marked-up English, the German words each tag must wrap)
    ('<b>a woman</b> sees <a href="#d">the small dog</a>.', ["eine Frau", "den kleinen Hund"]),
    ("they say that <i>the flower</i> has laughed.", ["die Blume"]),
    ("<p>I bring <b>the cities</b> back. They sleep.</p>", ["die Städte"]),
]


@pytest.fixture(scope="module")
def translator(demo_rnnsearch):
    return Translator.load(demo_rnnsearch)


@pytest.mark.parametrize("line, wrapped", TAGGED)
def test_tags_come_back_around_the_words_that_translate_them(translator, line, wrapped):
    marked = translator.translate(line, markup="html")
    sentences = [translator.translate(s.source).text for s in marked.sentences]
    assert plain(marked.text).split() == " ".join(sentences).split()  # the plain words
    inside = re.findall(r"<(?:b|i|a)\b[^>]*>(.*?)</(?:b|i|a)>", marked.text)
    assert inside == wrapped
    assert re.findall(r"<[^>]+>", marked.text) == re.findall(r"<[^>]+>", line)  # in order


def test_a_paragraph_is_translated_sentence_by_sentence(translator):
    marked = translator.translate("<p>I bring the cities back. They sleep.</p>", markup="html")
    assert [s.source for s in marked.sentences] == ["I bring the cities back.", "They sleep."]
    assert marked.text.startswith("<p>") and marked.text.endswith("</p>")
    assert all(s.alignment for s in marked.sentences)


def test_options_that_name_one_sentences_translation_are_refused(translator):
    for options in ({"nbest": 2}, {"alignments": True}, {"constraints": {"include": ["x"]}}):
        with pytest.raises(UserError, match="cannot go with it"):
            translator.translate("a <b>dog</b>.", markup="html", **options)


def test_a_models_own_nbest_still_gives_a_marked_up_line_one_translation(translator):
    """decode.nbest of the checkpoint (not asked for on the command line) names plain
    lines' n-best lists; a marked-up line is answered once, in its own form."""
    several = translator.with_decode(beam=4, nbest=3)
    sink = io.StringIO()
    write_translations(several, InputLines(io.BytesIO(b"a <b>dog</b>.\n")), sink, markup="html")
    expected = translator.translate("a <b>dog</b>.", markup="html").text
    assert sink.getvalue() == expected + "\n"


def test_the_command_keeps_each_lines_tags_and_refuses_what_cannot_go_with_markup(
    demo_rnnsearch, tmp_path
):
    source = tmp_path / "page.html"
    lines = [line for line, _ in TAGGED] + ['<div translate="no">keep me</div>', ""]
    source.write_text("\n".join(lines) + "\n", "utf-8")
    ran = nmt("translate", "--checkpoint", demo_rnnsearch, "--markup", "html", "--input", source)
    assert ran.returncode == 0, ran.stderr
    output = ran.stdout.splitlines()
    assert len(output) == len(lines) and output[3] == lines[3] and output[4] == ""
    for line, translated in zip(lines, output, strict=True):
        assert re.findall(r"<[^>]+>", translated) == re.findall(r"<[^>]+>", line)
    refused = nmt("translate", "--checkpoint", demo_rnnsearch, "--markup", "html", "--alignments",
                  input="a dog.\n")  # fmt: skip
    assert refused.returncode == 2 and "--alignments cannot go with it" in refused.stderr
    broken = nmt("translate", "--checkpoint", demo_rnnsearch, "--markup", "xml",
                 input="fine\n<b>a dog</i>\n")  # fmt: skip
    assert broken.returncode == 2
    assert "input line 2, column 9: not well-formed XML (</i> where </b>" in broken.stderr


def test_ctranslate2_cannot_place_tags_without_attention(tmp_path):
    ran = nmt("translate", "--engine", "ctranslate2", "--model", tmp_path, "--markup", "html")
    assert ran.returncode == 2 and "--markup html need the --checkpoint" in ran.stderr


def test_placeholders_and_kept_patterns_come_out_exactly_as_they_went_in(translator):
    held = ["{count}", "https://x.org/a?b=1&amp;c=2", "ACME-42", "5 kg", "%(name)s"]
    line = "we see {count} small dogs at https://x.org/a?b=1&amp;c=2 because ACME-42 sleeps."
    line += " a woman buys 5 kg of %(name)s."
    marked = translator.translate(line, markup="html", keep=["ACME-[0-9]+"])
    assert all(marked.text.count(text) == 1 for text in held), marked.text
    assert all(text not in sentence.source for sentence in marked.sentences for text in held)
    with pytest.raises(UserError, match="keep= and placement= are for marked-up text"):
        translator.translate("a dog.", keep=["x"])


def test_keep_needs_markup_and_a_regular_expression(demo_rnnsearch):
    alone = nmt("translate", "--checkpoint", demo_rnnsearch, "--keep", "x", input="a\n")
    assert alone.returncode == 2 and "--keep holds text out" in alone.stderr
    broken = nmt("translate", "--checkpoint", demo_rnnsearch, "--markup", "html", "--keep", "x(",
                 input="a\n")  # fmt: skip
    assert broken.returncode == 2 and "--keep 'x(' is not a regular expression" in broken.stderr


@pytest.mark.parametrize("placement", ["model", "both", "projection"])
def test_a_model_trained_with_tags_places_them_or_falls_back_keeping_each_once(
    corpus_dir, tmp_path, placement
):
    """An untrained model of a tokenizer with the placeholder pieces: whatever it writes,
    each tag comes back once (its own places where it wrote them all, else the fallback)."""
    config = tiny_experiment(corpus_dir, "data.markup_augment=0.2")
    translator = make_translator(config, prepare_corpus(config, tmp_path).tokenizer)
    lines = ["the <b>small dog</b> sees <i>a bird</i>.", "we <br> sleep.", "a <u>cat</u>."]
    found = translator.translate(lines, markup="html", placement=placement)
    for line, translation in zip(lines, found, strict=True):
        assert sorted(re.findall(r"<[^>]+>", translation.text)) == sorted(
            re.findall(r"<[^>]+>", line)
        )
        assert not re.search(r"</?t\d/?>", translation.text)
    read = found[0].sentences[0].source
    placeholders = "the <t1> small dog </t1> sees <t2> a bird. </t2>"
    assert read == (placeholders if placement != "projection" else "the small dog sees a bird.")


def test_only_a_model_trained_with_tags_places_them_itself(translator):
    with pytest.raises(UserError, match="needs a model trained with data.markup_augment"):
        translator.translate("a <b>dog</b>.", markup="html", placement="model")
