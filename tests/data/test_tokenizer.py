import subprocess
import sys

import pytest
import sentencepiece as spm

from nmt.config import TokenizerConfig
from nmt.data.tokenizer import (
    VOCABULARY_KEYS,
    Tokenizer,
    Vocab,
    build_tokenizer,
    with_vocabularies,
    without_vocabularies,
)
from nmt.errors import UserError


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


def test_a_vocabulary_smaller_than_the_corpus_characters_is_named(tmp_path):
    """800 distinct characters, each to be covered, do not fit in 50 pieces."""
    lines = ["".join(chr(0x4E00 + i + 40 * row) for i in range(40)) for row in range(20)]
    config = TokenizerConfig(vocab_size=50, character_coverage=1.0)
    with pytest.raises(UserError, match="tokenizer.vocab_size=50 .*Raise tokenizer.vocab_size"):
        build_tokenizer(config, lines, lines, tmp_path)


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


SAMPLE_IN_A_NEW_PROCESS = """
import sys
from pathlib import Path
from nmt.data.tokenizer import Vocab
model, corpus = Path(sys.argv[1]), Path(sys.argv[2])
print(Vocab(model.read_bytes()).sample(corpus.read_text().splitlines(), 0.3, seed=11))
"""


@pytest.mark.parametrize("subwords", ["bpe", "unigram"])
def test_a_seeded_sample_is_the_same_in_another_process(corpus_dir, tmp_path, subwords):
    """What exact resume with tokenizer.sample_alpha rests on: a restarted run draws the
    segmentations of its epoch again from the seed alone."""
    corpus = corpus_dir / "train.en"
    lines = corpus.read_text().splitlines()
    vocab = build_tokenizer(
        TokenizerConfig(type=subwords, vocab_size=150), lines, lines, tmp_path
    ).src
    model = tmp_path / "spm.model"
    model.write_bytes(vocab.model_proto)
    here = vocab.sample(lines, 0.3, seed=11)
    assert here != vocab.encode(lines)  # it samples
    assert here != vocab.sample(lines, 0.3, seed=12)
    for _ in range(2):
        run = subprocess.run(
            [sys.executable, "-c", SAMPLE_IN_A_NEW_PROCESS, str(model), str(corpus)],
            capture_output=True,
            text=True,
            check=True,
        )
        assert run.stdout.strip() == str(here)


def test_a_blank_line_stays_empty_where_a_tag_or_eos_frames_the_others(tokenizer):
    """A tagged source (data.tags: source) and a Marian source (ending with eos) of a blank
    line are empty, so translation answers it with a blank line, as for any other model."""
    tagged = Vocab(tokenizer.src.model_proto, ["de", "en"]).towards("de")
    ending = Vocab(tokenizer.src.model_proto, (), None, ends_with_eos=True)
    for vocab in (tagged, ending):
        blank, word = vocab.encode(["", "the dog"])
        assert blank == [] and len(word) > 2
    assert tagged.encode(["the dog"])[0][0] == tagged.tags["de"]
    assert ending.encode(["the dog"])[0][-1] == ending.eos_id


def test_a_state_left_without_its_vocabularies_is_whole_again_with_its_bases(tokenizer):
    """An adapter checkpoint keeps what its run recorded (target pieces, the tag's place)
    and takes the SentencePiece models from its base, which records its own of the rest."""
    tagged = Vocab(tokenizer.src.model_proto, ["de", "en"])
    child = Tokenizer(tagged, tagged, {"de": [0, 2, 5], "en": [1, 1, 1]}, "decoder_bos")
    base = Tokenizer(tagged, tagged, {"de": [9, 9, 9], "en": [0, 0, 0]})
    borrowed = without_vocabularies(child.to_state())
    assert not VOCABULARY_KEYS & set(borrowed)
    assert borrowed["target_pieces"] == child.target_pieces
    assert with_vocabularies(borrowed, base.to_state()) == child.to_state()
    separate = Tokenizer(tokenizer.src, Vocab(tokenizer.tgt.model_proto))
    whole = separate.to_state()
    assert with_vocabularies(without_vocabularies(whole), whole) == whole
    assert with_vocabularies(whole, base.to_state()) == whole  # a state of its own stays
