import sentencepiece as spm

from nmt.config import TokenizerConfig
from nmt.data.tokenizer import Tokenizer, Vocab, build_tokenizer


def test_round_trip(tokenizer):
    line = "der kleine Hund sieht die Katze."
    assert tokenizer.tgt.decode(tokenizer.tgt.encode([line])[0]) == line


def test_specials_are_distinct_and_inside_vocab(tokenizer):
    vocab = tokenizer.src
    ids = {vocab.pad_id, vocab.bos_id, vocab.eos_id, vocab.processor.unk_id()}
    assert len(ids) == 4 and max(ids) < vocab.size


def test_trained_model_is_reused(corpus_dir, tmp_path):
    lines = (corpus_dir / "train.en").read_text().splitlines()
    config = TokenizerConfig(vocab_size=150)
    first = build_tokenizer(config, lines, lines, tmp_path)
    assert len(list((tmp_path / "spm").iterdir())) == 1
    second = build_tokenizer(config, lines, lines, tmp_path)
    assert first.src.model_proto == second.src.model_proto


def test_separate_vocabularies(corpus_dir, tmp_path):
    en = (corpus_dir / "train.en").read_text().splitlines()
    de = (corpus_dir / "train.de").read_text().splitlines()
    tokenizer = build_tokenizer(TokenizerConfig(vocab_size=150, joint=False), en, de, tmp_path)
    assert not tokenizer.joint
    assert tokenizer.src.model_proto != tokenizer.tgt.model_proto
    restored = Tokenizer.from_state(tokenizer.to_state())
    assert restored.tgt.encode(["der Hund"]) == tokenizer.tgt.encode(["der Hund"])


def test_existing_model_without_pad_gets_appended_ids(corpus_dir, tmp_path):
    prefix = tmp_path / "plain"
    spm.SentencePieceTrainer.train(
        input=str(corpus_dir / "train.en"), model_prefix=str(prefix), vocab_size=100, minloglevel=2
    )  # unk 0, bos 1, eos 2, no pad
    tokenizer = build_tokenizer(TokenizerConfig(model=f"{prefix}.model"), [], [], tmp_path)
    vocab: Vocab = tokenizer.src
    assert (vocab.bos_id, vocab.eos_id) == (1, 2)
    assert vocab.pad_id == 100 and vocab.size == 101
    assert vocab.decode([vocab.bos_id, *vocab.encode(["the dog"])[0], vocab.pad_id]) == "the dog"
