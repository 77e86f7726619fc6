"""The three ways to the training batches (in memory, Arrow cache via datasets.map, stream)
agree: the same batches when the corpus fits in one pool, the same pairs in every epoch
when it does not; the Arrow cache is built once and reused. Sampled segmentations (subword
regularisation) spell the same pairs, differ from draw to draw, and repeat on resume."""

import dataclasses
import shutil
from collections import Counter

import pytest

from conftest import tiny_experiment, write_parallel
from nmt.data import sources as sources_module
from nmt.data.corpus import StreamSource, arrow_source, memory_source, prepare_corpus
from nmt.data.splits import load_split
from nmt.data.tokenizer import build_tokenizer
from nmt.errors import UserError


@pytest.fixture
def config(corpus_dir):
    return tiny_experiment(corpus_dir, "data.max_len=20")


def as_pairs(batches):
    """[(src ids, tgt ids) per pair] per batch, as hashable tuples."""
    return [[(tuple(s), tuple(t)) for s, t in zip(*batch, strict=True)] for batch in batches]


def test_one_pool_gives_the_same_batches_on_all_three_paths(tmp_path, config, tokenizer):
    memory = memory_source({"train": load_split(config.data, "train")}, tokenizer, config)
    two_processes = dataclasses.replace(config.data, num_proc=2)  # datasets.map in 2 processes
    cached = arrow_source(dataclasses.replace(config, data=two_processes), tokenizer, tmp_path)
    stream = StreamSource(config.data, tokenizer, config.train.batch_tokens, config.train.seed)
    for epoch in (0, 1):
        expected = as_pairs(memory.batches(epoch))
        assert as_pairs(cached.batches(epoch)) == expected
        assert as_pairs(stream.batches(epoch)) == expected
        assert as_pairs(stream.batches(epoch, start=5)) == expected[5:]  # resuming mid-epoch
    assert memory.description == cached.description  # max_len 20 drops the same pairs
    assert as_pairs(memory.batches(0)) != as_pairs(memory.batches(1))


def test_many_pools_give_the_same_pairs_per_epoch_under_the_same_budget(config, tokenizer):
    memory = memory_source({"train": load_split(config.data, "train")}, tokenizer, config)
    budget = config.train.batch_tokens
    stream = StreamSource(config.data, tokenizer, budget, config.train.seed, pool_batches=3)
    everything = Counter(pair for batch in as_pairs(memory.batches(0)) for pair in batch)
    for epoch in (0, 1):
        batches = as_pairs(stream.batches(epoch))
        assert Counter(pair for batch in batches for pair in batch) == everything
        for batch in batches:  # TokenBatcher's rule: padded target tokens within the budget
            assert len(batch) == 1 or max(len(t) + 1 for _, t in batch) * len(batch) <= budget
        assert as_pairs(stream.batches(epoch)) == batches  # a pure function of (seed, epoch)
    assert as_pairs(stream.batches(0)) != as_pairs(stream.batches(1))


def test_the_arrow_cache_is_reused_and_rebuilt_when_the_corpus_changes(
    tmp_path, config, tokenizer, monkeypatch
):
    arrow_source(config, tokenizer, tmp_path)
    built = list(tmp_path.glob("train-*"))
    assert len(built) == 1 and not list(tmp_path.glob(".train-*"))  # no temporary left

    def no_rebuild(*args):
        raise AssertionError("rebuilt")

    with monkeypatch.context() as patch:
        patch.setattr(sources_module, "_build_arrow_cache", no_rebuild)
        arrow_source(config, tokenizer, tmp_path)
    corpus = tmp_path / "corpus"
    write_parallel(corpus, "train", [("a dog.", "ein Hund."), ("the cat.", "die Katze.")])
    changed = tiny_experiment(corpus)
    assert arrow_source(changed, tokenizer, tmp_path).description == "2 training pairs"
    assert len(list(tmp_path.glob("train-*"))) == 2
    reversed_ = tiny_experiment(corpus, "data.src_lang=de", "data.tgt_lang=en")  # other sides
    arrow_source(reversed_, tokenizer, tmp_path)
    assert len(list(tmp_path.glob("train-*"))) == 3
    (corpus / "train.de").write_text("ein Hund.\n", "utf-8")  # one line short of train.en
    with pytest.raises(UserError, match="parallel files differ in length"):
        arrow_source(reversed_, tokenizer, tmp_path / "again")  # the reading's own error


@pytest.mark.parametrize("subwords", ["bpe", "unigram"])
def test_sampled_segmentations_spell_the_same_pairs_and_repeat_on_resume(
    tmp_path, corpus_dir, subwords
):
    config = tiny_experiment(
        corpus_dir, "data.max_len=20", f"tokenizer.type={subwords}", "tokenizer.sample_alpha=0.3"
    )
    text = load_split(config.data, "train")
    tokenizer = build_tokenizer(config.tokenizer, text.src, text.tgt, tmp_path)
    best_only = dataclasses.replace(config.tokenizer, sample_alpha=None)
    plain = memory_source(
        {"train": text}, tokenizer, dataclasses.replace(config, tokenizer=best_only)
    )
    sampled = memory_source({"train": text}, tokenizer, config)
    drawn = as_pairs(sampled.batches(0))
    assert drawn == as_pairs(sampled.batches(0))  # a pure function of (seed, epoch)
    assert as_pairs(sampled.batches(0, start=5)) == drawn[5:]  # resuming mid-epoch
    assert drawn != as_pairs(sampled.batches(1))

    def spelt(batches):
        return Counter(
            (tokenizer.src.decode(s), tokenizer.tgt.decode(t))
            for batch in batches
            for s, t in batch
        )

    best = as_pairs(plain.batches(0))
    assert spelt(drawn) == spelt(best)  # every pair once, in other pieces
    budget = config.train.batch_tokens
    for batch in drawn:  # cut on the sampled lengths: within the budget
        assert len(batch) == 1 or max(len(t) + 1 for _, t in batch) * len(batch) <= budget
        assert all(len(s) <= 20 and len(t) <= 20 for s, t in batch)
    pieces = Counter(pair for batch in drawn for pair in batch)
    resegmented = pieces - Counter(pair for batch in best for pair in batch)
    assert len(resegmented) > 0.1 * len(text.src)  # about 0.2 of these short pairs


def test_a_tokenizer_that_cannot_read_a_language_is_named_in_a_warning(
    tmp_path, corpus_dir, tokenizer, caplog
):
    """A tokenizer trained without a language's characters (a parent of train.init_from
    trained on other languages) turns its text into <unk>: the run says so, naming it."""
    prepare_corpus(tiny_experiment(corpus_dir), tmp_path / "run", tokenizer)
    assert "<unk>" not in caplog.text
    greek = tmp_path / "greek"
    shutil.copytree(corpus_dir, greek)
    latin, letters = "abcdefghiklmnoprstuvxyz", "αβψδεφγηικλμνοπρστυωχυζ"
    english = (corpus_dir / "valid.en").read_text("utf-8")
    (greek / "valid.en").write_text(english.translate(str.maketrans(latin, letters)), "utf-8")
    prepare_corpus(tiny_experiment(greek), tmp_path / "run", tokenizer)
    (warning,) = [
        record.getMessage() for record in caplog.records if "<unk>" in record.getMessage()
    ]
    assert "of the pieces of the en valid text as <unk>" in warning
    assert float(warning.split("reads ")[1].split("%")[0]) > 30


def test_several_sources_into_one_target_with_a_vocabulary_per_side(tmp_path, corpus_dir):
    """[en-de, fr-de] without a joint tokenizer: the source vocabulary learns both source
    languages, the target one German alone (SentencePiece was handed nothing to learn the
    target from, and crashed)."""
    corpus = tmp_path / "two_sources"
    shutil.copytree(corpus_dir, corpus)
    for split in ("train", "valid", "test"):  # a "French" of its own letters: é and ç
        english = (corpus / f"{split}.en").read_text("utf-8")
        (corpus / f"{split}.fr").write_text(english.replace("e", "é").replace("c", "ç"), "utf-8")
    config = tiny_experiment(
        corpus,
        "data.directions=[en-de,fr-de]",
        "tokenizer.joint=false",
        "model.share_embeddings=false",
    )
    built = prepare_corpus(config, tmp_path / "run").tokenizer
    assert not built.joint
    for line in ("the small dog sees a bird.", "thé small dog séés a bird."):
        assert built.src.unk_id not in built.src.encode([line])[0]
    german = (corpus / "valid.de").read_text("utf-8").splitlines()
    assert built.tgt.unk_id not in {i for ids in built.tgt.encode(german) for i in ids}
    assert not any("é" in piece for piece in built.tgt.pieces(range(built.tgt.size)))


def test_extra_train_pairs_join_the_batches(tmp_path, corpus_dir):
    more = tmp_path / "more"
    write_parallel(more, "train", [("a purple cat sleeps.", "eine lila katze schlaeft.")] * 3)
    config = tiny_experiment(corpus_dir, f"data.extra_train=[{more}]")
    corpus = prepare_corpus(config, tmp_path / "run")
    assert corpus.train.description == "303 training pairs"
    tokenizer = corpus.tokenizer
    seen = Counter(
        (tokenizer.src.decode(src), tokenizer.tgt.decode(tgt))
        for batch in corpus.train.batches(0)
        for src, tgt in zip(*batch, strict=True)
    )
    assert seen[("a purple cat sleeps.", "eine lila katze schlaeft.")] == 3
    assert sum(seen.values()) == 303
