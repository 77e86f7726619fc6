"""`nmt translate --input FILE` with a file of a known format, through the demo model: the
file written whole, in its format, never over its input; what cannot go with it refused."""

from __future__ import annotations

import srt

from conftest import nmt

SUBTITLES = """\
1
00:00:01,000 --> 00:00:03,500
we see the small dog
because <i>they sleep</i>.

2
00:00:04,000 --> 00:00:06,000
I bring the cities back.
"""


def test_a_subtitle_file_is_translated_whole_into_its_output(demo_rnnsearch, tmp_path):
    source = tmp_path / "film.srt"
    source.write_text(SUBTITLES, "utf-8")
    output = tmp_path / "film.de.srt"
    ran = nmt("translate", "--checkpoint", demo_rnnsearch, "--input", source, "--output", output)
    assert ran.returncode == 0, ran.stderr
    before, after = srt.parse(SUBTITLES), srt.parse(output.read_text("utf-8"))
    for cue, translated in zip(before, after, strict=True):
        assert (cue.index, cue.start, cue.end) == (
            translated.index,
            translated.start,
            translated.end,
        )
    assert "ich bringe die Städte zurück." in output.read_text("utf-8")
    assert "<i>sie schlafen</i>" in output.read_text("utf-8")
    assert source.read_text("utf-8") == SUBTITLES
    again = nmt("translate", "--checkpoint", demo_rnnsearch, "--input", source, "--output", source)
    assert again.returncode == 2 and source.read_text("utf-8") == SUBTITLES


def test_a_file_format_refuses_what_cannot_go_with_it(demo_rnnsearch, tmp_path):
    source = tmp_path / "film.srt"
    source.write_text(SUBTITLES, "utf-8")
    cases = [
        (("--format", "srt"), "--format srt translates a whole file: give it as --input FILE"),
        (("--input", source, "--markup", "html", "--format", "srt"), "give one of them"),
        (("--input", source, "--alignments"), "a srt file is written once, with its tags"),
        (("--input", tmp_path / "lines.txt", "--keep", "x"), "--keep holds text out"),
    ]
    (tmp_path / "lines.txt").write_text("we sleep.\n", "utf-8")
    for args, message in cases:
        ran = nmt("translate", "--checkpoint", demo_rnnsearch, *args, input="")
        assert ran.returncode == 2 and message in ran.stderr, (args, ran.stderr)


def test_format_txt_translates_a_text_file_a_paragraph_a_line(demo_rnnsearch, tmp_path):
    source = tmp_path / "notes.txt"
    source.write_text("I bring the cities back. they sleep.\n\nwe see {count} dogs.\n", "utf-8")
    ran = nmt("translate", "--checkpoint", demo_rnnsearch, "--input", source, "--format", "txt")
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.split("\n")
    assert lines[0].startswith("ich bringe die Städte zurück. ") and lines[1] == ""
    assert "{count}" in lines[2] and len(lines) == 4


PAGE = (
    "<!DOCTYPE html>\n<html><body><h1>we see <b>the small dog</b>.</h1>\n<p>the bird sleeps "
    'because <a href="https://x.org/">we sleep</a>.</p><ul><li>a dog</li><li>we see '
    '<em>the cat</em>.</li></ul><p translate="no">the dog</p></body></html>\n'
)
XML = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<doc><title>the dog</title><p id="1">we see '
    '<g id="b">the small dog</g>.<x id="br"/> a bird sleeps.</p></doc>\n'
)
MARKDOWN = (
    "# the small dog\n\nwe see **the cat** because [we sleep](https://x.org/).\n\n"
    "- a bird sleeps.\n- the dog sees the cat.\n\n```\nkeep this\n```\n"
)


def test_every_format_keeps_its_structure_through_a_trained_model(demo_rnnsearch, tmp_path):
    """The formats' structure (element trees, runs and their formatting, units, blocks)
    survives a real model's translations and alignments, not only a stand-in's, and the
    words come back in German."""
    import io
    import xml.etree.ElementTree as ET

    import docx
    from samples import NS, XLIFF_12, tags, word_document

    files = {
        "page.html": PAGE.encode(),
        "doc.xml": XML.encode(),
        "notes.md": MARKDOWN.encode(),
        "letter.docx": word_document(),
        "units.xlf": XLIFF_12,
    }
    written = {}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        output = tmp_path / f"de.{name}"
        ran = nmt("translate", "--checkpoint", demo_rnnsearch, "--input", tmp_path / name,
                  "--output", output, "--tgt-lang", "de")  # fmt: skip
        assert ran.returncode == 0, (name, ran.stderr)
        written[name] = output.read_bytes()
    page = written["page.html"].decode()
    assert tags(page) == tags(PAGE) and '<p translate="no">the dog</p>' in page
    assert "Hund" in page
    before, after = ET.fromstring(XML.encode()), ET.fromstring(written["doc.xml"])
    assert [(e.tag, e.attrib) for e in before.iter()] == [(e.tag, e.attrib) for e in after.iter()]
    notes = written["notes.md"].decode()
    assert notes.startswith("# ") and "**" in notes and "](https://x.org/)" in notes
    assert "```\nkeep this\n```" in notes and notes.count("\n- ") == 2
    document = docx.Document(io.BytesIO(written["letter.docx"]))
    original = docx.Document(io.BytesIO(word_document()))
    assert len(document.paragraphs) == len(original.paragraphs)
    assert any(run.bold for run in document.paragraphs[0].runs)
    assert any(run.italic for run in document.paragraphs[0].runs)
    units = ET.fromstring(written["units.xlf"]).iter(f"{{{NS['x1']}}}trans-unit")
    targets = {unit.get("id"): unit.find("x1:target", NS) for unit in units}
    assert targets["1"] is not None and targets["1"].find("x1:g", NS) is not None
    assert targets["2"] is None and targets["3"].text == "fertig"
