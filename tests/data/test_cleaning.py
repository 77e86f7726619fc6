"""Each rule-based filter on pairs built by hand, kept and removed; duplicates judged last,
the first of equals kept; the length ratio measured on the corpus itself; processes change
nothing; memory for duplicates is 8 bytes a pair."""

import dataclasses
import logging
import random
import unicodedata

import pytest

from conftest import nmt, tiny_train_args
from nmt.config import CleanConfig, ConfigError
from nmt.data.cleaning import FILTERS, URL, Cleaner, _control, fold, letter_share, warn_unjudged
from nmt.data.seen_hashes import SeenHashes

# German-English pairs of ordinary length, as a corpus around the pairs under test: they
# set the length ratio the ratio filter measures deviations from
GOOD = [
    ("Ein Hund läuft über die grüne Wiese.", "A dog runs across the green meadow."),
    ("Zwei Kinder spielen im Sand am Strand.", "Two children are playing in the sand."),
    ("Eine Frau liest ein Buch im Park.", "A woman is reading a book in the park."),
    ("Der Mann fährt mit dem Fahrrad zur Arbeit.", "The man rides his bicycle to work."),
    ("Drei Freunde sitzen an einem Tisch und lachen.", "Three friends sit at a table laughing."),
    ("Ein kleines Mädchen isst ein rotes Eis.", "A little girl is eating a red ice cream."),
]


def corpus(extra, copies=12):
    """The good pairs, reworded by number so that none repeats, then `extra`."""
    pairs = [(f"{de} ({i})", f"{en} ({i})") for i in range(copies) for de, en in GOOD]
    return pairs + list(extra)


def verdicts(extra, held=(), **settings):
    config = dataclasses.replace(CleanConfig(), **settings)
    cleaner = Cleaner(config, "de", "en", held)
    judged = list(cleaner.clean(corpus(extra)))
    found = [(j.removed_by, j.detail) for j in judged[-len(extra) :]]
    return dict(zip(extra, found, strict=True)), cleaner  # by the pair as given


@pytest.mark.parametrize(
    "pair, removed_by",
    [
        (("Ein Hund.", "   "), "empty"),
        (("", "A dog."), "empty"),
        (("Ein Hund\x07 bellt laut.", "A dog barks loudly."), "control_characters"),
        (("Ein Hund bellt \ufffd laut.", "A dog barks loudly."), "control_characters"),
        ((" ".join(["Wort"] * 300), " ".join(["word"] * 300)), "too_long"),
        (("Ein Hund läuft über die grüne Wiese und bellt.", "A dog."), "length_ratio"),
        (("Ein Hund läuft über die grüne Wiese.", "Ein Hund läuft über die grüne Wiese."), "copy"),
        (
            ("Der Hund läuft schnell über die Wiese.", "Der Hund lauft schnell über die Wiese!"),
            "copy",
        ),
        (("Tel. 0049-30-1234567 / 89 / 10", "Phone 0049 30 1234567 89 10 - 11"), "letters"),
        (("Ein Hund läuft über die Wiese.", "Un chien court sur la prairie."), "language"),
        (("A dog runs across the green grass.", "A dog runs over the green meadow."), "language"),
    ],
)
def test_each_filter_removes_what_it_names(pair, removed_by):
    found, _ = verdicts([pair])
    assert found[pair][0] == removed_by, found[pair]


def test_ordinary_pairs_are_kept_by_every_filter():
    found, cleaner = verdicts(corpus([], copies=1))  # the good pairs again, as they are
    assert set(found.values()) == {("duplicate", "seen before")}  # all seen in the corpus
    report = cleaner.report()
    assert report["pairs_out"] == len(GOOD) * 12 and set(report["removed"]) == set(FILTERS)
    assert cleaner.ratio is not None and 0.0 < cleaner.ratio[0] < 0.2  # German is longer


def test_duplicates_keep_the_first_and_fold_case_punctuation_and_spaces():
    pair = ("Der Hund bellt laut im Garten.", "The dog barks loudly in the garden.")
    again = ("der Hund, bellt laut  im Garten", "The DOG barks loudly in the garden!")
    found, cleaner = verdicts([pair, pair, again])
    assert list(found.values()) == [
        ("duplicate", "seen before"),
        ("near_duplicate", "seen before, once case and punctuation are folded"),
    ]
    assert cleaner.report()["removed"]["duplicate"] == 1
    assert fold("  The DOG, barks! ") == "the dog barks"


def test_a_pair_of_valid_or_test_is_removed_wherever_it_stands():
    held = ["The dog barks loudly in the garden."]
    pair = ("Der Hund bellt laut im Garten.", "the dog barks loudly in the garden")
    found, _ = verdicts([pair], held)
    assert found[pair] == ("held_out", "target is a sentence of the valid or test split")
    found, _ = verdicts([pair], held, held_out=False)
    assert found[pair] == (None, "")


# a key of the clean section, the filter it sets, and a pair that filter removes
SWITCHES = [
    ("empty", "empty", ("", "x")),
    ("control_characters", "control_characters", ("Ein Hund\x07 bellt.", "A dog\x07 barks.")),
    ("max_words", "too_long", (" ".join(["Wort"] * 300), " ".join(["word"] * 300))),
    ("max_chars", "too_long", ("Hund" * 600, "dog" * 800)),
    ("min_letter_ratio", "letters", ("Tel. 0049-30-1234567", "Phone 0049 30 1234567")),
    ("max_ratio_deviation", "length_ratio", ("Ein Hund läuft über die grüne Wiese.", "A dog.")),
    (
        "max_copy_overlap",
        "copy",
        ("Ein Hund läuft über die Wiese.", "Ein Hund läuft über die Wiese."),
    ),
    (
        "language_rank",
        "language",
        ("Ein Hund läuft über die Wiese.", "Un chien court sur l'herbe."),
    ),
    ("held_out", "held_out", ("Der Hund bellt laut.", "The dog barks loudly.")),
    ("duplicates", "duplicate", GOOD[0]),
    ("near_duplicates", "near_duplicate", ("ein Hund läuft über die grüne Wiese", GOOD[0][1])),
]


@pytest.mark.parametrize("key, name, pair", SWITCHES, ids=[key for key, _, _ in SWITCHES])
def test_every_filter_removes_its_pair_and_can_be_turned_off(key, name, pair):
    """On, the filter removes the pair (the one before it in the order keep it); off, it
    does not (a later filter may)."""
    held = ["The dog barks loudly."]
    extra = [GOOD[0], pair] if name.endswith("duplicate") else [pair]
    earlier = FILTERS[: FILTERS.index(name)]
    unrelated = {"near_duplicates": False} if key == "duplicates" else {}
    found, _ = verdicts(extra, held, **unrelated)
    assert found[pair][0] == name, found[pair]
    off = {key: False if isinstance(getattr(CleanConfig(), key), bool) else None}
    found, _ = verdicts(extra, held, **off, **unrelated)
    assert found[pair][0] not in (name, *earlier), found[pair]


def test_the_length_ratio_is_the_corpus_own_whatever_the_languages():
    """The same truncated target is judged against each corpus's own ratio: here targets
    twice their sources' length are the norm."""
    long_targets = [(de, f"{en} {en}") for de, en in GOOD]
    config = dataclasses.replace(CleanConfig(), language_rank=None, max_copy_overlap=None)
    cleaner = Cleaner(config, "de", "en")
    pairs = [(f"{s} ({i})", f"{t} ({i})") for i in range(12) for s, t in long_targets]
    kept_as_norm = ("Ein Hund bellt.", "A dog barks. A dog barks.")
    cut = ("Ein Hund läuft über die grüne Wiese.", "A dog runs.")
    judged = list(cleaner.clean([*pairs, kept_as_norm, cut]))
    assert [j.removed_by for j in judged[-2:]] == [None, "length_ratio"]
    assert cleaner.ratio[0] < -0.5  # log(source / target): targets are longer


def test_a_ratio_sample_too_small_to_tell_a_ratio_is_refused():
    with pytest.raises(ConfigError, match="ratio_sample.*at least 50.*got 20"):
        CleanConfig(ratio_sample=20)


def test_too_few_pairs_measure_no_ratio():
    cleaner = Cleaner(CleanConfig(), "de", "en")
    judged = list(cleaner.clean([("Ein Hund.", "A very very very very long dog sentence.")]))
    assert cleaner.ratio is None and judged[0].removed_by is None


def test_a_language_py3langid_does_not_know_is_not_judged():
    cleaner = Cleaner(CleanConfig(max_ratio_deviation=None), "xx", "en")
    judged = list(cleaner.clean([("Ein Hund läuft.", "A dog runs.")]))
    assert judged[0].removed_by is None


def test_a_language_the_filter_cannot_identify_is_named_where_it_would_judge(caplog):
    """nmt clean and data.clean: true alike (cleaned_pairs) say so before cleaning."""
    with caplog.at_level(logging.WARNING, logger="nmt"):
        warn_unjudged(CleanConfig(), {"xx", "en"})
        warn_unjudged(CleanConfig(language_rank=None), {"yy", "en"})  # no language filter
    assert "cannot identify xx" in caplog.text and "yy" not in caplog.text


def test_processes_judge_as_one_does(tmp_path):
    generator = random.Random(0)
    pairs = corpus([], copies=300)
    noisy = [(s, t) if generator.random() > 0.2 else (s, s) for s, t in pairs]
    noisy += noisy[:50]  # duplicates, across chunks
    config = dataclasses.replace(CleanConfig(), ratio_sample=200)
    alone = list(Cleaner(config, "de", "en").clean(noisy))
    together = list(Cleaner(config, "de", "en").clean(noisy, workers=2))
    assert alone == together
    assert {j.removed_by for j in alone} >= {None, "copy", "duplicate"}


def test_seen_hashes_take_eight_bytes_a_text_once_merged():
    seen = SeenHashes(merge_every=100)
    texts = [f"pair {i}" for i in range(1000)]
    assert not any(seen.seen_or_add(text) for text in texts)
    assert all(seen.seen_or_add(text) for text in texts)
    assert seen.sorted.nbytes == 8 * 1000 and not seen.recent


@pytest.mark.parametrize("streaming", ["false", "true"])
def test_data_clean_removing_every_pair_names_the_filters(tmp_path, corpus_dir, streaming):
    """Not SentencePiece's traceback on an empty sample: exit 2, the filters and their keys."""
    args = tiny_train_args(
        tmp_path / "run", corpus_dir, "data.clean=true", "clean.max_words=1",
        f"data.streaming={streaming}",
    )  # fmt: skip
    ran = nmt(*args)
    assert ran.returncode == 2, ran.stderr
    message = ran.stderr.strip()
    assert message.startswith("error: data.clean:") and "\n" not in message, message
    assert "all 300 en-de training pairs" in message and "too_long 300" in message, message
    assert "clean.max_words" in message and str(corpus_dir) in message, message


def reference_fold(text: str) -> str:
    """fold as defined, a character at a time."""
    kept = "".join(
        " " if unicodedata.category(char).startswith(("P", "Z")) or char.isspace() else char
        for char in text.lower()
    )
    return " ".join(kept.split())


def reference_control(src: str, tgt: str) -> str | None:
    for side, text in (("source", src), ("target", tgt)):
        for char in text:
            if char == "\ufffd" or (
                char != "\t" and unicodedata.category(char) in ("Cc", "Co", "Cn", "Cs")
            ):
                return f"{side} holds U+{ord(char):04X}"
    return None


def test_the_fast_character_checks_equal_their_definitions_over_unicode():
    """fold's translate table, the control check's isprintable shortcut and letter_share's
    counts against the per-character definitions: code points alone (every 5th of the BMP,
    every 499th above, and the odd ones), and random strings of them beside ASCII."""
    codes = [*range(0, 0x10000, 5), *range(0x10000, 0x110000, 499), 0xFFFD, 0xA0, 0x2028]
    points = [chr(code) for code in codes]
    alphabet = [*points, *"aZ .,\t"]
    rng = random.Random(7)
    texts = points + [
        "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for _ in range(1000)
    ]
    for text in texts:
        assert fold(text) == reference_fold(text), repr(text)
        assert _control(text, "ok") == reference_control(text, "ok"), repr(text)
        shown = [char for char in text if not char.isspace()]
        letters = sum(char.isalpha() for char in URL.sub("", text))
        assert letter_share(text) == letters / max(1, len(shown)), repr(text)
