"""The demo corpus: deterministic, disjoint splits, a function from English to German, and
German word order that really differs from English."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from nmt.data import demo

FILES = [f"{split}.{lang}" for split in ("train", "valid", "test") for lang in ("en", "de")]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo.write_demo_corpus(tmp_path_factory.mktemp("data") / "demo")


def words(sentence: str) -> list[str]:
    """Tokens, with the attached punctuation split off again."""
    return sentence.replace(",", " ,").replace(".", " .").split()


def read_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")[:-1]


def test_same_seed_same_pairs_and_different_seed_different_pairs() -> None:
    assert demo.generate_pairs(300, seed=7) == demo.generate_pairs(300, seed=7)
    assert demo.generate_pairs(300, seed=7) != demo.generate_pairs(300, seed=8)


def test_translation_is_a_function_of_the_english_sentence() -> None:
    seen: dict[str, str] = {}
    for seed in range(3):
        for en, de in demo.generate_pairs(10_000, seed=seed):
            assert seen.setdefault(en, de) == de


def test_sentences_are_short_and_single_spaced() -> None:
    for en, de in demo.generate_pairs(2000, seed=5):
        assert demo.MIN_WORDS <= len(words(en)) <= demo.MAX_WORDS
        for sentence in (en, de):  # written like real text: punctuation attached
            assert sentence.endswith(".") and not sentence.endswith(" .")
            assert " ," not in sentence
            assert sentence.split(" ") == sentence.split()


def test_splits_have_their_sizes_and_are_disjoint(corpus: Path) -> None:
    assert sorted(path.name for path in corpus.iterdir()) == sorted(FILES)
    sentences = {}
    for split, size in demo.SPLITS.items():
        english = read_lines(corpus / f"{split}.en")
        german = read_lines(corpus / f"{split}.de")
        assert len(english) == len(german) == size
        assert all(line.strip() for line in english + german)
        assert len(set(english)) == size
        sentences[split] = set(english)
    assert not sentences["train"] & sentences["valid"]
    assert not sentences["train"] & sentences["test"]
    assert not sentences["valid"] & sentences["test"]


def test_second_write_keeps_the_existing_files(corpus: Path) -> None:
    before = {name: (corpus / name).stat().st_mtime_ns for name in FILES}
    assert demo.write_demo_corpus(corpus, seed=99) == corpus
    assert {name: (corpus / name).stat().st_mtime_ns for name in FILES} == before
    assert [path.name for path in corpus.parent.iterdir()] == ["demo"]  # no temporary left


def test_concurrent_writers_agree(tmp_path: Path, corpus: Path) -> None:
    target = tmp_path / "demo"
    with ThreadPoolExecutor(max_workers=3) as pool:
        results = list(pool.map(lambda _: demo.write_demo_corpus(target), range(3)))
    assert results == [target] * 3
    assert [path.name for path in tmp_path.iterdir()] == ["demo"]
    for name in FILES:
        assert (target / name).read_bytes() == (corpus / name).read_bytes()


def test_an_incomplete_directory_is_completed(tmp_path: Path, corpus: Path) -> None:
    target = tmp_path / "demo"
    target.mkdir()
    (target / "train.en").write_text("half a file\n", encoding="utf-8")
    demo.write_demo_corpus(target)
    for name in FILES:
        assert (target / name).read_bytes() == (corpus / name).read_bytes()
    assert os.listdir(tmp_path) == ["demo"]


def test_subordinate_clauses_put_the_verb_after_its_object() -> None:
    finite_forms = set(demo.HAVE) | set(demo.CAN)
    english_of: dict[str, set[str]] = {}  # present-tense transitive verb -> English forms
    for verb in demo.VERBS:
        for form in verb.de:
            finite_forms.add(verb.particle + form)
            if verb.transitive:
                english_of[verb.particle + form] = {verb.en, verb.en_3sg}
    object_starts = {"the", "a", "an"} | {en for en, _ in demo.OBJECT_PRONOUNS}
    checked = 0
    for en, de in demo.generate_pairs(3000, seed=11):
        en_words, de_words = words(en), words(de)
        if "dass" not in de_words:
            continue
        en_clause = en_words[en_words.index("that") + 1 : -1]
        de_clause = de_words[de_words.index("dass") + 1 : -1]
        assert de_clause[-1] in finite_forms, de
        if de_clause[-1] in english_of:  # English: verb, then object; German: object, verb
            position = next(i for i, w in enumerate(en_clause) if w in english_of[de_clause[-1]])
            assert en_clause[position + 1] in object_starts, en
            checked += 1
    assert checked > 100


def test_main_clauses_end_with_particle_participle_or_infinitive() -> None:
    checked = {"particle": 0, "participle": 0, "infinitive": 0}
    for en, de in demo.generate_pairs(3000, seed=13):
        en_words, de_words = words(en), words(de)
        if "," in de_words:  # only single main clauses
            continue
        verb = next(v for v in demo.VERBS if {v.en, v.en_3sg, v.en_participle} & set(en_words))
        if {"has", "have"} & set(en_words):
            assert de_words[-2] == verb.de_participle, de
            checked["participle"] += 1
        elif "can" in en_words:
            assert de_words[-2] == verb.particle + verb.de[2], de
            checked["infinitive"] += 1
        elif verb.particle:
            assert de_words[-2] == verb.particle, de
            assert verb.particle + verb.de[0] not in de_words, de  # never joined in a main clause
            checked["particle"] += 1
    assert min(checked.values()) > 20
