"""The built-in demo corpus: a seeded synchronous grammar of English -> German pairs.

German reorders what English keeps in place (verb-final subordinate clauses, separable
verbs, clause-final participles and infinitives) and inflects articles and adjectives by
gender, number and case, so attention has to learn non-monotonic alignments. Each English
sentence has exactly one German translation, so a good model can approach BLEU 100.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

DEMO_VERSION = 2
SPLITS = {"train": 20_000, "valid": 500, "test": 500}
LANGS = ("en", "de")
MIN_WORDS, MAX_WORDS = 4, 20  # English tokens per sentence, final "." included


@dataclass(frozen=True)
class Noun:
    en: str
    en_plural: str
    gender: str  # "m", "f" or "n"
    de: str
    de_plural: str


@dataclass(frozen=True)
class Verb:
    """German forms are indexed by person: 0 = 1st singular, 1 = 3rd singular, 2 = plural
    (which is also the infinitive). A separable verb's forms omit its particle."""

    en: str
    en_3sg: str
    en_participle: str
    de: tuple[str, str, str]
    de_participle: str
    particle: str = ""
    en_particle: str = ""
    transitive: bool = True


NOUNS = tuple(
    Noun(*entry.split())
    for entry in (
        "dog dogs m Hund Hunde",
        "man men m Mann Männer",
        "friend friends m Freund Freunde",
        "doctor doctors m Arzt Ärzte",
        "king kings m König Könige",
        "bird birds m Vogel Vögel",
        "apple apples m Apfel Äpfel",
        "table tables m Tisch Tische",
        "brother brothers m Bruder Brüder",
        "teacher teachers m Lehrer Lehrer",
        "garden gardens m Garten Gärten",
        "letter letters m Brief Briefe",
        "cat cats f Katze Katzen",
        "woman women f Frau Frauen",
        "mother mothers f Mutter Mütter",
        "city cities f Stadt Städte",
        "door doors f Tür Türen",
        "lamp lamps f Lampe Lampen",
        "sister sisters f Schwester Schwestern",
        "flower flowers f Blume Blumen",
        "house houses n Haus Häuser",
        "child children n Kind Kinder",
        "girl girls n Mädchen Mädchen",
        "book books n Buch Bücher",
        "horse horses n Pferd Pferde",
        "window windows n Fenster Fenster",
    )
)

VERBS = (
    Verb("see", "sees", "seen", ("sehe", "sieht", "sehen"), "gesehen"),
    Verb("find", "finds", "found", ("finde", "findet", "finden"), "gefunden"),
    Verb("hear", "hears", "heard", ("höre", "hört", "hören"), "gehört"),
    Verb("visit", "visits", "visited", ("besuche", "besucht", "besuchen"), "besucht"),
    Verb("buy", "buys", "bought", ("kaufe", "kauft", "kaufen"), "gekauft"),
    Verb("love", "loves", "loved", ("liebe", "liebt", "lieben"), "geliebt"),
    Verb("paint", "paints", "painted", ("male", "malt", "malen"), "gemalt"),
    Verb("wash", "washes", "washed", ("wasche", "wäscht", "waschen"), "gewaschen"),
    Verb("carry", "carries", "carried", ("trage", "trägt", "tragen"), "getragen"),
    Verb("ask", "asks", "asked", ("frage", "fragt", "fragen"), "gefragt"),
    Verb("catch", "catches", "caught", ("fange", "fängt", "fangen"), "gefangen"),
    Verb("call", "calls", "called", ("rufe", "ruft", "rufen"), "angerufen", "an", "up"),
    Verb("pick", "picks", "picked", ("hole", "holt", "holen"), "abgeholt", "ab", "up"),
    Verb("wake", "wakes", "woken", ("wecke", "weckt", "wecken"), "aufgeweckt", "auf", "up"),
    Verb("invite", "invites", "invited", ("lade", "lädt", "laden"), "eingeladen", "ein"),
    Verb(
        "bring",
        "brings",
        "brought",
        ("bringe", "bringt", "bringen"),
        "zurückgebracht",
        "zurück",
        "back",
    ),
    Verb(
        "sleep",
        "sleeps",
        "slept",
        ("schlafe", "schläft", "schlafen"),
        "geschlafen",
        transitive=False,
    ),
    Verb("laugh", "laughs", "laughed", ("lache", "lacht", "lachen"), "gelacht", transitive=False),
    Verb("play", "plays", "played", ("spiele", "spielt", "spielen"), "gespielt", transitive=False),
)
# Verbs that introduce a "that" clause: English base, English 3rd singular, German by person.
MATRIX_VERBS = (
    ("know", "knows", ("weiß", "weiß", "wissen")),
    ("think", "thinks", ("denke", "denkt", "denken")),
    ("say", "says", ("sage", "sagt", "sagen")),
    ("believe", "believes", ("glaube", "glaubt", "glauben")),
    ("hope", "hopes", ("hoffe", "hofft", "hoffen")),
)
HAVE = ("habe", "hat", "haben")
CAN = ("kann", "kann", "können")
ADJECTIVES = (
    ("small", "klein"),
    ("big", "groß"),
    ("old", "alt"),
    ("young", "jung"),
    ("red", "rot"),
    ("black", "schwarz"),
    ("green", "grün"),
    ("new", "neu"),
    ("good", "gut"),
    ("beautiful", "schön"),
    ("fast", "schnell"),
    ("happy", "froh"),
)
# (English, German, person) for subjects; (English, German) for objects.
SUBJECT_PRONOUNS = (
    ("I", "ich", 0),
    ("he", "er", 1),
    ("she", "sie", 1),
    ("we", "wir", 2),
    ("they", "sie", 2),
)
OBJECT_PRONOUNS = (("me", "mich"), ("him", "ihn"), ("her", "sie"), ("us", "uns"), ("them", "sie"))
PREPOSITIONS = (
    ("with", "mit"),
    ("in", "in"),
    ("behind", "hinter"),
    ("under", "unter"),
    ("from", "von"),
    ("next to", "neben"),
)  # all take the dative here
CONTRACTIONS = {("in", "dem"): "im", ("von", "dem"): "vom"}
DEFINITE = {
    "nom": {"m": "der", "f": "die", "n": "das", "pl": "die"},
    "acc": {"m": "den", "f": "die", "n": "das", "pl": "die"},
    "dat": {"m": "dem", "f": "der", "n": "dem", "pl": "den"},
}
INDEFINITE = {
    "nom": {"m": "ein", "f": "eine", "n": "ein"},
    "acc": {"m": "einen", "f": "eine", "n": "ein"},
    "dat": {"m": "einem", "f": "einer", "n": "einem"},
}

Phrase = tuple[list[str], list[str]]  # (English words, German words)


def _adjective_ending(definite: bool, case: str, gender: str) -> str:
    """Weak endings after der/die/das, mixed endings after ein."""
    if gender == "pl" or case == "dat":
        return "en"
    if definite:
        return "en" if (case, gender) == ("acc", "m") else "e"
    return {"m": "er" if case == "nom" else "en", "f": "e", "n": "es"}[gender]


def _noun_phrase(rng: random.Random, case: str) -> tuple[list[str], list[str], int]:
    """An article, maybe an adjective, a noun; returns the person (1 or 2) it agrees with."""
    noun = rng.choice(NOUNS)
    plural = rng.random() < 0.25
    definite = plural or rng.random() < 0.7
    gender = "pl" if plural else noun.gender
    adjective = rng.choice(ADJECTIVES) if rng.random() < 0.4 else None
    en = ([adjective[0]] if adjective else []) + [noun.en_plural if plural else noun.en]
    article = "the" if definite else "an" if en[0][0] in "aeiou" else "a"
    de_noun = noun.de_plural if plural else noun.de
    if plural and case == "dat" and de_noun[-1] not in "ns":
        de_noun += "n"
    de = [(DEFINITE if definite else INDEFINITE)[case][gender]]
    if adjective:
        de.append(adjective[1] + _adjective_ending(definite, case, gender))
    return [article, *en], [*de, de_noun], 2 if plural else 1


def _subject(rng: random.Random) -> tuple[list[str], list[str], int]:
    if rng.random() < 0.3:
        en, de, person = rng.choice(SUBJECT_PRONOUNS)
        return [en], [de], person
    return _noun_phrase(rng, "nom")


def _object(rng: random.Random) -> Phrase:
    if rng.random() < 0.2:
        en, de = rng.choice(OBJECT_PRONOUNS)
        return [en], [de]
    return _noun_phrase(rng, "acc")[:2]


def _prepositional_phrase(rng: random.Random) -> Phrase:
    en, de = rng.choice(PREPOSITIONS)
    en_np, de_np, _ = _noun_phrase(rng, "dat")
    contracted = CONTRACTIONS.get((de, de_np[0]))
    return [*en.split(), *en_np], [contracted, *de_np[1:]] if contracted else [de, *de_np]


@dataclass(frozen=True)
class Clause:
    """One clause, with its German parts kept apart so it can be ordered two ways."""

    en: list[str]
    subject: list[str]
    middle: list[str]  # object and adverbials, in German order
    finite: str
    tail: list[str]  # what a main clause puts last: particle, participle or infinitive
    verb_final: list[str]  # the verb group that ends a subordinate clause

    def main(self) -> list[str]:
        """Verb second: the finite verb follows the subject, the rest of the verb goes last."""
        return [*self.subject, self.finite, *self.middle, *self.tail]

    def subordinate(self) -> list[str]:
        """Verb last: the whole verb group follows the middle field, finite verb at the end."""
        return [*self.subject, *self.middle, *self.verb_final]


def _clause(rng: random.Random) -> Clause:
    en_subject, de_subject, person = _subject(rng)
    verb = rng.choice(VERBS)
    en_object, de_object = _object(rng) if verb.transitive else ([], [])
    en_pp, de_pp = _prepositional_phrase(rng) if rng.random() < 0.3 else ([], [])
    infinitive = verb.particle + verb.de[2]
    tense = rng.random()
    if tense < 0.5:  # present
        en_verb = [verb.en_3sg if person == 1 else verb.en]
        finite = verb.de[person]
        tail, verb_final = [verb.particle] if verb.particle else [], [verb.particle + finite]
    elif tense < 0.8:  # perfect
        en_verb = ["has" if person == 1 else "have", verb.en_participle]
        finite, tail = HAVE[person], [verb.de_participle]
        verb_final = [verb.de_participle, finite]
    else:  # modal
        en_verb, finite, tail = ["can", verb.en], CAN[person], [infinitive]
        verb_final = [infinitive, finite]
    en_particle = [verb.en_particle] if verb.en_particle else []
    en = [*en_subject, *en_verb, *en_object, *en_particle, *en_pp]
    return Clause(en, de_subject, [*de_object, *de_pp], finite, tail, verb_final)


def _sentence(rng: random.Random) -> Phrase:
    clause = _clause(rng)
    kind = rng.random()
    if kind < 0.4:
        return clause.en, clause.main()
    if kind < 0.75:
        en_subject, de_subject, person = _subject(rng)
        en_verb, en_3sg, de_verb = rng.choice(MATRIX_VERBS)
        en = [*en_subject, en_3sg if person == 1 else en_verb, "that", *clause.en]
        return en, [*de_subject, de_verb[person], ",", "dass", *clause.subordinate()]
    reason = _clause(rng)
    return (
        [*clause.en, "because", *reason.en],
        [*clause.main(), ",", "weil", *reason.subordinate()],
    )


def generate_pairs(count: int, seed: int) -> list[tuple[str, str]]:
    """(english, german) pairs, deterministic for a given seed; no English sentence repeats."""
    rng = random.Random(seed)
    pairs: dict[str, str] = {}
    while len(pairs) < count:
        en, de = _sentence(rng)
        if MIN_WORDS <= len(en) + 1 <= MAX_WORDS:
            pairs.setdefault(_written(en), _written(de))
    return list(pairs.items())


def _written(words: list[str]) -> str:
    """Detokenized like real corpora: punctuation attached to the word before it."""
    return " ".join(words).replace(" ,", ",") + "."


def _is_complete(directory: Path) -> bool:
    return all((directory / f"{split}.{lang}").is_file() for split in SPLITS for lang in LANGS)


def write_demo_corpus(directory: Path, seed: int = 1234) -> Path:
    """Writes {train,valid,test}.{en,de} (one sentence a line, UTF-8, '\\n') into directory
    if not already complete; returns directory.

    The files are built in a sibling temporary directory and renamed into place, so a reader
    never sees a half-written corpus, and concurrent writers agree on the result.
    """
    if _is_complete(directory):
        return directory
    directory.parent.mkdir(parents=True, exist_ok=True)
    temporary = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", dir=directory.parent))
    temporary.chmod(0o755)  # mkdtemp makes it private; the corpus is not
    try:
        pairs = iter(generate_pairs(sum(SPLITS.values()), seed))
        for split, size in SPLITS.items():  # valid and test are drawn last: unseen in train
            chunk = [next(pairs) for _ in range(size)]
            for column, lang in enumerate(LANGS):
                text = "".join(pair[column] + "\n" for pair in chunk)
                (temporary / f"{split}.{lang}").write_text(text, encoding="utf-8", newline="\n")
        try:
            os.rename(temporary, directory)
        except OSError:  # directory exists: another writer won, or it is an incomplete leftover
            if not _is_complete(directory):
                for path in temporary.iterdir():
                    os.replace(path, directory / path.name)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
    return directory
