"""Inline markup: lines cut into sentences and tags, and the tags put back through word
alignments; every output well-formed, with each tag of the source once, inside the tags it
was inside (checked by xml.etree, an independent parser, on random tags and alignments)."""

import random
import xml.etree.ElementTree as ET

import pytest
from sentencex import segment

from nmt.data.markup import (
    PLACEHOLDERS,
    MarkupError,
    Sentence,
    kept,
    model_tags,
    parse,
    place_by_model,
    plain,
    project,
    render,
)


def split_en(text: str) -> list[str]:
    return list(segment("en", text))


def diagonal(words: int) -> list[tuple[int, int]]:
    return [(i, i) for i in range(words)]


@pytest.mark.parametrize(
    "line",
    [
        '<p>Click <a href="x?a=1&amp;b=2">here</a> to <b>go</b>. Then <i>wait</i>!<br>Done.</p>',
        "plain text, no tags &amp; one reference",
        "<ul>\n  <li>one</li>\n  <li>two <em>words</em></li>\n</ul>",
        "<!-- a comment --> text <script>var a = '<b>';</script> more <b>bold",
        '<span class="notranslate">Acme</span> sells <code>x &lt; y</code> widgets.',
    ],
)
def test_parsing_then_rendering_gives_the_line_back_exactly(line):
    assert render(parse(line, "html", split_en)) == line


def test_blocks_end_sentences_and_the_splitter_cuts_paragraphs_but_never_inside_a_tag():
    parts = parse("<p>One here. Two <b>there. Three</b> too.</p><p>Four.</p>", "html", split_en)
    sentences = [part.text for part in parts if isinstance(part, Sentence)]
    assert sentences == ["One here. ", "Two there. Three too.", "Four."]
    assert [part for part in parts if isinstance(part, str)] == ["<p>", "</p><p>", "</p>"]


def test_inline_tags_follow_the_words_they_wrapped_through_reordering():
    (sentence,) = parse('The <b>big</b> dog <a href="#">runs</a>.', "html")
    output = project(sentence, "Le chien court grand.", [(0, 0), (1, 3), (2, 1), (3, 2)])
    assert output == 'Le chien <a href="#">court</a> <b>grand</b>.'


def test_punctuation_stays_outside_a_tag_that_held_none():
    (sentence,) = parse("Click <a>here</a> now, <b>please.</b>", "html")
    output = project(sentence, "Klick hier, jetzt bitte.", [(0, 0), (1, 1), (2, 2), (3, 3)])
    assert output == "Klick <a>hier</a>, jetzt <b>bitte.</b>"


def test_void_and_verbatim_elements_go_before_the_word_aligned_to_the_next_word():
    (sentence,) = parse('Press <kbd>Ctrl</kbd> then <img src="k.png"> key', "html")
    assert sentence.text == "Press  then  key"
    output = project(sentence, "Dann Taste drücken", [(0, 2), (1, 0), (2, 1)])
    # Ctrl went before "then"'s word, the image before "key"'s; spaces as in the source
    assert output == '<kbd>Ctrl</kbd> Dann <img src="k.png"> Taste drücken'


def test_a_line_break_parts_words_for_the_model_and_is_copied_as_it_stood():
    line = "a bird<br>because we<br/> sleep"
    (sentence,) = parse(line, "html")
    assert sentence.text == "a bird because we  sleep" and render([sentence]) == line
    output = project(sentence, "ein Vogel weil wir schlafen", diagonal(5))
    assert output == "ein Vogel<br> weil wir<br/> schlafen"  # each glued to the word before


def test_untranslated_elements_are_copied_untouched():
    line = '<p translate="no">Keep <b>this</b>.</p>'
    line += '<p>Say <span class="x notranslate">Acme</span> hi</p>'
    parts = parse(line, "html")
    assert parts[0] == '<p translate="no">Keep <b>this</b>.</p><p>'
    (sentence,) = [part for part in parts if isinstance(part, Sentence)]
    assert sentence.text == "Say  hi"
    assert project(sentence, "Sag hallo", [(0, 0), (1, 1)]) == (
        'Sag <span class="x notranslate">Acme</span> hallo'
    )


def test_a_tag_without_an_aligned_word_wraps_its_parents_words():
    (sentence,) = parse("The <b>big <i>red</i> dog</b> runs", "html")
    output = project(sentence, "Der Hund läuft", [(0, 0), (3, 1), (4, 2)])
    assert output == "Der <b><i>Hund</i></b> läuft"  # red has no word: around <b>'s
    (sentence,) = parse("<u>one</u> two", "html")
    assert project(sentence, "eins zwei", [(1, 1)]) == "<u>eins zwei</u>"  # the sentence


def test_text_is_escaped_on_the_way_out_and_references_read_on_the_way_in():
    (sentence,) = parse("Tom &amp; <b>Jerry</b> &lt;3", "html")
    assert sentence.text == "Tom & Jerry <3"
    assert project(sentence, "Tom & Jerry <3", diagonal(4)) == "Tom &amp; <b>Jerry</b> &lt;3"
    assert plain("Tom &amp; <b>Jerry</b>") == "Tom & Jerry"


def test_an_unclosed_html_tag_is_copied_where_it_stood():
    parts = parse("a <b>bold start", "html")
    assert parts[1] == "<b>" and [p.text for p in parts if isinstance(p, Sentence)] == [
        "a ",
        "bold start",
    ]


@pytest.mark.parametrize(
    "line, message",
    [
        ("<a><b>x</a></b>", "line 1, column 8: </a> where </b> was expected"),
        ("one\n<a>two", "line 2, column 1: <a> is never closed"),
        ("x</b>", "line 1, column 2: </b> where no end tag was expected"),
    ],
)
def test_xml_that_is_not_well_formed_is_refused_with_its_position(line, message):
    with pytest.raises(MarkupError, match=message):
        parse(line, "xml")


def test_xml_elements_are_all_inline_and_its_no_translate_is_kept():
    (sentence,) = parse('<x:g id="1">Hello</x:g> <ph its:translate="no">%s</ph> world<br/>', "xml")
    assert sentence.text == "Hello  world"
    output = project(sentence, "Welt hallo", [(0, 1), (1, 0)])
    # %s went before "world"'s word; <br/>, last, after it
    assert output == '<ph its:translate="no">%s</ph> Welt<br/> <x:g id="1">hallo</x:g>'


@pytest.mark.parametrize(
    "text, held",
    [
        ("See https://x.org/a?b=1&c=2. Or www.y.com!", ["https://x.org/a?b=1&c=2", "www.y.com"]),
        ("Write to a.b+c@x-y.co.uk, please.", ["a.b+c@x-y.co.uk"]),
        ("{count} in {{ dir }} by ${user}: %s %(name)d %1$s {0}", None),
        ("It weighs 5 kg, costs $30 or 12,50 € and runs at 3.5GHz, 100%.", None),
        ("I have 3 dogs in 2 houses; version 1.2.3 is out.", []),
    ],
)
def test_placeholders_are_urls_addresses_variables_and_numbers_with_units(text, held):
    expected = {
        "{count} in {{ dir }} by ${user}: %s %(name)d %1$s {0}": [
            "{count}", "{{ dir }}", "${user}", "%s", "%(name)d", "%1$s", "{0}"
        ],
        "It weighs 5 kg, costs $30 or 12,50 € and runs at 3.5GHz, 100%.": [
            "5 kg", "$30", "12,50 €", "3.5GHz", "100%"
        ],
    }.get(text, held)  # fmt: skip
    assert [match.group() for match in PLACEHOLDERS.finditer(text)] == expected


def test_placeholders_and_a_users_patterns_are_copied_as_they_were_where_aligned():
    line = "Delete {count} files of ACME-42 at https://x.org/?a=1&amp;b=2 now."
    (sentence,) = parse(line, "html", keep=kept(["ACME-[0-9]+"]))
    assert sentence.text == "Delete  files of  at  now."
    output = project(sentence, "Lösche Dateien von bei jetzt.", diagonal(5))
    assert output == "Lösche {count} Dateien von ACME-42 bei https://x.org/?a=1&amp;b=2 jetzt."


def test_plain_text_keeps_its_characters_unescaped():
    (sentence,) = parse("a < b & {x} > c", "text", keep=PLACEHOLDERS)
    assert sentence.text == "a < b &  > c"
    assert project(sentence, "a < b & > c", [(i, i) for i in range(5)]) == "a < b & {x} > c"


def test_a_model_trained_with_tags_reads_placeholders_and_its_own_places_are_kept():
    (sentence,) = parse("The <b>big <i>red</i> dog</b> runs <br> fast.", "html")
    tags = model_tags(sentence)
    assert tags.text == "The <t1> big <t2> red </t2> dog </t1> runs <t0/> fast."
    written = "Der <t1> große <t2> rote </t2> Hund </t1> läuft <t0/> schnell."
    assert place_by_model(sentence, tags, written) == (
        "Der <b>große <i>rote</i> Hund</b> läuft <br>schnell."
    )


@pytest.mark.parametrize(
    "written",
    [
        "Der <t1> große Hund </t1> läuft schnell.",  # a placeholder missing
        "Der <t1> große <t2> rote </t2> Hund </t1> <t1> läuft <t0/> schnell.",  # one twice
        "Der </t1> große <t2> rote </t2> Hund <t1> läuft <t0/> schnell.",  # closed first
        "Der <t1> große <t2> rote Hund </t1> läuft </t2> <t0/> schnell.",  # crossing
        "Der <t2> große </t2> <t1> Hund </t1> läuft <t0/> schnell.",  # nested apart
    ],
)
def test_placeholders_not_written_once_in_order_and_nested_are_not_used(written):
    (sentence,) = parse("The <b>big <i>red</i> dog</b> runs <br> fast.", "html")
    assert place_by_model(sentence, model_tags(sentence), written) is None


def test_more_tags_than_placeholders_or_a_tag_inside_a_word_leave_the_model_out():
    assert model_tags(parse("<b>a</b> <i>b</i> <u>c</u>", "html")[0]) is None
    assert model_tags(parse("a<br>b<br>c", "html")[0]) is None
    assert model_tags(parse("the <b>dog</b>s", "html")[0]) is None


WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota"]


def random_marked(rng: random.Random) -> tuple[str, int]:
    """A sentence of 1-12 words with 1-5 nested or sibling elements and void tags, each
    with a unique id, as XML."""
    count = rng.randint(1, 12)
    words = [rng.choice(WORDS) for _ in range(count)]
    opens: dict[int, list[str]] = {}
    closes: dict[int, list[str]] = {}
    spans: list[tuple[int, int]] = []
    for number in range(rng.randint(1, 5)):
        start = rng.randrange(count)
        end = rng.randint(start + 1, count)
        # nest properly: inside or disjoint from every earlier span, else a void tag
        if all(end <= a or b <= start or (a <= start and end <= b) or (start <= a and b <= end)
               for a, b in spans):  # fmt: skip
            spans.append((start, end))
            opens.setdefault(start, []).append(f'<e id="{number}">')
            closes.setdefault(end, []).append("</e>")
        else:
            opens.setdefault(start, []).append(f'<v id="{number}"/>')
    # opening order: outer (longer) first; closing: inner first
    out = []
    for index in range(count + 1):
        out.extend(closes.get(index, []))
        if index < count:
            out.extend(opens.get(index, []))
            out.append(words[index] + " ")
    return "".join(out).replace(" </e>", "</e> "), count


def ancestors(root: ET.Element) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}

    def walk(node, above):
        for child in node:
            found[child.get("id")] = set(above)
            walk(child, above | {child.get("id")})

    walk(root, set())
    return found


def test_random_tags_through_random_alignments_stay_well_formed_and_nested():
    rng, checked = random.Random(7), 0
    for _ in range(400):
        line, count = random_marked(rng)
        try:
            source = ET.fromstring(f"<r>{line}</r>")
        except ET.ParseError:  # the generator's spans may open and close at one word
            continue
        (sentence,) = parse(line, "xml")
        target_count = rng.randint(1, 14)
        alignment = [
            (i, rng.randrange(target_count))
            for i in range(count)
            for _ in range(rng.choice((0, 1, 1, 2)))
        ]
        output = project(sentence, " ".join(["w"] * target_count), alignment)
        translated = ET.fromstring(f"<r>{output}</r>")  # well-formed, or this raises
        before, after = ancestors(source), ancestors(translated)
        assert sorted(before) == sorted(after), output  # each tag once, none added
        assert all(before[tag] <= after[tag] for tag in before), output
        assert "".join(translated.itertext()).split() == ["w"] * target_count
        checked += 1
    assert checked >= 300
