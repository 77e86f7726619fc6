"""Constraints and prefixes on the trained demo Transformer, through the Python API and
`nmt translate`: included phrases appear, excluded ones do not, at beam 5 and beam 1; no
constraints is plain search; a prefix starts the translation; bad input is named."""

import json
import re

import pytest
from typer.testing import CliRunner

from conftest import make_translator
from nmt.cli import app
from nmt.data.demo import generate_pairs
from nmt.errors import UserError
from nmt.translate.constraints import TextConstraints, constraints_line, parse_constraints
from nmt.translate.translator import Translator

SOURCES = [en for en, _ in generate_pairs(24, seed=5)]


@pytest.fixture(scope="module")
def translator(demo_transformer):
    return Translator.load(demo_transformer / "best.pt", workers=1)


@pytest.fixture(scope="module")
def plain(translator):
    return translator.translate(SOURCES)


def words(text):
    return text.replace(",", " ").replace(".", " ").split()


def holds(text, phrase):
    """Whether `phrase` appears in `text` as whole words."""
    return f" {' '.join(words(phrase))} " in f" {' '.join(words(text))} "


def drawn_constraints(plain):
    """As tests of constrained decoding draw them: a word and a two-word phrase of another
    sentence's translation that this one lacks, and a word of its own translation to ban."""
    found = []
    for index, translation in enumerate(plain):
        own, other = words(translation.text), words(plain[(index + 7) % len(plain)].text)
        include = [w for w in other if w not in own][:1]
        pairs = [" ".join(other[i : i + 2]) for i in range(len(other) - 1)]
        include += [p for p in pairs if not holds(translation.text, p)][:1]
        exclude = [w for w in own if len(w) > 3 and not any(w in p.split() for p in include)]
        found.append({"include": include, "exclude": exclude[:1]})
    return found


@pytest.mark.parametrize("beam", [5, 1])
def test_included_phrases_appear_and_excluded_ones_do_not(translator, plain, beam):
    constraints = drawn_constraints(plain)
    assert not any(
        all(holds(t.text, p) for p in c["include"]) for t, c in zip(plain, constraints, strict=True)
    )
    found = translator.translate(SOURCES, beam=beam, constraints=constraints)
    for translation, wanted in zip(found, constraints, strict=True):
        assert translation.constraints_met is True
        for phrase in wanted["include"]:
            assert holds(translation.text, phrase), (translation.text, wanted)
        for phrase in wanted["exclude"]:
            assert not holds(translation.text, phrase), (translation.text, wanted)


def test_constraints_the_translation_already_meets_change_nothing(translator, plain):
    own = [{"include": words(t.text)[:1]} for t in plain]
    found = translator.translate(SOURCES, constraints=own)
    assert [t.text for t in found] == [t.text for t in plain]
    assert all(t.constraints_met for t in found)


def test_no_constraints_is_plain_beam_search_bit_for_bit(translator, plain):
    for none in ([None] * len(SOURCES), [{}] * len(SOURCES)):
        found = translator.translate(SOURCES, constraints=none, prefix=[None] * len(SOURCES))
        assert [(t.text, t.score) for t in found] == [(t.text, t.score) for t in plain]
        assert all(t.constraints_met is None for t in found)


@pytest.mark.parametrize("beam", [5, 1])
def test_a_prefix_starts_the_translation(translator, plain, beam):
    prefixes = [" ".join(words(plain[(i + 3) % len(plain)].text)[:2]) for i in range(4)]
    prefixes += ["", None]
    found = translator.translate(SOURCES[:6], beam=beam, prefix=prefixes)
    for translation, prefix in zip(found[:4], prefixes, strict=False):
        assert translation.text.startswith(prefix), (translation.text, prefix)
    again = translator.translate(SOURCES[4:6], beam=beam)
    assert [t.text for t in found[4:]] == [t.text for t in again]  # empty: plain search
    one = translator.translate(SOURCES[0], beam=beam, prefix=prefixes[0])
    assert one.text == found[0].text


def test_bad_constraints_are_named(translator):
    cases = {
        "unknown field(s) inclde": [{"inclde": ["x"]}],
        "constraints.include: expected a list of phrases": [{"include": "fence"}],
        "constraints.exclude: a phrase is empty": [{"exclude": [" "]}],
        "'die' is both included and excluded": [{"include": ["die"], "exclude": ["die"]}],
        "17 phrases, more than decode.max_constraints=16": [
            {"include": [f"w{i}" for i in range(17)]}
        ],
    }
    for message, constraints in cases.items():
        with pytest.raises(UserError, match=f"sentence 1, .*{re.escape(message)}"):
            translator.translate(["the dog sleeps."], constraints=constraints)
    long = " ".join(["hund"] * 40)
    with pytest.raises(UserError, match="sentence 1, constraints.include: the phrase 'hund"):
        translator.translate(["the dog sleeps."], constraints=[{"include": [long]}])
    with pytest.raises(
        UserError,
        match=r"sentence 2, prefix: the prefix is \d+ subwords, but this sentence.s translation is",
    ):
        translator.translate(["a.", "the dog sleeps."], prefix=[None, long])
    with pytest.raises(UserError, match="need beam search .* not sampling"):
        translator.translate("the dog.", sample=True, constraints={"include": ["hund"]})
    with pytest.raises(UserError, match="constraints: 1 given for 2 sentences"):
        translator.translate(["a.", "b."], constraints=[None])
    assert parse_constraints({"exclude": ["a", "a "]}) == TextConstraints((), ("a",))


def test_nmt_translate_reads_constraints_and_prefixes_line_by_line(demo_transformer, tmp_path):
    checkpoint = str(demo_transformer / "best.pt")
    (tmp_path / "in.txt").write_text("the dog sleeps.\n\nthe small cat sees a bird.\n")
    (tmp_path / "terms.jsonl").write_text(
        '{"include": ["Vogel"], "exclude": ["Hund"]}\n\n{"include": ["der Hund"]}\n'
    )
    (tmp_path / "prefix.txt").write_text("ein\n\n\n")
    base = ["translate", "--checkpoint", checkpoint, "--input", str(tmp_path / "in.txt")]
    result = CliRunner().invoke(
        app,
        [*base, "--constraints", str(tmp_path / "terms.jsonl")]
        + ["--prefix", str(tmp_path / "prefix.txt")],
    )
    assert result.exit_code == 0, result.output
    first, blank, third = result.stdout.splitlines()
    assert first.startswith("ein ") and holds(first, "Vogel") and not holds(first, "Hund")
    assert blank == "" and holds(third, "der Hund")

    (tmp_path / "bad.jsonl").write_text('{"include": ["vogel"]}\n{"include": [vogel]}\n\n')
    refused = CliRunner().invoke(app, [*base, "--constraints", str(tmp_path / "bad.jsonl")])
    assert refused.exit_code == 2
    assert "bad.jsonl, line 2: not JSON" in refused.output
    (tmp_path / "long.jsonl").write_text('{}\n\n{"exclude": ["' + " ".join(["x"] * 40) + '"]}\n')
    refused = CliRunner().invoke(app, [*base, "--constraints", str(tmp_path / "long.jsonl")])
    assert refused.exit_code == 2
    assert "input line 3, constraints.exclude: the phrase 'x x" in refused.output
    (tmp_path / "short.jsonl").write_text("{}\n")
    refused = CliRunner().invoke(app, [*base, "--constraints", str(tmp_path / "short.jsonl")])
    assert refused.exit_code == 2
    assert re.search(r"--constraints \S+short.jsonl \(1 lines\): it ends before", refused.output)


def test_a_constraints_file_names_the_line_of_an_unknown_field(tmp_path):
    path = tmp_path / "terms.jsonl"
    path.write_text('{"include": ["a"]}\n\n' + json.dumps({"include": ["b"], "must": ["c"]}))
    parse = constraints_line(path)
    lines = path.read_text().splitlines()
    assert parse(lines[0], 1) == TextConstraints(include=("a",)) and parse(lines[1], 2) is None
    with pytest.raises(UserError, match=r"terms.jsonl, line 3: unknown field\(s\) must"):
        parse(lines[2], 3)


def test_text_forced_in_with_characters_the_vocabulary_lacks_is_refused(tiny_config, tokenizer):
    """An included phrase or a prefix would come out as <unk> where its characters are
    missing from the target vocabulary (the tiny one has no capitals and no euro sign);
    an excluded one can never appear anyway and passes."""
    translator = make_translator(tiny_config, tokenizer, beam=2)
    with pytest.raises(UserError, match=r"constraints.include: the phrase 'hund€' holds '€'"):
        translator.translate("the dog sleeps.", constraints={"include": ["hund€"]})
    with pytest.raises(UserError, match=r"prefix: the prefix holds 'D', which the model"):
        translator.translate("the dog sleeps.", prefix="Der")
    excluded = translator.translate("the dog sleeps.", constraints={"exclude": ["hund€"]})
    assert excluded.constraints_met is True
