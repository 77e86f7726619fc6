"""Finding and reading a split: text files, tables, the hub; whole or streamed, read alike."""

import json
import re
import shutil

import pytest

from conftest import nmt, tiny_experiment, write_parallel
from nmt.config import DataConfig, Splits
from nmt.data.splits import load_split, load_train_split, read_lines, read_pairs
from nmt.errors import UserError


def local(path, **kwargs) -> DataConfig:
    return DataConfig(src_lang="en", tgt_lang="de", path=str(path), **kwargs)


def test_text_files_load_aligned(corpus_dir):
    text = load_split(local(corpus_dir), "train")
    assert len(text.src) == len(text.tgt) == 300
    assert text.src[0] == (corpus_dir / "train.en").read_text().splitlines()[0]


def test_mismatched_line_counts_name_both_files(tmp_path):
    (tmp_path / "train.en").write_text("a\nb\nc\n")
    (tmp_path / "train.de").write_text("x\ny\n")
    with pytest.raises(UserError) as error:
        load_split(local(tmp_path), "train")
    message = str(error.value)
    assert "train.en has 3 lines" in message and "train.de has 2" in message


def test_bom_and_crlf_are_handled(tmp_path):
    (tmp_path / "f").write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\n")
    assert read_lines(tmp_path / "f") == ["one", "two"]


def test_tsv_jsonl_and_parquet_load_through_datasets(tmp_path):
    pairs = [("a cat", "eine Katze"), ("the dog", "der Hund")]
    (tmp_path / "train.tsv").write_text("".join(f"{en}\t{de}\n" for en, de in pairs))
    (tmp_path / "valid.jsonl").write_text(
        "".join(json.dumps({"translation": {"en": en, "de": de}}) + "\n" for en, de in pairs)
    )
    import datasets

    datasets.Dataset.from_dict(
        {"en": [p[0] for p in pairs], "de": [p[1] for p in pairs]}
    ).to_parquet(str(tmp_path / "test.parquet"))
    config = local(tmp_path)
    for role in ("train", "valid", "test"):
        text = load_split(config, role)
        assert list(zip(text.src, text.tgt, strict=True)) == pairs, role


def test_jsonl_missing_language_lists_what_is_there(tmp_path):
    (tmp_path / "train.jsonl").write_text(
        json.dumps({"translation": {"en": "a", "fr": "b"}}) + "\n"
    )
    with pytest.raises(UserError, match="languages found: en, fr"):
        load_split(local(tmp_path), "train")


def test_missing_split_lists_files_found(corpus_dir):
    with pytest.raises(UserError, match="no files for split 'dev'.*train.en"):
        load_split(local(corpus_dir, splits=Splits(valid="dev")), "valid")


def test_hub_unreachable_is_a_clear_error(monkeypatch):
    """The real hub code path, with the network cut even where the machine has one."""

    def unreachable(*args, **kwargs):
        raise OSError("network is unreachable")

    monkeypatch.setattr("socket.create_connection", unreachable)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    config = DataConfig(src_lang="de", tgt_lang="en", hub_id="bentrevett/multi30k")
    with pytest.raises(UserError, match="data.path"):
        load_split(config, "train")
    # the files to download are named as data.splits names them, not as the hub does
    named = DataConfig(
        src_lang="de",
        tgt_lang="en",
        hub_id="bentrevett/multi30k",
        splits=Splits(valid="val"),
        hub_splits=Splits(valid="validation"),
    )
    with pytest.raises(UserError, match=r"split 'validation'.* with val.de and val.en \("):
        load_split(named, "valid")


def test_streamed_lines_are_read_like_read_lines(tmp_path):
    (tmp_path / "train.en").write_bytes(b"\xef\xbb\xbfone\r\ntwo \xc3\xa4\n\nlast")
    (tmp_path / "train.de").write_bytes(b"eins\r\nzwei\n\nletzte\n")
    local = tiny_experiment(tmp_path)
    pairs = list(read_pairs(local.data))
    assert [s for s, _ in pairs] == read_lines(tmp_path / "train.en")
    assert [t for _, t in pairs] == read_lines(tmp_path / "train.de")
    (tmp_path / "train.de").write_text("eins\nzwei\n")
    with pytest.raises(UserError, match="train.en has 4 lines but .*train.de has 2"):
        list(read_pairs(local.data))


def test_streaming_reads_tables_through_datasets(tmp_path):
    (tmp_path / "train.tsv").write_text("a cat\teine Katze\nthe dog\tder Hund\n")
    local = tiny_experiment(tmp_path)
    assert list(read_pairs(local.data)) == [("a cat", "eine Katze"), ("the dog", "der Hund")]


@pytest.mark.parametrize("problem", ["missing split", "empty file"])
def test_whole_and_streamed_reading_fail_alike(corpus_dir, tmp_path, problem):
    """Both readers start from `locate`, so a bad corpus gets the same message either way."""
    if problem == "missing split":
        config, expected = local(corpus_dir, splits=Splits(valid="dev")), "no files for split"
    else:
        (tmp_path / "dev.en").write_text("")
        (tmp_path / "dev.de").write_text("x\n")
        config, expected = local(tmp_path, splits=Splits(valid="dev")), "dev.en is empty"
    with pytest.raises(UserError, match=expected):
        load_split(config, "valid")
    with pytest.raises(UserError, match=expected):
        list(read_pairs(config, "valid"))


def test_a_directions_own_pair_of_files_wins_over_the_shared_ones(corpus_dir, tmp_path):
    """`{split}.de-en.de` and `{split}.de-en.en` hold a direction's own pair (nmt distill
    writes one per direction); the other directions read the shared files."""
    shutil.copytree(corpus_dir, tmp_path, dirs_exist_ok=True)
    (tmp_path / "train.de-en.de").write_text("ein Hund\n", "utf-8")
    (tmp_path / "train.de-en.en").write_text("a dog\n", "utf-8")
    own = load_split(DataConfig(src_lang="de", tgt_lang="en", path=str(tmp_path)), "train")
    assert (own.src, own.tgt) == (["ein Hund"], ["a dog"])
    shared = load_split(local(tmp_path), "train")
    assert shared.src == read_lines(corpus_dir / "train.en")
    streamed = list(read_pairs(DataConfig(src_lang="de", tgt_lang="en", path=str(tmp_path))))
    assert streamed == [("ein Hund", "a dog")]


def test_extra_train_directories_follow_the_corpus_s_train_split(corpus_dir, tmp_path):
    write_parallel(tmp_path / "more", "train", [("a cat.", "eine katze."), ("", "leer.")])
    config = local(corpus_dir, extra_train=[str(tmp_path / "more")])
    text = load_train_split(config)
    original = load_split(config, "train")
    assert text.src == [*original.src, "a cat.", ""] and text.tgt[-2:] == ["eine katze.", "leer."]
    assert text.origin.endswith("more/train.en / train.de")
    assert load_split(config, "valid").src == read_lines(corpus_dir / "valid.en")  # as ever
    missing = local(corpus_dir, extra_train=[str(tmp_path / "more"), str(tmp_path / "none")])
    with pytest.raises(UserError, match=r"^data.extra_train\[1\] .*none does not exist"):
        load_train_split(missing)


@pytest.mark.parametrize("reader", ["streamed", "whole", "nmt clean"])
def test_a_byte_that_is_not_utf8_is_named_where_it_is(tmp_path, reader):
    """The line, the byte of the line counted from 1 (as lines are), and the offset in the
    file counted from 0 (as xxd and dd count), each pointing at the bad byte itself; a BOM
    is a byte of the file too."""
    data = "\ufeffein Hund\nzwei Hunde\n".encode() + b"drei \xffHunde\n"
    (tmp_path / "train.de").write_bytes(data)
    (tmp_path / "train.en").write_text("a dog\ntwo dogs\nthree dogs\n", "utf-8")
    write_parallel(tmp_path, "valid", [("a dog", "ein Hund")])
    write_parallel(tmp_path, "test", [("a dog", "ein Hund")])
    config = DataConfig(src_lang="de", tgt_lang="en", path=str(tmp_path))
    if reader == "nmt clean":
        ran = nmt("clean", "--data", tmp_path, "--src-lang", "de", "--tgt-lang", "en",
                  "--out", tmp_path / "out")  # fmt: skip
        assert ran.returncode == 2, ran.stderr
        message = ran.stderr
    else:
        with pytest.raises(UserError) as raised:
            list(read_pairs(config)) if reader == "streamed" else load_train_split(config)
        message = str(raised.value)
    found = re.search(r"line (\d+), byte (\d+) of the line, offset (\d+) in the file", message)
    assert found, message
    line, byte, offset = map(int, found.groups())
    assert data.split(b"\n")[line - 1][byte - 1] == 0xFF and data[offset] == 0xFF, message
