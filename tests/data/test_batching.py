import logging

import pytest

from nmt.data.batching import TokenBatcher, encode_split, make_batch
from nmt.data.splits import ParallelText
from nmt.data.tokenizer import Tokenizer, Vocab
from nmt.errors import UserError


def test_filtering_drops_empty_and_long_pairs_and_counts_each(tokenizer, caplog):
    src = ["the dog", "", "the cat " * 40, "a bird", "the cat"]
    tgt = ["der Hund", "x", "die Katze", "", "die Katze " * 40]
    with caplog.at_level(logging.INFO):
        encoded = encode_split(ParallelText(src, tgt, "t"), tokenizer, max_len=30)
    assert encoded.keep == [0]
    assert encoded.src == [tokenizer.src.encode(["the dog"])[0]]
    assert "t: 1 pairs kept, 2 empty dropped, 2 longer than data.max_len=30 dropped" in caplog.text
    with pytest.raises(UserError, match=r"no training pairs left \(1 empty, 0 longer"):
        encode_split(ParallelText([""], ["x"], "t"), tokenizer, max_len=30)


def test_a_language_tag_before_the_target_neither_fills_an_empty_one_nor_counts(tokenizer):
    """data.tags: decoder_bos writes the tag before each target: an empty target is still
    empty (dropped, as under source tags), and max_len counts the target's own subwords."""
    tagged = Vocab(tokenizer.src.model_proto, ["de", "en"])
    towards = Tokenizer(tagged, tagged, None, "decoder_bos").towards("de")
    length = len(tagged.encode(["the cat the cat"])[0])
    text = ParallelText(["the dog", "a bird", "the cat"], ["", "der Hund", "the cat the cat"], "t")
    assert encode_split(text, towards, max_len=length).keep == [1, 2]


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
