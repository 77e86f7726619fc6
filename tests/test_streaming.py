import os

from nmt.streaming import line_batches


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
