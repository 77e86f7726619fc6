import json

import pytest

from nmt.config import DataConfig, Splits
from nmt.data import TokenBatcher, encode_split, load_split, make_batch, read_lines
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


def test_invalid_utf8_names_line_and_offset(tmp_path):
    (tmp_path / "f").write_bytes(b"ok\nbad \xff here\n")
    with pytest.raises(UserError, match=r"line 2, byte offset 7"):
        read_lines(tmp_path / "f")


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


def test_filtering_counts_empty_and_long(tokenizer):
    from nmt.data import ParallelText

    text = ParallelText(["the dog", "", "the cat " * 40], ["der Hund", "x", "die Katze"], "t")
    encoded = encode_split(text, tokenizer, max_len=30)
    assert encoded.keep == [0]
    with pytest.raises(UserError, match="no training pairs left"):
        encode_split(ParallelText([""], ["x"], "t"), tokenizer, max_len=30)


def test_batches_respect_budget_and_cover_every_pair_once():
    src = [3, 10, 7, 2, 9, 4, 8, 1, 5, 6] * 20
    tgt = [4, 9, 6, 3, 8, 5, 7, 2, 6, 5] * 20
    batcher = TokenBatcher(src, tgt, batch_tokens=40, seed=1, pool_batches=4)
    batches = batcher.epoch(0)
    assert sorted(i for b in batches for i in b) == list(range(200))
    for batch in batches:
        assert max(tgt[i] + 1 for i in batch) * len(batch) <= 40
    assert batcher.epoch(0) == batches
    assert batcher.epoch(1) != batches


def test_make_batch_shifts_target(tokenizer):
    vocab = tokenizer.tgt
    batch = make_batch([[5, 6, 7], [8]], [[9, 10], [11, 12, 13]], vocab, tokenizer.src.pad_id)
    assert batch.tgt_in[0].tolist() == [vocab.bos_id, 9, 10, vocab.pad_id]
    assert batch.tgt_out[0].tolist() == [9, 10, vocab.eos_id, vocab.pad_id]
    assert batch.src_lengths.tolist() == [3, 1]
    assert batch.num_tgt_tokens == 7
