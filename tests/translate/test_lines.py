"""How `nmt translate` reads and writes lines: groups as input arrives, a file a chunk at a
time with output identical to one call, n-best and alignment lines, heatmaps."""

import io
import os
import struct

import pytest

from conftest import make_translator
from nmt.errors import UserError
from nmt.translate.lines import FileLines, InputLines, format_translation, write_translations

LINES = ["the dog sees the cat.", "", "a very small bird has slept because we sleep.", "we sleep."]
SENTENCES = [
    "the small dog sees a bird.",
    "a cat has slept.",
    "we see the dog because the cat sleeps.",
    "the bird sleeps.",
    "I run.",
    "the very small cat sees the dog and the bird.",
]


def lines_of(lines: list[str]) -> InputLines:
    return InputLines(io.BytesIO("".join(line + "\n" for line in lines).encode()))


def png_size(path):
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", header[16:24])


def test_nbest_lines_are_moses_style_with_n_per_input(tiny_config, tokenizer):
    translator = make_translator(tiny_config, tokenizer, beam=4, nbest=3)
    sink = io.StringIO()
    write_translations(translator, lines_of(LINES), sink)
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
    write_translations(translator, lines_of(LINES), io.StringIO(), plot_dir=plots)
    assert sorted(p.name for p in plots.iterdir()) == ["00000.png", "00002.png", "00003.png"]
    for path in plots.iterdir():
        width, height = png_size(path)
        assert width >= 300 and height >= 250
    assert png_size(plots / "00002.png")[0] > png_size(plots / "00003.png")[0]  # longer source


def test_lines_come_out_as_soon_as_they_are_complete():
    read_end, write_end = os.pipe()
    with os.fdopen(read_end, "rb") as reader:
        source = InputLines(reader)
        assert source.total is None  # a pipe: no count, no ETA
        groups = source.groups()
        os.write(write_end, "\ufeffone\r\ntw".encode())
        assert next(groups) == ["one"]  # 'tw' waits for the rest of its line
        os.write(write_end, b"o\n\nthree\nfour")
        assert next(groups) == ["two", "", "three"]
        os.close(write_end)
        assert next(groups) == ["four"]  # the last line needs no line end
        assert next(groups, None) is None


def test_a_regular_file_is_one_group_read_lazily_and_counted(tmp_path):
    path = tmp_path / "in.txt"
    path.write_bytes(b"a\nb\xff\n\nc")  # on stdin invalid UTF-8 is replaced, as before
    with path.open("rb") as reader:
        source = InputLines(reader)
        assert source.total == 4
        (group,) = list(source.groups())
        assert list(group) == ["a", "b\ufffd", "", "c"]
    with path.open("rb") as reader:  # a file named by --input is refused, naming the line
        (group,) = list(InputLines(reader, str(path)).groups())
        with pytest.raises(UserError, match=r"in.txt is not valid UTF-8: line 2, byte 2"):
            list(group)


@pytest.mark.parametrize("settings", [{"beam": 1}, {"beam": 3, "nbest": 2}])
def test_a_file_translated_in_chunks_equals_one_call(tiny_config, tokenizer, settings, tmp_path):
    """Chunks of 3 lines (sorted and batched within each chunk) write what one call over
    all 30 lines writes: the same text, scores and alignments, in input order."""
    translator = make_translator(tiny_config, tokenizer, batch_size=4, **settings)
    lines = [*LINES, *(corpus_line for corpus_line in SENTENCES)] * 3
    written = {}
    for chunk in (3, None):
        sink = io.StringIO()
        write_translations(translator, lines_of(lines), sink, alignments=True, chunk=chunk)
        written[chunk] = sink.getvalue()
    assert written[3] == written[None]
    nbest = settings.get("nbest", 1)
    assert len(written[3].splitlines()) == len(lines) * nbest
    one_call = translator.translate(lines, alignments=True)
    expected = [
        row for i, t in enumerate(one_call) for row in format_translation(i, t, nbest, True)
    ]
    assert written[3].splitlines() == expected


def test_attention_is_kept_only_where_asked_and_then_in_its_own_tensor(tiny_config, tokenizer):
    translator = make_translator(tiny_config, tokenizer, beam=3, nbest=2)
    plain = translator.translate(LINES)
    assert all(h.attention is None for t in plain for h in t.hypotheses)
    for translation in translator.translate(LINES, alignments=True):
        for hypothesis in translation.hypotheses:
            weights = hypothesis.attention  # [steps, H, S]: no view of its batch's buffer
            assert weights.shape[0] == hypothesis.steps
            assert weights.untyped_storage().nbytes() == weights.numel() * weights.element_size()


class PipeReads(InputLines):
    """Lines as a pipe delivers them: a group per read, here the given `reads`."""

    def __init__(self, reads: list[list[str]]):
        self.reads, self.regular, self.total = reads, False, None

    def groups(self):
        yield from self.reads


@pytest.mark.parametrize("reads", [[LINES], [LINES[:1], LINES[1:2], LINES[2:]]])
def test_side_files_must_have_as_many_lines_as_the_input(tiny_config, tokenizer, tmp_path, reads):
    """The missing line is named by its number in the whole input, however many reads of a
    pipe brought the lines."""
    translator = make_translator(tiny_config, tokenizer, beam=2)
    (tmp_path / "short").write_text("der\n\n")
    (tmp_path / "long").write_text("der\n\n\n\n\n")
    for name, message in (
        (
            "short",
            r"--prefix .*short \(2 lines\): it ends before the lines to translate do \(at "
            r"line 3\)",
        ),  # fmt: skip
        ("long", r"--prefix .*long has more lines than the input's 4"),
    ):
        prefixes = FileLines("--prefix", tmp_path / name, lambda line, _: line.strip() or None)
        with pytest.raises(UserError, match=message):
            write_translations(translator, PipeReads(reads), io.StringIO(), prefixes=prefixes)


def test_samples_do_not_depend_on_how_a_pipe_delivers_the_lines(tiny_config, tokenizer):
    translator = make_translator(tiny_config, tokenizer, sample=True, nbest=2, seed=3)
    written = []
    for source in (lines_of(SENTENCES), PipeReads([SENTENCES[:1], SENTENCES[1:4], SENTENCES[4:]])):
        sink = io.StringIO()
        write_translations(translator, source, sink)
        written.append(sink.getvalue())
    assert written[0] == written[1]
