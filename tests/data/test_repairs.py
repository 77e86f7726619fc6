"""The repairs cleaning makes before its filters judge a pair: mojibake decoded again by ftfy
(and clean text left exactly as written), markup stripped to its text or left to the markup
filter; each counted in the report."""

import dataclasses

import pytest

from nmt.config import CleanConfig
from nmt.data.cleaning import Cleaner
from nmt.data.repairs import has_markup, repaired, strip_markup

# German-English pairs as a corpus would hold them, and each as mojibake: its UTF-8 bytes
# read as Latin-1 (ß, Ä, Ö, Ü and „ become C1 control characters there) and as
# Windows-1252 ("MÃ¤nner")
INTACT = [
    ("Zwei Männer spielen Fußball im Park.", "Two men are playing soccer in the park."),
    ("Ein Mädchen öffnet die Tür zum Garten.", "A girl opens the door to the garden."),
    ("Die Ärztin grüßt einen älteren Herrn.", "The doctor greets an older gentleman."),
]
CODECS = ("latin-1", "cp1252")


def garbled(pair, codec):
    return tuple(side.encode("utf-8").decode(codec) for side in pair)


def judge(pairs, **settings):
    config = dataclasses.replace(CleanConfig(), max_ratio_deviation=None, **settings)
    cleaner = Cleaner(config, "de", "en")
    return list(cleaner.clean(pairs)), cleaner.report()


@pytest.mark.parametrize("codec", CODECS)
def test_mojibake_is_decoded_again_before_the_filters_judge(codec):
    noisy = [garbled(pair, codec) for pair in INTACT]
    assert all(noisy_pair != pair for noisy_pair, pair in zip(noisy, INTACT, strict=True))
    judged, report = judge(noisy)
    assert [(j.src, j.tgt) for j in judged] == INTACT
    assert [(j.removed_by, j.repairs) for j in judged] == [(None, ("fix_text",))] * 3
    assert report["repaired"]["fix_text"] == 3 and report["pairs_out"] == 3
    judged, report = judge(noisy, fix_text=False)
    assert [(j.src, j.tgt) for j in judged] == noisy  # judged as read
    assert report["repaired"]["fix_text"] == 0


def test_clean_text_is_left_exactly_as_written():
    """Quotes, dashes, ligatures, full-width forms and accents are not mojibake."""
    texts = [
        "„Fußball“ – sagt er: «naïve» Café-Besucher ﬁnden ＡＢＣ gut …",
        "A man's 'quoted' words — and “curly” ones, 1½ cups, ½ × 3 ≥ 1.",
        "Čeština: příliš žluťoučký kůň úpěl ďábelské ódy.",
    ]
    for text in texts:
        assert repaired(text, text, CleanConfig()) == (text, text, ())


@pytest.mark.parametrize(
    "marked, text",
    [
        ("<p>Ein Hund läuft.</p>", "Ein Hund läuft."),
        ('<a href="https://example.com/de/1">Ein Hund läuft.</a>', "Ein Hund läuft."),
        ("Der <b>Hund</b> läuft.", "Der Hund läuft."),  # an inline tag parts no words
        ("Ein Hund<br/>läuft.", "Ein Hund läuft."),
        ("Ein Hund läuft. https://t.co/abc123", "Ein Hund läuft."),
        ("Hund &amp; Katze &#8211; www.example.org", "Hund & Katze –"),
        ("<!-- teaser -->Ein Hund läuft.", "Ein Hund läuft."),
    ],
)
def test_markup_is_stripped_to_its_text(marked, text):
    assert has_markup(marked) and strip_markup(marked) == text


def test_text_with_angle_brackets_is_not_markup():
    for text in ("3 < 4 and 5 > 2", "a <= b", "Tom & Jerry", "see example.com"):
        assert not has_markup(text) and strip_markup(text) == " ".join(text.split())


def test_markup_is_stripped_removed_or_judged_as_it_is():
    marked = [
        (f"<p>{de}</p>", f'<a href="https://example.com/en/{i}">{en}</a>')
        for i, (de, en) in enumerate(INTACT)
    ]
    judged, report = judge(marked)
    assert [(j.src, j.tgt, j.removed_by, j.repairs) for j in judged] == [
        (de, en, None, ("markup",)) for de, en in INTACT
    ]
    assert report["repaired"]["markup"] == 3 and report["removed"]["markup"] == 0
    judged, report = judge(marked, markup="remove")
    assert {j.removed_by for j in judged} == {"markup"} and report["removed"]["markup"] == 3
    assert report["repaired"]["markup"] == 0
    judged, _ = judge(marked, markup=None)
    assert [(j.src, j.tgt) for j in judged] == marked
    url = ("Siehe http://example.com/a/b/c/d/e/f", "See http://example.com/a/b/c/d/e/f/g")
    (judged,), _ = judge([url], markup=None)  # URLs count as no letters
    assert judged.removed_by == "letters", judged


def test_mojibake_inside_markup_is_repaired_twice():
    pair = garbled(("<p>Zwei Männer.</p>", "<p>Two men.</p>"), "cp1252")
    src, tgt, repairs = repaired(*pair, CleanConfig())
    assert (src, tgt, repairs) == ("Zwei Männer.", "Two men.", ("fix_text", "markup"))
