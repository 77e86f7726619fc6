"""Each file format through a stand-in translator that writes each word in capitals (its
alignment the diagonal): the file comes back in its own library's terms with the structure
it had (cues and timings, catalogue entries, element trees, lines), only the text changed,
and a file its library cannot read is an error naming where."""

from __future__ import annotations

import io
import random
import typing
import xml.etree.ElementTree as ET
import zipfile

import docx
import polib
import pytest
import srt
from docx.oxml import OxmlElement
from samples import NS, XLIFF_12, XLIFF_20, tags, word_document

from nmt.cli.decoding_options import FormatOption
from nmt.documents.formats import (
    BY_EXTENSION,
    FORMATS,
    Settings,
    document_format,
    translate_document,
)
from nmt.documents.segments import SegmentTranslator
from nmt.documents.subtitles import TAG
from nmt.errors import UserError
from nmt.search import Hypothesis
from nmt.translate.results import Candidate, Translation

WORDS = ["the", "dog", "sees", "a", "small", "bird", "because", "we", "sleep", "today"]


class Capitals:
    """A translator whose translation of a sentence is its words in capitals."""

    source_languages = ["en"]
    target_languages = ["de"]

    def __init__(self):
        self.sentences: list[str] = []

    def stream(self, lines, alignments, chunk, first, src_lang, **options):
        for line in lines:
            self.sentences.append(line)
            words = line.split()
            steps = len(words) + 1
            hypothesis = Hypothesis([1] * len(words), -1.0, None, steps)
            pairs = " ".join(f"{i}-{i}" for i in range(len(words)))
            text = " ".join(word.upper() for word in words)
            yield Translation(line, [1] * len(words), [Candidate(text, -1.0, hypothesis, pairs)])


def translated(name: str, data: bytes, **settings) -> tuple[bytes, Capitals]:
    translator = Capitals()
    segments = SegmentTranslator(translator)
    return translate_document(data, FORMATS[name], segments, Settings(**settings), "f"), translator


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)) + "."


def test_the_command_offers_every_format_and_names_every_extension():
    option = typing.get_args(typing.get_args(FormatOption)[0])[0]
    assert typing.get_args(option) == tuple(FORMATS)
    help_text = typing.get_args(FormatOption)[1].help
    assert all(extension in help_text for extension in BY_EXTENSION)


def test_formats_are_known_by_extension_and_plain_text_stays_line_by_line(tmp_path):
    assert document_format(tmp_path / "a.SRT", None).name == "srt"
    assert document_format(tmp_path / "a.pot", None).name == "po"
    assert document_format(tmp_path / "a.txt", None) is None  # lines, unless --format txt
    assert document_format(tmp_path / "a.de", None) is None
    assert document_format(tmp_path / "a.de", "html").name == "html"


def test_subrip_keeps_every_cue_its_number_and_timings_and_wraps_within_its_lines():
    rng = random.Random(3)
    cues = [
        srt.Subtitle(
            index=number + 1,
            start=srt.timedelta(milliseconds=2000 * number + rng.randrange(500)),
            end=srt.timedelta(milliseconds=2000 * number + 1500),
            content="\n".join(sentence(rng, rng.randint(2, 6)) for _ in range(rng.randint(1, 2)))
            + (" <i>we sleep</i>" if number % 7 == 0 else ""),
        )
        for number in range(200)
    ]
    data = srt.compose(cues).encode()
    out, _ = translated("srt", data, max_line=42)
    back = list(srt.parse(out.decode()))
    assert len(back) == 200
    for before, after in zip(cues, back, strict=True):
        assert (after.index, after.start, after.end) == (before.index, before.start, before.end)
        lines = after.content.splitlines()
        assert 1 <= len(lines) <= len(before.content.splitlines())
        assert all(len(TAG.sub("", line)) <= 42 for line in lines) or len(lines) == len(
            before.content.splitlines()
        )  # within 42 characters where the cue's lines allow it
        assert TAG.sub("", after.content).split() == TAG.sub("", before.content).upper().split()
        assert TAG.findall(after.content) == TAG.findall(before.content)


def test_webvtt_keeps_identifiers_settings_notes_and_tags():
    data = (
        b"WEBVTT\n\nNOTE made by hand\n\nintro\n00:00:01.000 --> 00:00:03.500 align:start\n"
        b"we see <b>the small dog</b>.\n\n00:00:04.000 --> 00:00:06.000\na bird &amp; we "
        b"sleep.\nbecause we sleep.\n"
    )
    out, _ = translated("vtt", data)
    assert out.decode() == (
        "WEBVTT\n\nNOTE made by hand\n\nintro\n00:00:01.000 --> 00:00:03.500 align:start\n"
        "WE SEE <b>THE SMALL DOG</b>.\n\n00:00:04.000 --> 00:00:06.000\nA BIRD &amp; WE "
        "SLEEP. BECAUSE WE SLEEP.\n"
    )


CATALOGUE = """\
msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\\n"
"Plural-Forms: nplurals=3; plural=(n==1 ? 0 : n%10>=2 && n%10<=4 ? 1 : 2);\\n"

#: app.py:10
#, python-format
msgid "we see %(count)d dogs."
msgstr ""

msgid "a dog sleeps."
msgid_plural "%d dogs sleep."
msgstr[0] ""
msgstr[1] ""
msgstr[2] ""

msgid "done"
msgstr "fertig"

#~ msgid "old"
#~ msgstr ""
"""


def test_a_gettext_catalogue_gets_its_messages_and_plurals_flagged_fuzzy():
    out, translator = translated("po", CATALOGUE.encode(), tgt_lang="de")
    catalogue = polib.pofile(out.decode())
    assert catalogue.metadata["Language"] == "de"
    entries = {entry.msgid: entry for entry in catalogue}
    variable = entries["we see %(count)d dogs."]
    assert variable.msgstr == "WE SEE %(count)d DOGS." and variable.flags == [
        "python-format",
        "fuzzy",
    ]
    plural = entries["a dog sleeps."]
    assert plural.msgstr_plural == {0: "A DOG SLEEPS.", 1: "%d DOGS SLEEP.", 2: "%d DOGS SLEEP."}
    assert entries["done"].msgstr == "fertig" and not entries["done"].fuzzy  # kept
    assert entries["old"].obsolete and entries["old"].msgstr == ""
    assert "we see dogs." in translator.sentences  # the variable held out of the sentence


def test_html_keeps_its_element_tree_and_copies_what_is_not_to_be_translated():
    page = (
        '<!DOCTYPE html>\n<html lang="en"><head><title>the dog</title><style>p {x: y}</style>'
        "</head>\n<body><h1>we see <b>the small dog</b>.</h1>\n<p>the bird sleeps. we see\n"
        'a dog because <a href="https://x.org/?a=1&amp;b=2">we sleep</a>.</p>\n<ul><li>one '
        "<em>bird</em><ol><li>we sleep</li><li>a dog</li></ol></li><li>a &amp; b</li></ul>"
        '<pre>keep  this</pre><p translate="no">'
        "the dog</p><table><tr><td>a dog</td></tr></table></body></html>\n"
    )
    out, _ = translated("html", page.encode())
    text = out.decode()
    assert tags(text) == tags(page)
    assert "<pre>keep  this</pre>" in text and '<p translate="no">the dog</p>' in text
    assert "<style>p {x: y}</style>" in text and "<title>THE DOG</title>" in text
    assert "<h1>WE SEE <b>THE SMALL DOG</b>.</h1>" in text
    assert '<a href="https://x.org/?a=1&amp;b=2">WE SLEEP</a>' in text
    assert "<li>A &amp; B</li>" in text
    assert "<ol><li>WE SLEEP</li><li>A DOG</li></ol>" in text  # a list in a list


def test_xml_stays_well_formed_with_the_same_tree():
    document = (
        '<?xml version="1.0" encoding="UTF-8"?>\n<doc><title>the dog</title>\n<p id="1">we '
        'see <g id="b">the small dog</g>.<x id="br"/> a bird sleeps.</p></doc>\n'
    )
    out, _ = translated("xml", document.encode())
    before, after = ET.fromstring(document.encode()), ET.fromstring(out)
    assert [(e.tag, e.attrib) for e in before.iter()] == [(e.tag, e.attrib) for e in after.iter()]
    assert after.find("p/g").text == "THE SMALL DOG"


def test_xliff_1_2_gets_targets_with_their_inline_codes_beside_untranslated_sources():
    out, _ = translated("xliff", XLIFF_12, tgt_lang="de")
    root = ET.fromstring(out)
    assert root.find("x1:file", NS).get("target-language") == "de"
    units = {unit.get("id"): unit for unit in root.iter(f"{{{NS['x1']}}}trans-unit")}
    target = units["1"].find("x1:target", NS)
    assert target.get("state") == "needs-review-translation"
    assert target.get("state-qualifier") == "mt-suggestion"
    assert (
        ET.tostring(target, encoding="unicode")
        .split(">", 1)[1]
        .startswith('WE SEE <ns0:g id="1">THE SMALL DOG</ns0:g>.<ns0:x id="2" />')
    )
    assert units["2"].find("x1:target", NS) is None  # translate="no"
    assert units["3"].find("x1:target", NS).text == "fertig"  # translated before: kept
    assert units["4"].find("x1:target", NS).text == "A BIRD & WE"  # an empty target filled


def test_xliff_2_segments_get_targets_and_the_file_its_target_language():
    out, _ = translated("xliff", XLIFF_20, tgt_lang="de")
    root = ET.fromstring(out)
    assert root.get("trgLang") == "de"
    first, ignorable, last = root.find("x2:file/x2:unit", NS)
    assert first.get("state") == "translated"
    assert "".join(first.find("x2:target", NS).itertext()) == "WE SEE THE DOG  TODAY."
    assert [child.tag for child in first.find("x2:target", NS)] == [
        f"{{{NS['x2']}}}pc", f"{{{NS['x2']}}}ph"
    ]  # fmt: skip
    assert ignorable.find("x2:target", NS) is None
    assert (last.get("state"), last.find("x2:target", NS).text) == ("final", "ein Vogel.")


XLIFF_ITS = b"""<?xml version="1.0" encoding="UTF-8"?>
<xliff xmlns="urn:oasis:names:tc:xliff:document:2.0" version="2.0" srcLang="en"
       xmlns:its="http://www.w3.org/2005/11/its">
 <file id="f1">
  <unit id="u1"><segment><source>we see <mrk id="m" its:term="yes">the dog</mrk></source>
  </segment></unit>
  <group id="g" translate="no">
   <unit id="u2"><segment><source>a bird.</source></segment></unit>
   <unit id="u3" translate="yes"><segment><source>we sleep.</source></segment></unit>
  </group>
 </file>
</xliff>
"""


def test_xliff_inline_codes_keep_their_prefixes_and_units_inherit_translate_no():
    out, _ = translated("xliff", XLIFF_ITS, tgt_lang="de")
    units = {u.get("id"): u for u in ET.fromstring(out).iter(f"{{{NS['x2']}}}unit")}
    target = units["u1"].find("x2:segment/x2:target", NS)
    (mark,) = target
    assert mark.get("{http://www.w3.org/2005/11/its}term") == "yes" and mark.text == "THE DOG"
    assert units["u2"].find("x2:segment/x2:target", NS) is None  # its group's translate="no"
    assert units["u3"].find("x2:segment/x2:target", NS).text == "WE SLEEP."


def test_a_word_document_keeps_each_runs_formatting_with_its_words_and_its_links():
    out, _ = translated("docx", word_document())
    document = docx.Document(io.BytesIO(out))
    first, linked, empty = document.paragraphs
    runs = [(run.text, run.bold, run.italic) for run in first.runs if run.text.strip()]
    assert runs == [
        ("WE SEE", None, None), ("THE SMALL DOG", True, None), ("BECAUSE", None, None),
        ("THEY", None, True), ("SLEEP.", None, None),
    ]  # fmt: skip
    assert first.text == "WE SEE THE SMALL DOG BECAUSE THEY SLEEP."
    assert [link.address for link in linked.hyperlinks] == ["https://x.org"]
    assert linked.hyperlinks[0].text == "THE BIRD" and linked.text == "VISIT THE BIRD TODAY."
    assert empty.text == ""
    assert [cell.text for cell in document.tables[0].rows[0].cells] == ["A DOG", "WE SLEEP"]
    assert document.sections[0].header.paragraphs[0].text == "THE BIRD SLEEPS."


def test_a_word_runs_text_beside_a_tab_a_break_or_a_page_mark_is_translated_around_them():
    """Such a run was copied whole, its text untranslated: its text is split from the rest,
    a tab or a break read as the space between the words around it."""
    document = docx.Document()
    run = document.add_paragraph().add_run("we see")
    run.bold = True
    run.add_tab()
    run.add_text("the dog")
    run.add_break()
    run.add_text("today")
    run._r.append(OxmlElement("w:lastRenderedPageBreak"))
    written = io.BytesIO()
    document.save(written)
    out, translator = translated("docx", written.getvalue())
    assert translator.sentences == ["we see the dog today"]
    (paragraph,) = docx.Document(io.BytesIO(out)).paragraphs
    assert paragraph.text == "WE SEE\tTHE DOG\nTODAY"
    assert {run.bold for run in paragraph.runs} == {True}
    kept = [child.tag.split("}")[1] for run in paragraph.runs for child in run._r]
    assert [tag for tag in kept if tag not in ("rPr", "t")] == [
        "tab", "br", "lastRenderedPageBreak",
    ]  # fmt: skip


MARKDOWN = """\
# The *small* dog ##

A paragraph with **bold**, [a link](https://x.org/ä "T"), `a_code` and ![a bird](a.png)
on two lines.\\
A break, <https://auto.org> and a \\*star\\*.

> quoted **text**
> more

1. item one
2. item *two*

| a | b |
|---|:-:|
| c **d** | e |

```py
we sleep = 1
```
Title
=====
"""


def test_markdown_keeps_its_blocks_markers_code_and_link_targets():
    out, translator = translated("md", MARKDOWN.encode())
    assert out.decode() == (
        "# THE *SMALL* DOG ##\n\n"
        'A PARAGRAPH WITH **BOLD**, [A LINK](https://x.org/ä "T"), `a_code` AND ![a bird](a.png)'
        " ON TWO LINES.\\\nA BREAK, <https://auto.org> AND A \\*STAR\\*.\n\n"
        "> QUOTED **TEXT** MORE\n\n"
        "1. ITEM ONE\n2. ITEM *TWO*\n\n"
        "| A | B |\n|---|:-:|\n| C **D** | E |\n\n"
        "```py\nwe sleep = 1\n```\nTITLE\n=====\n"
    )
    assert "A break, and a *star*." in translator.sentences  # the autolink held out


def test_markdown_counts_lines_as_its_parser_does():
    """U+2028, \\v or \\x85 inside a paragraph end no line for markdown-it: each later
    block is still written over its own lines."""
    out, _ = translated("md", "a\u2028b\n\nc\x85d\n\ne\r\nf\rg\n".encode())
    assert out.decode() == "A B\n\nC D\n\nE F G\n"
    out, _ = translated("md", b"\x1f\n\na\x1fb \x00c\n")  # characters XML cannot hold
    assert out.decode() == "\x1f\n\nAB \x1f\ufffdC\n"  # each kept, where alignments put it


def test_plain_text_keeps_its_lines_and_their_ends():
    out, translator = translated("txt", b"we see a dog. the bird sleeps.\r\n\nwe sleep {n} days\n")
    assert out == b"WE SEE A DOG. THE BIRD SLEEPS.\r\n\nWE SLEEP {n} DAYS\n"
    assert translator.sentences == ["we see a dog.", "the bird sleeps.", "we sleep days"]


@pytest.mark.parametrize(
    "name, data, where",
    [
        ("srt", b"1\n00:00:01,000 -> 00:00:02,000\na\n", "line 1: a cue should start there"),
        ("po", b'msgid "a"\nmsgstr "b"\nfoo bar\n', "line 3"),
        ("xml", b"<doc>\n<p>a</doc>", "line 2, column 5: </doc> where </p> was expected"),
        ("html", b"caf\xe9", "line 1 is not UTF-8 (byte 3)"),
        ("vtt", b"NOT VTT\n", "line 1: a WebVTT file starts with WEBVTT"),
        ("xliff", b'<xliff version="1.2">\n<file></xliff>', "line 2, column 15"),
        ("xliff", b'<doc version="1.2"/>', "line 1: the root element is <doc version='1.2'>"),
        ("docx", b"PK not a zip", "not a Word document (.docx) python-docx can open"),
    ],
)
def test_a_file_its_library_cannot_read_is_an_error_naming_where(name, data, where):
    with pytest.raises(UserError, match=f"f: not a {name} file its library") as error:
        translated(name, data)
    assert where in str(error.value)


def test_a_catalogue_that_names_a_file_is_read_as_text_never_from_the_disk(tmp_path):
    """polib reads a file where the text it is given names one: an upload of one line,
    the path of a catalogue on the server, would come back with that catalogue's text."""
    secret = tmp_path / "secret.po"
    secret.write_text('msgid "a"\nmsgstr "the secret"\n', "utf-8")
    with pytest.raises(UserError, match="not a po file its library.*line 1"):
        translated("po", str(secret).encode())  # text, and no catalogue


def test_a_word_document_that_would_unpack_to_far_more_than_word_writes_is_refused_unread():
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/document.xml", b"<w:p/>" * (3 << 20))  # 18 MiB, a few KiB packed
    with pytest.raises(UserError, match=r"unpack to 18,874,368 bytes, more than 50 times"):
        translated("docx", packed.getvalue())


def test_html_attributes_readers_see_are_translated_unless_their_element_says_no():
    page = (
        '<p title="the dog">we see <img alt="a bird &amp; a dog" src="the dog.png"> today.</p>'
        '<input placeholder=\'we sleep\'/><a aria-label="the bird" href="#the">x</a>'
        '<p translate="no" title="keep">the cat</p>'
        '<div class="x notranslate"><p>a <img alt="kept too"><span title="and this">b</div>'
        '<code><abbr title="kept in code">x</abbr></code><p title="a dog">after</p>'
    )
    out, translator = translated("html", page.encode())
    text = out.decode()
    assert '<p title="THE DOG">' in text and 'alt="A BIRD &amp; A DOG" src="the dog.png"' in text
    assert "placeholder='WE SLEEP'" in text and 'aria-label="THE BIRD" href="#the"' in text
    assert '<p translate="no" title="keep">the cat</p>' in text
    for value in ("kept too", "and this", "kept in code"):  # inside what says no: kept
        assert f'"{value}"' in text
    assert '<p title="A DOG">' in text  # after it all is closed
    assert "a bird & a dog" in translator.sentences  # the value read as plain text
    assert [t[:2] for t in tags(text)] == [t[:2] for t in tags(page)]
