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
