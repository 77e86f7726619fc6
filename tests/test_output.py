import io
import struct

from test_translator import make_translator, with_decode

from nmt.output import format_translation, write_translations

LINES = ["the dog sees the cat.", "", "a very small bird has slept because we sleep.", "we sleep."]


def png_size(path):
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", header[16:24])


def test_nbest_lines_are_moses_style_with_n_per_input(tiny_config, tokenizer):
    translator = with_decode(make_translator(tiny_config, tokenizer), beam=4, nbest=3)
    sink = io.StringIO()
    write_translations(translator, [LINES[:2], LINES[2:]], sink)
    rows = [line.split(" ||| ") for line in sink.getvalue().splitlines()]
    assert [int(index) for index, _, _ in rows] == [0] * 3 + [1] * 3 + [2] * 3 + [3] * 3
    assert [row[1:] for row in rows[3:6]] == [["", "0.0000"]] * 3  # a blank line
    for start in (0, 6, 9):
        scores = [float(score) for _, _, score in rows[start : start + 3]]
        assert scores == sorted(scores, reverse=True) and len(set(scores)) == 3


def test_alignments_are_word_index_pairs_within_both_sentences(tiny_config, tokenizer):
    translator = with_decode(make_translator(tiny_config, tokenizer), beam=3, nbest=2)
    for index, translation in enumerate(translator.translate(LINES)):
        for line in format_translation(translator, index, translation, alignments=True):
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
