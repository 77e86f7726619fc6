import io
import os
import struct

from conftest import make_translator
from nmt.translate.lines import format_translation, line_batches, write_translations

LINES = ["the dog sees the cat.", "", "a very small bird has slept because we sleep.", "we sleep."]


def png_size(path):
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", header[16:24])


def test_nbest_lines_are_moses_style_with_n_per_input(tiny_config, tokenizer):
    translator = make_translator(tiny_config, tokenizer, beam=4, nbest=3)
    sink = io.StringIO()
    write_translations(translator, [LINES[:2], LINES[2:]], sink)
    rows = [line.split(" ||| ") for line in sink.getvalue().splitlines()]
    assert [int(index) for index, _, _ in rows] == [0] * 3 + [1] * 3 + [2] * 3 + [3] * 3
    assert [row[1:] for row in rows[3:6]] == [["", "0.0000"]] * 3  # a blank line
    for start in (0, 6, 9):
        scores = [float(score) for _, _, score in rows[start : start + 3]]
        assert scores == sorted(scores, reverse=True) and len(set(scores)) == 3


def test_alignments_are_word_index_pairs_within_both_sentences(tiny_config, tokenizer):
    translator = make_translator(tiny_config, tokenizer, beam=3, nbest=2)
    for index, translation in enumerate(translator.translate(LINES, alignments=True)):
        for line in format_translation(index, translation, nbest=2, alignments=True):
            _, text, _, alignment = line.split(" ||| ")
            for pair in alignment.split():
                i, j = map(int, pair.split("-"))
                assert 0 <= i < len(LINES[index].split()) and 0 <= j < len(text.split())


def test_one_heatmap_per_non_blank_input(tiny_config, tokenizer, tmp_path):
    translator = make_translator(tiny_config, tokenizer)
    plots = tmp_path / "plots"
    write_translations(translator, [LINES], io.StringIO(), plot_dir=plots)
    assert sorted(p.name for p in plots.iterdir()) == ["00000.png", "00002.png", "00003.png"]
    for path in plots.iterdir():
        width, height = png_size(path)
        assert width >= 300 and height >= 250
    assert png_size(plots / "00002.png")[0] > png_size(plots / "00003.png")[0]  # longer source


def test_lines_come_out_as_soon_as_they_are_complete():
    read_end, write_end = os.pipe()
    with os.fdopen(read_end, "rb") as reader:
        batches = line_batches(reader)
        os.write(write_end, "\ufeffone\r\ntw".encode())
        assert next(batches) == ["one"]  # 'tw' waits for the rest of its line
        os.write(write_end, b"o\n\nthree\nfour")
        assert next(batches) == ["two", "", "three"]
        os.close(write_end)
        assert next(batches) == ["four"]  # the last line needs no line end
        assert next(batches, None) is None


def test_a_regular_file_is_one_batch(tmp_path):
    path = tmp_path / "in.txt"
    path.write_bytes(b"a\nb\xff\n\nc\n")  # invalid UTF-8 is replaced, as before
    with path.open("rb") as reader:
        assert list(line_batches(reader)) == [["a", "b\ufffd", "", "c"]]
